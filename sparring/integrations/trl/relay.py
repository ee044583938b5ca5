"""One episode played in a background thread, its learner's seat answered by tool calls.

TRL's environment is synchronous and turn-by-turn (`reset`, then one tool call per move, then
`get_reward`), while the engine plays a whole episode in one `Arena.play` call. So the episode runs
in its own thread and the learner's seat is a `SeatRouter` holder that waits for the next tool call:
`next_view` blocks until the engine asks the learner for its next move (or the game ends), `submit`
answers it. Only one side runs at a time: the partners' models are called while the learner waits.

Views are text: the first is the learner's whole observation (rules and the opening), each later one
what is new since its last move (the partner's reply, the game's feedback or correction), or the
whole view again when the game re-renders it. In TRL they are the prompt and the tool results, so
none of them is trained on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sparring.errors import EpisodeAbandoned, SparringError
from sparring.records.record import EpisodeRecord
from sparring.types import GenerateRequest, Message

DEFAULT_WAIT_S = 600.0  # how long a move may wait for the partners (a served partner can be slow)


class Episode:
    """An episode started by `start()`; the engine thread runs `play(answer)` to its record."""

    def __init__(self, play: Callable[[Callable[[GenerateRequest], str]], EpisodeRecord],
                 wait_s: float = DEFAULT_WAIT_S):
        self._play, self.wait_s = play, wait_s
        self._cond = threading.Condition()
        self.pending: GenerateRequest | None = None
        self._answer: str | None = None
        self._abandoned: str | None = None
        self.record: EpisodeRecord | None = None
        self.error: BaseException | None = None
        self.done = False
        self._thread = threading.Thread(target=self._run, name="sparring-trl-episode", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- the engine's side ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self.record = self._play(self.answer)
        except BaseException as e:  # noqa: BLE001 — reported to the trainer's side by next_view / finish
            self.error = e
        finally:
            with self._cond:
                self.done = True
                self.pending = None
                self._cond.notify_all()

    def answer(self, request: GenerateRequest) -> str:
        """The learner's reply to `request` (blocks the engine until a tool call gives it)."""
        with self._cond:
            if self._abandoned:
                raise EpisodeAbandoned(self._abandoned)
            self.pending, self._answer = request, None
            self._cond.notify_all()
            while self._answer is None and not self._abandoned:
                self._cond.wait()
            if self._answer is None:
                raise EpisodeAbandoned(self._abandoned or "the learner left")
            text, self._answer = self._answer, None
            return text

    # -- the trainer's side -----------------------------------------------------------------------
    def next_view(self) -> GenerateRequest | None:
        """The learner's pending request, or None once the episode is over."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.pending is not None or self.done, timeout=self.wait_s):
                raise SparringError(f"the game did not come back to the learner within {self.wait_s:.0f} s")
            if self.error is not None:
                raise SparringError(f"the episode failed: {type(self.error).__name__}: {self.error}") from self.error
            return self.pending

    def submit(self, text: str) -> None:
        with self._cond:
            if self.pending is None:
                raise SparringError("no move is pending")
            self._answer, self.pending = text, None  # next_view waits for the engine's next request
            self._cond.notify_all()

    def finish(self, reason: str = "the learner stopped playing") -> EpisodeRecord | None:
        """End the episode (a pending move is abandoned: the engine stores it as aborted) and
        return its record."""
        with self._cond:
            if not self.done:
                self._abandoned = reason
                self._cond.notify_all()
        self._thread.join(timeout=self.wait_s)
        return self.record


def render(messages: list[Message]) -> str:
    """A view as text: the messages' contents, the learner's own earlier moves marked."""
    return "\n\n".join(f"(you) {m.content}" if m.role == "assistant" else m.content for m in messages)


def news(before: list[Message], now: list[Message]) -> str:
    """What is new in view `now` since the learner answered view `before`: what follows `before`
    when `now` extends it, else what follows the learner's last move (its own turns are the view's
    assistant messages; games re-render earlier turns, e.g. to drop a turn's instructions), else
    the whole view but its rules."""
    key: Callable[[Message], Any] = lambda m: (m.role, m.content)  # noqa: E731
    if len(now) > len(before) and [key(m) for m in now[:len(before)]] == [key(m) for m in before]:
        rest = now[len(before):]
        while rest and rest[0].role == "assistant":
            rest = rest[1:]
        return render(rest)
    own = [i for i, m in enumerate(now) if m.role == "assistant"]
    if own:
        return render(now[own[-1] + 1:])
    return render([m for m in now if m.role != "system"])
