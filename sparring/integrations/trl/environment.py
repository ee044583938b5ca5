"""TRL `GRPOTrainer(environment_factory=...)` classes for games with one learner.

`environment_class(experiment, learner)` makes a class for any experiment of any registered game:
`reset(**row)` starts an episode with the learner in the row's seat (every other seat played by its
agent's own model: a scripted partner, a served model, a fixed judge) and returns the learner's
first view; each move of the learner's role is a public, typed, documented method (the game's
`hooks.tools`: Deal or No Deal's `say` / `propose`, Taboo's `clue` / `guess`, ...; a role without
declared tools gets one free-text `respond`), which TRL exposes as a tool: it plays the move and
returns what happens until the learner's next turn; `get_reward()` ends the episode and returns the
learner's reward as the engine scores it. The episode is played by the engine's play API, so the
rules, re-prompts of invalid moves, partners and outcome are exactly those of `sparring run`.

    Env = environment_class(experiment, learner="learner", split="train")
    trainer = GRPOTrainer(model=..., environment_factory=Env, train_dataset=Env.dataset(), args=GRPOConfig(...))

TRL calls the tools of a rollout one at a time, so each episode's partners answer in turn (they are
not batched across rollouts as in sparring's own GRPO trainer).
"""

from __future__ import annotations

import inspect
import itertools
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sparring.errors import ConfigError, SparringError
from sparring.gameapi.hooks import MoveTool, PanelContext, ToolArg
from sparring.integrations.rewards import seat_rewards
from sparring.integrations.seats import (
    SEAT_MODEL,
    SeatRouter,
    camel,
    experiment_data,
    hold_seats,
    resolve_experiment,
    with_split,
)
from sparring.integrations.trl.relay import DEFAULT_WAIT_S, Episode, news, render
from sparring.models.base import Model

RESPOND = MoveTool("respond", "Reply to the game with your next move, written as it asks for it.",
                   (ToolArg("text", str, "your reply"),), lambda args, ctx: str(args["text"]))
OVER = "The game is over."


class _Game:
    """What every environment of one class shares: the arena (built on first use), the learner's
    agent and role, its tools, and a counter that gives each episode its own id."""

    def __init__(self, data: dict[str, Any], path: Path, learner: str, models: Mapping[str, Model],
                 format_penalty: float, wait_s: float):
        self.data, self.path, self.learner = data, path, learner
        self.models, self.format_penalty, self.wait_s = dict(models), format_penalty, wait_s
        exp = resolve_experiment(data, path, self.models)
        if learner not in exp.participants:
            raise ConfigError(f"the learner {learner!r} is not a competing participant of {exp.name!r} "
                              f"(participants: {', '.join(exp.participants)})", file=str(path), key="agents")
        self.others = [a for a in exp.participants if a != learner]
        if len(exp.seat_players) > 1 and not self.others:
            raise ConfigError(f"{exp.name!r}: every seat but the learner's needs a fixed agent; add a partner to the "
                              "tournament's participants", file=str(path), key="tournament.participants")
        self.name, self.game, self.role = exp.name, exp.game, exp.agent_configs[learner].role
        self.seat_players = list(exp.seat_players)
        self.tools = [t for t in exp.game.hooks.tools if not t.roles or self.role in t.roles] or [RESPOND]
        self.router = SeatRouter(SEAT_MODEL)
        self._arena: Any = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def arena(self) -> Any:
        """The experiment's arena (its instances loaded on first use), the learner's seat held."""
        with self._lock:
            if self._arena is None:
                from sparring.engine.play import Arena

                self._arena = Arena.from_config(self.data, models={**self.models, SEAT_MODEL: self.router},
                                                base_dir=self.path.parent)
            return self._arena

    def seating(self, seat: int) -> tuple[str, ...]:
        """The agents of one episode: the learner in `seat`, the other participants elsewhere."""
        if not 0 <= seat < len(self.seat_players):
            raise SparringError(f"seat {seat} does not exist: {self.name!r} has seats 0 to {len(self.seat_players) - 1}")
        others = itertools.cycle(self.others or [self.learner])
        return tuple(self.learner if i == seat else next(others) for i in range(len(self.seat_players)))


