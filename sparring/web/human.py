"""The web human: a Model whose every call waits for the answer a person submits in a browser.

Why a model: the engine plays the episode exactly as in a run (turn order, visibility,
corrections, records); the human's seat is just a slow model. The engine thread blocks in
`generate`/`score` on this object's pending turn; the POST handler fills it with `submit`. Each
turn has a sequence number, so a stale form (an answer to a turn already answered) is refused.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sparring.errors import EpisodeAbandoned
from sparring.models.base import Model
from sparring.models.scripted import PROB_FLOOR, count_tokens, prompt_tokens
from sparring.types import Completion, GenerateRequest, Message, ScoreRequest, Usage

IDLE_TIMEOUT_S = 3 * 3600.0  # a turn left unanswered this long abandons the game


ABANDONED = "abandoned by the human player"


class Abandoned(EpisodeAbandoned):
    """The person left the game: the engine stores the episode as aborted, marked abandoned,
    with the transcript so far (its message, the outcome's reason, says why)."""


class StaleTurn(Exception):
    """An answer for a turn that is not the pending one (out of turn, or a form submitted twice)."""


@dataclass
class PendingTurn:
    """What the engine is waiting for: exactly the messages the human's seat is shown."""

    seq: int
    op: str  # generate | score
    messages: list[Message]
    context: dict[str, Any] = field(default_factory=dict)
    prefix: str = ""
    options: list[str] = field(default_factory=list)
    answer: Any = None

    @property
    def tag(self) -> str:
        return str(self.context.get("tag") or "")


def continuation(answer: str, prefix: str) -> str:
    """A person's answer is a whole reply, a completion only what follows the prefilled prefix
    (the engine stores prefix + completion): a reply that already starts with the prefix (a
    forced proposal, `[propose] (1 books, ...)`) gives only the rest, never the prefix twice."""
    return answer[len(prefix):] if prefix and answer.startswith(prefix) else answer


class WebHuman(Model):
    """One person's seat in one game. `submit(seq, answer)` answers turn `seq`: text for a
    generate call, a list of probabilities (one per option) for a score call."""

    concurrent = False
    can_score = True

    def __init__(self, name: str = "web-human", *, idle_timeout_s: float = IDLE_TIMEOUT_S, **kwargs: Any):
        super().__init__(name, **kwargs)
        self.idle_timeout_s = idle_timeout_s
        self._cond = threading.Condition()
        self.pending: PendingTurn | None = None
        self.seq = 0
        self.abandoned: str | None = None

    # -- the engine's side ----------------------------------------------------------------------
    def _wait(self, turn: PendingTurn) -> Any:
        with self._cond:
            if self.abandoned:
                raise Abandoned(f"{ABANDONED} ({self.abandoned})")
            self.pending = turn
            self._cond.notify_all()
            deadline = time.monotonic() + self.idle_timeout_s
            while turn.answer is None and self.abandoned is None:
                if time.monotonic() > deadline:  # nobody came back: free the engine thread
                    self.abandoned = f"no answer for {self.idle_timeout_s:.0f} s"
                    break
                self._cond.wait(timeout=1.0)
            self.pending = None
            self._cond.notify_all()
            if turn.answer is None:
                raise Abandoned(f"{ABANDONED} ({self.abandoned or 'left'})")
            return turn.answer

    def _next_seq(self) -> int:
        with self._cond:
            self.seq += 1
            return self.seq

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        out = []
        for req in requests:
            started = time.time()
            text = str(self._wait(PendingTurn(self._next_seq(), "generate", list(req.messages), dict(req.context),
                                              req.assistant_prefix)))
            text = continuation(text, req.assistant_prefix)
            usage = Usage(prompt_tokens=prompt_tokens(req.messages, req.assistant_prefix),
                          completion_tokens=count_tokens(text))
            out.append(Completion(text=text, usage=usage, latency_s=time.time() - started))
        return out

    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        out = []
        for req in requests:
            probs = self._wait(PendingTurn(self._next_seq(), "score", list(req.messages), dict(req.context),
                                           req.assistant_prefix, list(req.options)))
            out.append([math.log(max(float(p), PROB_FLOOR)) for p in probs])
        return out

    # -- the web's side ---------------------------------------------------------------------------
    def submit(self, seq: int, answer: Any) -> None:
        """Answer the pending turn `seq`; StaleTurn if that is not the turn being waited for."""
        with self._cond:
            if self.pending is None or self.pending.seq != seq or self.pending.answer is not None:
                raise StaleTurn("this form is out of date: it is not your turn, or this turn was already answered")
            self.pending.answer = answer
            self._cond.notify_all()

    def abandon(self, reason: str = "they left") -> None:
        with self._cond:
            self.abandoned = reason
            self._cond.notify_all()

    def wait_change(self, seen_seq: int, timeout: float, done: threading.Event) -> None:
        """Block until a turn after `seen_seq` is pending, the game is `done`, or `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done.is_set():
                if self.pending is not None and self.pending.seq > seen_seq and self.pending.answer is None:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(timeout=min(left, 0.05))

    def current(self) -> PendingTurn | None:
        with self._cond:
            turn = self.pending
            return turn if turn is not None and turn.answer is None else None
