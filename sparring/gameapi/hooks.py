"""What a game tells the layers above it, declared once in its folder (`Game.hooks`).

The clemscore, training-loop reports, the web app's play page, the human-data exporter and the
tool-calling training environments read these instead of keeping per-game tables, so a game
written as one folder (even in another installed package) is scored, reported, playable by a
person or through tools, and exportable with no edit to sparring. Everything here is plain data or a pure function over plain data: a game never
imports the layers that call its hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Metrics = Mapping[str, Any]  # an episode's `Outcome.metrics`


@dataclass(frozen=True)
class Metric:
    """One headline metric of a game: its name, which way is better and how its interval is made.

    `value` turns one episode's outcome metrics into a number (None = the episode does not count);
    by default `metrics[name]` (a bool counts as 0/1). `aggregate`, when given, computes the group
    value from every episode's metrics at once (a ratio of sums, say); it then has no interval.
    `interval`: "wilson" for a share of episodes (values 0/1), "bootstrap" for a mean, "none".
    """

    name: str
    direction: Literal["higher", "lower"] = "higher"
    interval: Literal["wilson", "bootstrap", "none"] = "bootstrap"
    description: str = ""
    value: Callable[[Metrics], float | None] | None = None
    aggregate: Callable[[list[Metrics]], float | None] | None = None

    def of(self, metrics: Metrics) -> float | None:
        """This metric's value for one episode."""
        if self.value is not None:
            return self.value(metrics)
        v = metrics.get(self.name)
        return float(v) if isinstance(v, (bool, int, float)) else None


@dataclass(frozen=True)
class PanelContext:
    """What a play panel's functions may look at: the instance, the person's seat, whether the
    episode plays the mirrored variant, and the game's config (`game_args`)."""

    instance: Any
    player: str
    flip: bool
    game_config: Any


@dataclass(frozen=True)
class PlayPanel:
    """How a person plays the game in the web app.

    `roles`: the roles a person can take, the default first. For turns whose action tag is in
    `move_tags`, the page shows the game's own form (`move_form`, a Jinja2 template in the game
    folder's `templates/`, given `turn`, `form`, `values`, `csrf`, `game`) and `parse_move` turns
    the posted fields into the action text (raise ValueError with a message for a bad answer);
    other turns get a text box, verdicts a probability slider. `private_view` lists what only the
    person sees (rows of a small table, e.g. their own item values). `hints`: a line per action
    tag shown above the text box. `rules_first`: show the system prompt open above the transcript.
    """

    roles: tuple[str, ...]
    move_tags: frozenset[str] = frozenset()
    move_form: str | None = None
    parse_move: Callable[[dict[str, str], PanelContext], str] | None = None
    private_view: Callable[[PanelContext], list[dict[str, Any]]] | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    rules_first: bool = False


@dataclass
class ReplayPlan:
    """Human games replayed through the game: an experiment (the dict `sparring run` reads), the
    models that play the recorded moves, by name, and the instance ids to keep (None = all)."""

    config: dict[str, Any]
    models: dict[str, Any]
    keep: set[str] | None = None


@dataclass(frozen=True)
class HumanReplay:
    """A source of human games (`sparring export sft --human NAME`): `plan(path, split, limit,
    rounds)` builds the replay; rows of `role` are exported unless a filter says otherwise."""

    name: str
    role: str
    plan: Callable[[Path, str, int | None, int], ReplayPlan]
    description: str = ""


@dataclass(frozen=True)
class ToolArg:
    """One argument of a move tool: its name, its type (str, int, float or bool) and what it means
    (the text a model reads in the tool's schema)."""

    name: str
    type: type = str
    description: str = ""


@dataclass(frozen=True)
class MoveTool:
    """One kind of move as a typed function call, for training engines where the model acts by
    calling tools (TRL's `environment_factory`): `name(**args)` plays the reply `text(args, ctx)`,
    the text the game reads (a Deal or No Deal `propose(books, hats, balls)` is `[propose] (...)`).
    The game still validates it: an invalid move is corrected as any reply is. `text` may raise
    ValueError with a message for arguments it cannot turn into a move (the model is told, nothing
    is played). `roles`: the roles that have this tool (empty: every role). `parse`: the inverse of
    `text`, the arguments of the call that plays a written reply (None: the reply is not this tool's
    move), which turns recorded games into tool-call demonstrations for a warm start."""

    name: str
    description: str
    args: tuple[ToolArg, ...]
    text: Callable[[Mapping[str, Any], PanelContext], str]
    roles: frozenset[str] = frozenset()
    parse: Callable[[str, PanelContext], Mapping[str, Any] | None] | None = None


