"""The Game interface: rules only — state, turn order, visibility, validation, outcome.

A game never calls a model. The engine asks it who acts (`to_act`), what that player may see
(`observation`), what kind of action is expected (`action_spec`), and applies actions (`act`).
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from sparring.errors import SparringError
from sparring.gameapi.hooks import GameHooks, check_hooks
from sparring.prompts import PromptSet
from sparring.registry import Registry
from sparring.types import Message, Strict


def _check_game(cls: Any) -> list[str]:
    """Why `cls` is not a playable game (empty when it is): a Game subclass with every abstract
    method implemented and typed hooks."""
    if not (isinstance(cls, type) and issubclass(cls, Game)):
        return [f"{cls!r} is not a subclass of sparring's Game"]
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    errors = [f"missing method(s) {', '.join(missing)}"] if missing else []
    if not (isinstance(cls.InstanceType, type) and issubclass(cls.InstanceType, Instance)):
        errors.append("InstanceType must be a subclass of Instance")
    return errors + check_hooks(cls.hooks, cls.__qualname__)


GAMES: Registry[type[Game]] = Registry(
    "game", scan=["sparring.games"], marker="@register_game(", entry_points="sparring.games", check=_check_game
)


def register_game(*names: str):
    """Class decorator: `@register_game("debate")`."""
    return GAMES.register(*names)


class DatasetConfig(Strict):
    """Where instances (questions, negotiation scenarios) come from; resolved per game."""

    name: str = Field(description="instance source registered for the game (e.g. generated, quality)")
    split: str | None = Field(None, description="train / val / test (source default when omitted)")
    limit: int | None = Field(None, ge=1, description="load at most this many instances")
    seed: int | None = Field(None, description="source seed (shuffling / generation); None = source default")
    args: dict[str, Any] = Field(default_factory=dict, description="source-specific arguments (strict)")


class GameCannotFork(SparringError):
    """Raised by `Game.fork` for games whose state cannot be copied (environment-backed)."""


class Instance(BaseModel):
    """One playable item (a question with its story, a negotiation scenario). Games subclass it."""

    model_config = ConfigDict(extra="forbid")
    id: str


class Seat(BaseModel):
    """Who sits at a player slot: the agent's name and the prompt set the game renders for it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    player: str
    agent: str
    prompts: PromptSet
    # False when the seated agent never plans before acting: games may skip rendering the
    # scratchpad instruction of its ActionSpecs.
    scratchpad: bool = True


class ActionSpec(Strict):
    """What the acting player must produce.

    kind "text": free text (a speech, a message, a question). kind "choice": a probability
    distribution over `options` (a verdict); agents get it from `Model.score` or, when the
    backend cannot score, by generating after `fallback_instruction` and parsing "OPTION | NN%".
    """

    model_config = ConfigDict(extra="forbid", frozen=True)  # games may hand out one spec many times
    kind: Literal["text", "choice"]
    tag: str
    options: list[str] = Field(default_factory=list)
    # Continuations actually scored for each option (same order), e.g. ["A", "B"] after the
    # prefix "Answer: " — short strings that differ in their first token so API backends that
    # only expose top-k logprobs can score them too. Default: `options` themselves.
    score_options: list[str] | None = None
    assistant_prefix: str = ""
    fallback_instruction: str | None = None
    # Rendered instruction for an optional private planning step before acting (agents with a
    # scratchpad append it to the observation); None = the game offers no scratchpad here.
    scratchpad_instruction: str | None = None


