"""Typed errors. Each carries enough context to be shown to a user without a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Closest known names to `name`, for 'did you mean' hints."""
    known = list(known)
    lowered = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    subs = [k for k in known if name.lower() in k.lower() and k not in hits]
    return [lowered[h] for h in hits] + subs[: max(0, n - len(hits))]


def one_line(err: BaseException, limit: int | None = None) -> str:
    """An exception's message on one line (whitespace collapsed; at most `limit` characters), or its
    type's name when it has none: what a one-line report of a failure shows."""
    text = " ".join(str(err).split())
    return (text[:limit] if limit else text) or type(err).__name__


class SparringError(Exception):
    """Base class: the CLI prints these as one clear message and exits non-zero."""


class ConfigError(SparringError):
    """A config/spec/dataset file is malformed. Names the file and the key."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None):
        self.file, self.key, self.message = file, key, message  # message: without "file F, key K: "
        where = ", ".join(p for p in (f"file {file}" if file else "", f"key {key!r}" if key else "") if p)
        super().__init__(f"{where}: {message}" if where else message)


class UnknownNameError(SparringError, KeyError):
    """A registry lookup failed; the message lists the closest known names."""

    def __init__(self, kind: str, name: str, known: list[str], where: str = ""):
        self.kind, self.name, self.known = kind, name, known
        near = [] if where else closest(name, known)  # `where` already says where the name is
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        listing = f" Known {kind}s: {', '.join(sorted(known))}." if known else ""
        super().__init__(f"unknown {kind} {name!r}.{' ' + where if where else ''}{hint}{listing}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.args[0]


class BackendError(SparringError):
    """A model backend failed for good (after retries, or on a non-retryable error)."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        self.status, self.retryable = status, retryable
        super().__init__(message)


class ServerGoneError(BackendError):
    """A served model stopped answering: several requests in a row could not even connect.

    The engine stops admitting episodes when a model raises it (a circuit breaker), instead of
    retrying episode after episode against a server that is gone.
    """


class ScoringNotSupported(BackendError):
    """The backend cannot return option log-probabilities; callers fall back to parsing text."""


class PrefillNotSupported(ScoringNotSupported):
    """The backend could score the options, but not as a continuation of an assistant prefix
    (llama.cpp, TGI): callers move the prefix into the instruction and score again."""


class ContextOverflowError(BackendError):
    """A prompt does not fit the model's context and the policy is to refuse it."""


class EpisodeAbort(SparringError):
    """Raised inside an episode to record it as failed with a reason; the run goes on."""


class EpisodeAbandoned(EpisodeAbort):
    """A participant left mid-episode (a person closed a web game, or never came back).

    Not a failure of the engine or a model: the driver stores the episode as *aborted*, with
    the transcript so far, an outcome whose reason is this message and `metrics["abandoned"]`.
    """