class GameEnvironment:
    """Base of the generated classes: `reset`, `get_reward` and the move tools (made per game).
    Every other public function of a class is a tool to TRL, so the helpers here are private."""

    _game: ClassVar[_Game]

    def __init__(self) -> None:
        self._episode: Episode | None = None
        self._player = ""
        self._job: Any = None

    @classmethod
    def dataset(cls, seats: list[int] | None = None) -> Any:
        """A `datasets.Dataset` to train on: one row per instance and learner seat (default: every
        seat), each with its seed; TRL passes a row's columns to `reset`."""
        import datasets

        from sparring.engine.schedule import derive_seed

        g = cls._game
        arena = g.arena()
        seat_list = seats if seats is not None else list(range(len(g.seat_players)))
        rows = [{"prompt": [{"role": "user", "content": ""}], "instance_id": i, "seat": s,
                 "seed": derive_seed(arena.exp.config.run.seed, "trl", i, s)}
                for i in arena.instances for s in seat_list]
        return datasets.Dataset.from_list(rows)

    def reset(self, instance_id: str, seat: int = 0, seed: int = 0, **row: Any) -> str:
        """Start an episode on `instance_id` with the learner in `seat`; its first view."""
        self._close("a new episode started")
        g = self._game
        arena = g.arena()
        job = arena.job(instance_id, g.seating(int(seat)), seed=int(seed), repeat=next(g._ids))
        self._job, self._player = job, g.seat_players[int(seat)]

        def play(answer: Any) -> Any:
            g.router.hold(job.id, {self._player: answer})
            try:
                (record,) = arena.play([job], max_live=1)
            finally:
                g.router.release(job.id)
            return record

        self._episode = Episode(play, g.wait_s)
        self._episode.start()
        request = self._episode.next_view()
        return OVER if request is None else render(list(request.messages))

    def get_reward(self) -> float:
        """The learner's reward: the game's reward for its seat (minus the format penalty per
        rejected move); a game left unfinished scores what its state is worth (no deal, no
        verdict: usually 0)."""
        record = self._close("the learner stopped making moves")
        if record is None:
            return 0.0
        return sum(seat_rewards(record, self._player, self._game.format_penalty).values())

    @property
    def record(self) -> Any:
        """The last finished episode's record (None while one is running)."""
        ep = self._episode
        return ep.record if ep is not None and ep.done else None

    def _close(self, reason: str) -> Any:
        ep = self._episode
        return None if ep is None else ep.finish(reason)

    def _context(self) -> PanelContext:
        """What a tool's `text` and `parse` read of the running episode: its instance, the learner's
        player, the seating and the game's config (private: TRL makes every public method a tool)."""
        g = self._game
        return PanelContext(instance=g.arena().instances[self._job.instance_id], player=self._player,
                            flip=self._job.flip, game_config=g.game.config)

    def _move(self, tool: MoveTool, args: dict[str, Any]) -> str:
        ep = self._episode
        if ep is None:
            return "No game is running."
        if ep.pending is None:
            return OVER
        try:
            text = tool.text(args, self._context())
        except (ValueError, TypeError) as e:
            return f"Invalid move, nothing was played: {e}"
        before = list(ep.pending.messages)
        ep.submit(text)
        request = ep.next_view()
        return OVER if request is None else news(before, list(request.messages)) or "(no news)"


def tool_method(tool: MoveTool) -> Any:
    """`tool` as a method TRL can read: typed parameters and a Google-style docstring."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=a.type) for a in tool.args]
    signature = inspect.Signature(params, return_annotation=str)

    def method(self: GameEnvironment, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        return self._move(tool, {k: v for k, v in bound.arguments.items() if k != "self"})

    lines = [tool.description, "", "Args:"]
    lines += [f"    {a.name}: {a.description or a.name}" for a in tool.args]
    lines += ["", "Returns:", "    What happens next: the other players' moves, the game's feedback, or its end."]
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = {**{a.name: a.type for a in tool.args}, "return": str}
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


def with_tool_wording(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with its game's `hooks.tool_args` over its `game_args` (a game the registry does not
    know is left to the resolver, which names it)."""
    from sparring.gameapi import GAMES

    out = dict(data)
    name = out.get("game")
    if isinstance(name, str) and name in GAMES:
        args = GAMES.get(name).hooks.tool_args
        if args:
            out["game_args"] = {**dict(out.get("game_args") or {}), **args}
    return out


def environment_class(experiment: str | Path | Mapping[str, Any], learner: str, *, split: str | None = None,
                      limit: int | None = None, models: Mapping[str, Model] | None = None,
                      format_penalty: float = 0.0, wait_s: float = DEFAULT_WAIT_S,
                      tool_wording: bool = True) -> type[GameEnvironment]:
    """A TRL environment class for `experiment` (a shipped name, a YAML file or a dict) in which
    agent `learner` is trained through tool calls, on the instances of `split` (default the
    experiment's dataset split; train for training) and at most `limit` of them; `models`:
    ready-made models for the other agents' model names (e.g. a scripted partner). With
    `tool_wording` the game plays under its `hooks.tool_args`: its prompts ask for tool calls
    instead of a text format (Deal or No Deal, Wordle); a game without them keeps its text wording."""
    data, path = experiment_data(experiment)
    data = with_split(hold_seats(data, [learner], where=str(path)), split, limit)
    if tool_wording:
        data = with_tool_wording(data)
    game = _Game(data, path, learner, models or {}, format_penalty, wait_s)
    name = f"{camel(game.game.name)}Environment"

    def body(ns: dict[str, Any]) -> None:
        ns.update({"_game": game, "__module__": __name__, "__doc__": f"{game.game.name} ({game.name}): the learner {learner!r} plays "
                                             f"{game.role} through tools {', '.join(t.name for t in game.tools)}."})
        ns.update({t.name: tool_method(t) for t in game.tools})

    return types.new_class(name, (GameEnvironment,), exec_body=body)