class Action(Strict):
    text: str | None = None
    probs: dict[str, float] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Feedback(Strict):
    """Result of `act`: accepted, or a correction shown only to the actor (who retries), or abort.
    `reward`: what this action earned the actor now, for games that score steps (TextWorld: the
    score's increase); None for games scored only by their outcome. A game's step rewards add up
    to (at most) its outcome reward; trainers credit the rest to the last step. `changed`: False
    for an action the game took (it cost a turn) that left its state as it was (TextWorld's command
    the simulator does not know): per-state credit (`turn_baseline: state`) then keys the next turn
    at the same state, as after a refused reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    accepted: bool = True
    correction: str | None = None
    abort: str | None = None
    reward: float | None = None
    changed: bool = True


ACCEPTED = Feedback()  # shared: constructing one per accepted action is measurable engine overhead


class Event(Strict):
    """Something that happened in the game, with who may see it (None = everyone)."""

    index: int
    player: str
    tag: str
    content: str
    visible_to: list[str] | None = None
    round: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Outcome(Strict):
    rewards: dict[str, float] = Field(default_factory=dict)
    winner: str | None = None
    status: Literal["complete", "aborted"] = "complete"
    reason: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)


S = TypeVar("S")
InstT = TypeVar("InstT", bound=Instance)
# How a player's prompt is built each turn: "rendered" = the game's `observation` (it may re-render
# the whole game every turn); "conversation" = its `conversation`, a chat that only grows, so a
# player's calls extend one another and a trainer reads the game once (issue #59).
View = Literal["conversation", "rendered"]


class Game(ABC, Generic[InstT, S]):
    """Rules of one game family. `Config` is the strict schema of `game_args` in experiment YAML."""

    name: ClassVar[str] = "game"
    Config: ClassVar[type[Strict]] = Strict
    InstanceType: ClassVar[type[Instance]] = Instance
    # Prompt set used for a role when the agent config names none: role -> prompt set name.
    default_prompts: dict[str, str] = {}  # a class default; a game may set it per format in __init__
    # Roles whose seats evaluate the others (a debate's judge) rather than compete: tournaments
    # fill them from `tournament.judges`, ratings leave them out, look-ahead asks them.
    evaluator_roles: ClassVar[frozenset[str]] = frozenset()
    # How outcomes rank the competing seats for win rates and ratings: "reward" = the higher
    # reward wins (equal rewards tie); "none" = no ranking (cooperative or single-player games).
    ranking: ClassVar[Literal["reward", "none"]] = "reward"
    # What the layers above know of this game (quality, metrics, play panel, human data).
    hooks: ClassVar[GameHooks] = GameHooks()

    # The view the engine asks for (`observe`): set from the experiment's `view:` when it is loaded.
    view: View = "rendered"

    def __init__(self, config: Strict | None = None):
        self.config = config if config is not None else self.Config()

    # -- structure --------------------------------------------------------------------------
    @abstractmethod
    def players(self) -> dict[str, str]:
        """Player id -> role ("debater", "judge", "negotiator") for the configured format."""

    @abstractmethod
    def reset(self, instance: InstT, seats: dict[str, Seat], rng: random.Random, flip: bool = False) -> S:
        """Fresh state. `flip` plays the mirrored variant (sides swapped / other seat first)."""

    @abstractmethod
    def to_act(self, state: S) -> list[str]:
        """Players who act now; several means simultaneous moves."""

    @abstractmethod
    def action_spec(self, state: S, player: str) -> ActionSpec: ...

    @abstractmethod
    def observation(self, state: S, player: str) -> list[Message]:
        """Only what `player` may see: rules as system, own turns as assistant, others as user."""

    @abstractmethod
    def act(self, state: S, player: str, action: Action) -> Feedback: ...

    @abstractmethod
    def is_over(self, state: S) -> bool: ...

    @abstractmethod
    def outcome(self, state: S) -> Outcome: ...

    @abstractmethod
    def events(self, state: S) -> list[Event]:
        """Every event so far, with visibility, for the episode record."""

    def conversation(self, state: S, player: str) -> list[Message]:
        """Optional: what `player` may see as a conversation that only grows — each new event (a
        move, a partner's message, a new board or offer) appended as new messages, the player's own
        replies as assistant messages exactly as it wrote them, nothing shown earlier rewritten.
        The engine checks the growth every turn. A game that offers it overrides this method."""
        raise SparringError(f"game {self.name!r} offers no conversation view (use view: rendered)")

    @classmethod
    def offers_conversation(cls) -> bool:
        return cls.conversation is not Game.conversation

    def rendered_settings(self) -> list[str]:
        """The `game_args` keys this configuration sets that shape only the rendered view (e.g. a
        history window that drops earlier turns): with any, a config that names no view plays
        rendered, so the setting is honoured, and `view: conversation` is an error naming them."""
        return []

    def observe(self, state: S, player: str) -> list[Message]:
        """`player`'s prompt messages in the configured view (what the engine calls)."""
        return self.conversation(state, player) if self.view == "conversation" else self.observation(state, player)

    def prompt_files(self) -> list[str]:
        """The game's own prompt files: `prompts/*.yaml` beside the module that defines it, so a
        game installed from another package brings its prompt sets along."""
        import inspect

        folder = Path(inspect.getfile(type(self))).parent / "prompts"
        return [str(p) for p in sorted(folder.glob("*.yaml"))]

    def evaluators(self) -> list[str]:
        """Players whose role is an evaluator role (judges), in seating order."""
        return [p for p, r in self.players().items() if r in self.evaluator_roles]

    def competitors(self) -> list[str]:
        """Players who compete (every seat that does not evaluate), in seating order."""
        return [p for p, r in self.players().items() if r not in self.evaluator_roles]

    # -- optional ---------------------------------------------------------------------------
    can_fork: ClassVar[bool] = True

    def fork(self, state: S) -> S:
        """An independent copy of `state` for look-ahead (best-of-N) and branched rollouts.

        The default deep-copies the state; a game whose state is cheap to copy by hand overrides
        this, and a game whose state holds a handle it cannot copy (a simulator process) sets
        `can_fork = False` and raises `GameCannotFork` here.
        """
        if not self.can_fork:
            raise GameCannotFork(f"game {self.name!r} cannot fork its state (it owns an environment)")
        return copy.deepcopy(state)

    def evaluation(self, state: S, evaluator: str) -> tuple[list[Message], ActionSpec] | None:
        """What `evaluator` (a judge) would see and answer if the game were judged now.
        Used by best-of-N to score candidate turns; None if the game has no such judge."""
        return None

    def request_labels(self, state: S, player: str) -> dict[str, Any]:
        """Private labels for `player`'s model requests this turn (`GenerateRequest.context`):
        never in its messages, never sent to API backends, not stored in records. An
        environment-backed game puts its expert's next action here, which a scripted expert
        policy replays to record demonstrations. Default: none."""
        return {}

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[InstT]:
        """The instances the experiment's `dataset:` block names, from this game's own sources
        (a relative `dataset.args.path` is read from `base_dir`). Raise ConfigError /
        UnknownNameError for a bad block; the engine adds the file and key."""
        raise SparringError(f"game {self.name!r} has no instance sources (override Game.load_instances)")

    def instance_summary(self, instance: InstT) -> dict[str, Any]:
        """Small description of the instance stored in every episode record (no long texts)."""
        return {"id": instance.id}

    def record_state(self, state: S) -> dict[str, Any]:
        """Game-specific facts stored in the episode record (e.g. assigned sides, first mover)."""
        return {}
