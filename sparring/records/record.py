"""The episode record: one JSON line per finished episode. Every training format derives from it.

Versioned (`schema_version`) so readers can migrate old runs. `calls` hold exactly what each model
was shown (messages) and what it returned; `events` hold the game's public/private history.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import Field

from sparring.gameapi.game import Event, Outcome
from sparring.stable_json import stable_dumps
from sparring.types import Completion, Message, Sampling, Strict, Usage

SCHEMA_VERSION = 1


class SeatRecord(Strict):
    agent: str
    model: str
    role: str
    prompt_set: str | None = None


class CallRecord(Strict):
    """One model call made on behalf of a player (speech, verdict, scratchpad, best-of-N eval...)."""

    player: str
    tag: str
    model: str
    op: Literal["generate", "score"]
    messages: list[Message]
    assistant_prefix: str = ""
    sampling: Sampling | None = None
    options: list[str] | None = None
    completions: list[Completion] | None = None
    logprobs: list[float] | None = None
    error: str | None = None
    # For candidate sets (best-of-N): the index kept and each candidate's score.
    chosen: int | None = None
    candidate_scores: list[float] | None = None
    # True when the reply was rejected by the game (invalid action) — excluded from training.
    rejected: bool = False
    # Index of the action this call served among the episode's submitted actions (0-based; a
    # rejected attempt counts as one), so exporters and branched rollouts can order calls.
    turn: int | None = None
    # What the action this call served earned the player at once (`Feedback.reward`, games that
    # score steps); None: the game scores only its outcome.
    step_reward: float | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class EpisodeRecord(Strict):
    schema_version: int = SCHEMA_VERSION
    id: str
    experiment: str
    game: str
    instance_id: str
    instance: dict[str, Any] = Field(default_factory=dict)
    seats: dict[str, SeatRecord]
    seed: int
    repeat: int = 0
    flip: bool = False
    matchup: str = ""
    status: Literal["complete", "aborted", "failed"]
    outcome: Outcome | None = None
    events: list[Event] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    usage: dict[str, Usage] = Field(default_factory=dict)
    # Branched rollouts: this episode is one leaf of a tree {"id": the tree (= job) id, "path":
    # the alternative taken at each branch point, "points": [{"player", "turn"}...]}.
    tree: dict[str, Any] | None = None


TRANSCRIPT_FIELDS = ("calls", "events")


def without_transcript(obj: Any) -> Any:
    """A stored record's JSON with `calls` and `events` emptied, for readers that need only
    outcomes, seats and status (reports, swiss pairing, counts). The transcript is ~97% of a
    debate's record (every prompt with its story), so a report of a large run fits in memory."""
    if isinstance(obj, dict):  # anything else fails validation with the usual message
        for key in TRANSCRIPT_FIELDS:
            if key in obj:
                obj[key] = []
    return obj


def episode_id(experiment: str, instance_id: str, seats: dict[str, str], seed: int, repeat: int,
               flip: bool) -> str:
    """Deterministic id: the same scheduled episode always gets the same id (resume = skip ids).

    A hash of `stable_dumps([experiment, instance_id, sorted seats, seed, repeat, flip])`; stored
    runs depend on this exact encoding, so it never changes.
    """
    key = stable_dumps([experiment, instance_id, sorted(seats.items()), seed, repeat, flip])
    return hashlib.sha256(key.encode()).hexdigest()[:16]
