"""State of one Wordle episode (plain data: best-of-N look-ahead deep-copies it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from sparring.gameapi.game import Event
from sparring.games.wordle.instance import WordleInstance
from sparring.prompts import PromptSet
from sparring.types import Message

GUESSER, CRITIC = "Guesser", "Critic"
Phase = Literal["guess", "critic", "final"]


@dataclass
class Guess:
    """One scored guess, with what led to it (the critic's advice, when there is a critic)."""

    word: str
    pattern: str
    explanation: str = ""
    proposal: str | None = None      # the word the guesser proposed to the critic
    verdict: str | None = None       # the critic's "keep" / "change"
    remaining: int = 0               # possible answers left after this feedback
    gain: float = 0.0                # bits of information this feedback gave


@dataclass
class WordleState:
    instance: WordleInstance
    prompts: dict[str, PromptSet]
    candidates: list[str]                       # answers still consistent with every feedback
    views: dict[str, list[Message]]             # per player: its conversation so far (static part)
    talk: dict[str, list[Message]] = field(default_factory=dict)  # the conversation view (`WordleGame.conversation`)
    phase: Phase = "guess"
    guesses: list[Guess] = field(default_factory=list)
    proposal: tuple[str, str] | None = None     # (word, explanation) waiting for the critic
    verdict: tuple[str, str] | None = None      # (keep|change, reason) from the critic
    pending: dict[str, tuple[str, str]] = field(default_factory=dict)  # player -> (bad output, correction)
    errors_in_row: int = 0
    n_invalid: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    over: bool = False
    end: str | None = None                      # win | loss | aborted
    abort_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