TOOL_TYPES = (str, int, float, bool)
RESERVED_TOOL_NAMES = frozenset({"reset", "get_reward"})  # the environment's own methods in TRL


@dataclass(frozen=True)
class GameHooks:
    """Everything the layers above the games need to know about one game.

    `quality`: the episode quality 0-100 for the clemscore from `Outcome.metrics` (None = not
    scorable); a game whose outcomes carry `quality_score` needs none. `metrics`: headline
    metrics for loop reports and plots. `play`: the human play panel (None = not playable in the
    browser). `human_data`: human-data sources for SFT export. `tools`: the moves as typed tools
    (a role without any gets one free-text tool). `behaviour`: one player's behaviour numbers in one
    episode from `Outcome.metrics` (debate: valid quotes per speech), for the training loop's greedy
    check, where a trained policy's habits are read before its held-out games. `tool_args`: the
    `game_args` under which every prompt of the game asks for its moves as calls of `tools` (its
    prompt set's tool wording, no text-format rules), which engines that act by tool calls (TRL's
    `environment_factory`) play with; empty: the game has no tool wording.
    """

    quality: Callable[[Metrics], float | None] | None = None
    metrics: tuple[Metric, ...] = ()
    play: PlayPanel | None = None
    human_data: tuple[HumanReplay, ...] = ()
    tools: tuple[MoveTool, ...] = ()
    behaviour: Callable[[Metrics, str], dict[str, float | None]] | None = None
    tool_args: Mapping[str, Any] = field(default_factory=dict)


def check_hooks(hooks: Any, where: str) -> list[str]:
    """Problems of a game's `hooks` (empty when fine); `where` names the plug-in in messages."""
    if not isinstance(hooks, GameHooks):
        return [f"{where}.hooks must be a GameHooks, got {type(hooks).__name__}"]
    errors = []
    if hooks.quality is not None and not callable(hooks.quality):
        errors.append(f"{where}.hooks.quality must be a function of the outcome metrics")
    if hooks.behaviour is not None and not callable(hooks.behaviour):
        errors.append(f"{where}.hooks.behaviour must be a function of the outcome metrics and a player")
    for m in hooks.metrics:
        if not isinstance(m, Metric):
            errors.append(f"{where}.hooks.metrics: {m!r} is not a Metric")
    if hooks.play is not None:
        if not isinstance(hooks.play, PlayPanel) or not hooks.play.roles:
            errors.append(f"{where}.hooks.play must be a PlayPanel with at least one role")
        elif hooks.play.move_tags and (hooks.play.move_form is None or hooks.play.parse_move is None):
            errors.append(f"{where}.hooks.play: move_tags need both move_form and parse_move")
    for h in hooks.human_data:
        if not isinstance(h, HumanReplay):
            errors.append(f"{where}.hooks.human_data: {h!r} is not a HumanReplay")
    if not isinstance(hooks.tool_args, Mapping) or (hooks.tool_args and not hooks.tools):
        errors.append(f"{where}.hooks.tool_args must be a mapping of game_args, given only with tools")
    return errors + _check_tools(hooks.tools, where)


def _check_tools(tools: Any, where: str) -> list[str]:
    """Move tools become methods of generated classes: names must be identifiers, not private, not
    the environment's own methods, unique per role; arguments typed with a JSON-schema type."""
    errors: list[str] = []
    seen: list[MoveTool] = []
    for t in tools:
        if not isinstance(t, MoveTool):
            errors.append(f"{where}.hooks.tools: {t!r} is not a MoveTool")
            continue
        if not t.name.isidentifier() or t.name.startswith("_") or t.name in RESERVED_TOOL_NAMES:
            errors.append(f"{where}.hooks.tools: {t.name!r} cannot be a tool name (an identifier, not private, "
                          f"not {' or '.join(sorted(RESERVED_TOOL_NAMES))})")
        if any(o.name == t.name and (not o.roles or not t.roles or o.roles & t.roles) for o in seen):
            errors.append(f"{where}.hooks.tools: two tools named {t.name!r} for the same role")
        seen.append(t)
        for a in t.args:
            if not (isinstance(a, ToolArg) and a.name.isidentifier() and a.type in TOOL_TYPES and a.name != "self"):
                errors.append(f"{where}.hooks.tools: {t.name}: argument {a!r} must be a ToolArg with an identifier "
                              "name and a type among str, int, float, bool")
    return errors
