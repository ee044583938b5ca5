"""The state of one CookingWorld episode: the leased simulator plus what the player has seen.

Plain data, separate from the rules (`game.py`). It holds a live simulator, so it cannot be
copied: the game declares `can_fork = False`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.gameapi.game import Event
from sparring.games.textworld_cooking.env import Lease
from sparring.games.textworld_cooking.instance import CookingInstance
from sparring.prompts import PromptSet
from sparring.types import Message

PLAYER = "player"
ENVIRONMENT = "environment"  # the `player` of the simulator's own events


@dataclass
class Step:
    """One command and the simulator's answer, as the player sees them: the command (assistant),
    the answer in short and in full. The latest answer is shown in full; earlier ones in short
    (`history_view: short`) or in full (`history_view: full`)."""

    command: Message
    short: Message
    full: Message
    written: str = ""  # the reply as the model wrote it (the conversation view shows it)


@dataclass
class CookingState:
    instance: CookingInstance
    prompts: PromptSet
    lease: Lease
    system: Message
    first: Message                       # the opening observation, in full
    first_short: Message                 # the opening observation, as history
    gold: list[str]                      # the simulator's gold path (never shown to the player)
    steps: list[Step] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # the simulator's latest info
    score: float = 0.0                   # normalised score in [0, 1]
    raw_score: float = 0.0
    n_invalid: int = 0
    on_gold: bool = True                 # every command so far followed the gold path
    gold_pos: int = 0                    # index of the next gold command (stale ones skipped)
    over: bool = False
    end: str | None = None               # success | failure | max_steps
    success: bool = False
    failure: bool = False
    recipe: str | None = None            # the cookbook's text, once read (`keep_recipe`)

    @property
    def n_steps(self) -> int:
        return len(self.steps)
