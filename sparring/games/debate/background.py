"""Context-length policy for background texts (stories).

A story longer than a small model's context must be handled before any prompt is built: either
cut at a word boundary with a visible marker (and reported), or the episode is refused with a
clear reason. Word counts are the game's proxy for tokens (it never sees a tokenizer); English
prose runs at roughly 1.3 tokens per word, so set `max_background_words` accordingly.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from sparring.errors import EpisodeAbort

TRUNCATION_MARKER = "[... truncated ...]"
_WORD = re.compile(r"\S+")


def fit_background(text: str, *, max_words: int | None = None, max_chars: int | None = None,
                   policy: Literal["truncate", "error"] = "truncate",
                   instance_id: str = "?") -> tuple[str, dict[str, Any]]:
    """Return (text to show, report). The report is stored in the episode record."""
    shown, info = _fit(text, max_words, max_chars, policy, instance_id)
    return shown, dict(info)


def _fit(text: str, max_words: int | None, max_chars: int | None, policy: str,
         instance_id: str) -> tuple[str, dict[str, Any]]:
    words = [m.span() for m in _WORD.finditer(text)]
    info: dict[str, Any] = {"words": len(words), "chars": len(text), "truncated": False}
    cut = len(text)
    if max_words is not None and len(words) > max_words:
        cut = min(cut, words[max_words - 1][1])
    if max_chars is not None and len(text) > max_chars:
        room = max(0, max_chars - len(TRUNCATION_MARKER) - 2)
        # end on a word boundary at or before `room`
        ends = [e for _, e in words if e <= room]
        cut = min(cut, ends[-1] if ends else 0)
    if cut >= len(text.rstrip()):
        return text, info
    if policy == "error":
        limits = ", ".join(f"{k}={v}" for k, v in (("max_background_words", max_words),
                                                   ("max_background_chars", max_chars)) if v)
        raise EpisodeAbort(
            f"instance {instance_id!r}: background has {len(words)} words / {len(text)} characters, "
            f"over the limit ({limits}) and background_policy is 'error'; raise the limit, "
            f"pick shorter stories, or set background_policy: truncate")
    shown = text[:cut].rstrip() + "\n" + TRUNCATION_MARKER
    kept = len(_WORD.findall(text[:cut]))
    info.update(truncated=True, shown_words=kept, shown_chars=len(shown))
    return shown, info
