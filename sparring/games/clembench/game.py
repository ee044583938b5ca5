"""A clembench game sparring does not implement, as a transcript-only game.

`sparring import clembench` turns every episode of a clembench results tree into a sparring
record; games sparring plays itself (taboo, wordle) keep their own game, every other one
(referencegame, imagegame, privateshared, codenames, ...) becomes this game. Its records hold what
each player was shown and answered (calls), every game-master action (events) and clembench's
scores (outcome), so the web app renders them, `sparring report` summarises them and `sparring
export sft|dpo|kto` trains on them; playing one is refused with a clear message.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field

from sparring.errors import SparringError
from sparring.gameapi import (
    Action,
    ActionSpec,
    Event,
    Feedback,
    Game,
    GameHooks,
    Metric,
    Outcome,
    Seat,
    register_game,
)
from sparring.gameapi.game import Instance
from sparring.types import Message, Strict

HOOKS = GameHooks(metrics=(
    Metric("success", "higher", "wilson", "clembench's Success"),
    Metric("quality_score", "higher", "bootstrap", "clembench's Main Score (0-100)"),
    Metric("aborted", "lower", "wilson", "clembench's Aborted"),
))


class ClembenchInstance(Instance):
    game: str = ""  # clembench's game name
    experiment: str = ""
    episode: str = ""


class ClembenchConfig(Strict):
    players: dict[str, str] = Field(default_factory=lambda: {"Player 1": "player", "Player 2": "player"},
                                    description="clembench's player names -> their game roles")


@register_game("clembench")
class ClembenchTranscriptGame(Game[ClembenchInstance, Any]):
    """A recorded clembench game; its transcripts can be read, reported and exported, not played."""

    name: ClassVar[str] = "clembench"
    Config: ClassVar[type[Strict]] = ClembenchConfig
    InstanceType: ClassVar[type[Instance]] = ClembenchInstance
    ranking: ClassVar = "none"  # clembench games are cooperative or single-player
    can_fork: ClassVar[bool] = False
    hooks: ClassVar[GameHooks] = HOOKS

    def players(self) -> dict[str, str]:
        return dict(self.config.players)  # type: ignore[attr-defined]

    def _refuse(self) -> Any:
        raise SparringError("game 'clembench' holds imported clembench transcripts; it cannot be played "
                            "(sparring plays taboo, wordle and wordle_withcritic itself)")

    def reset(self, instance: ClembenchInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> Any:
        return self._refuse()

    def to_act(self, state: Any) -> list[str]:
        return self._refuse()

    def action_spec(self, state: Any, player: str) -> ActionSpec:
        return self._refuse()

    def observation(self, state: Any, player: str) -> list[Message]:
        return self._refuse()

    def act(self, state: Any, player: str, action: Action) -> Feedback:
        return self._refuse()

    def is_over(self, state: Any) -> bool:
        return self._refuse()

    def outcome(self, state: Any) -> Outcome:
        return self._refuse()

    def events(self, state: Any) -> list[Event]:
        return self._refuse()
