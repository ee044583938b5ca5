"""Mutable state of one debate episode (a plain dataclass: cheap to fork, easy to inspect)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.gameapi.game import Event, Seat
from sparring.games.debate.instance import DebateInstance
from sparring.games.debate.schedule import Step
from sparring.prompts.memo import RenderMemo

LETTERS = ("A", "B")


@dataclass
class DebateState:
    instance: DebateInstance
    seats: dict[str, Seat]
    flip: bool
    variant: int
    background: str  # what debaters are shown (maybe truncated)
    background_info: dict[str, Any]
    steps: list[Step]
    # instance answer index shown as A and B: to the judge, and to debaters (differs in open debate)
    judge_display: tuple[int, int] | None
    debater_display: tuple[int, int]
    player_answer: dict[str, int]  # debater -> instance answer index it defends
    side_answer: dict[str, int]  # judge option -> instance answer index
    step: int = 0
    acted: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    invalid: dict[str, int] = field(default_factory=dict)
    verdict: dict[str, float] | None = None
    verdict_meta: dict[str, Any] = field(default_factory=dict)
    abort: str | None = None
    consultant_correct: bool | None = None
    chosen: int | None = None  # open debate: instance answer index the chooser picked
    cache: dict[tuple, Any] = field(default_factory=dict)  # rendered prompt pieces
    memo: RenderMemo = field(default_factory=RenderMemo)  # the game's memo (shared by its episodes)

    @property
    def over(self) -> bool:
        return self.abort is not None or self.step >= len(self.steps)

    @property
    def current(self) -> Step | None:
        # asked dozens of times per episode: `over` inlined
        if self.abort is None and self.step < len(self.steps):
            return self.steps[self.step]
        return None

    def letter_of(self, answer: int, display: tuple[int, int]) -> str:
        return LETTERS[display.index(answer)]
