"""Validation of `<quote>...</quote>` spans in speeches against the background text.

The judge cannot read the story, so quotes are its only hard evidence. Each span is checked in
three steps: exact substring; normalised match (case, punctuation and whitespace ignored); fuzzy
repair with rapidfuzz's partial-ratio alignment (a near-miss above `fuzzy_threshold` is replaced
by the story's exact words). Valid spans are shown to the judge as `<quote>`, the rest as
`<invalid_quote>`, and per-speech statistics go into the event record.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any, Literal

from rapidfuzz import fuzz

QUOTE_RE = re.compile(r"<quote>(.*?)</quote>", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"\w+")

Status = Literal["exact", "normalized", "repaired", "invalid", "over_limit"]
VALID: frozenset[str] = frozenset({"exact", "normalized", "repaired"})


@dataclass(frozen=True)
class StoryIndex:
    """Normalised words of a story with their character spans, for mapping matches back."""

    text: str
    spans: tuple[tuple[int, int], ...]
    joined: str  # normalised words joined by single spaces
    starts: tuple[int, ...]  # offset of each word in `joined`
    ends: tuple[int, ...]


def index_story(text: str) -> StoryIndex:
    spans, words = [], []
    for m in _WORD.finditer(text):
        spans.append(m.span())
        words.append(m.group().lower())
    starts, ends, pos = [], [], 0
    for w in words:
        starts.append(pos)
        ends.append(pos + len(w))
        pos += len(w) + 1
    return StoryIndex(text, tuple(spans), " ".join(words), tuple(starts), tuple(ends))


def normalize(text: str) -> str:
    """Lower-case words separated by single spaces; punctuation and layout dropped."""
    return " ".join(w.lower() for w in _WORD.findall(text))


@dataclass
class QuoteCheck:
    original: str
    status: Status
    text: str  # what the judge is shown: the story's exact words when valid
    score: float = 100.0

    @property
    def valid(self) -> bool:
        return self.status in VALID

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "score": round(self.score, 1), "words": len(_WORD.findall(self.text))}


@dataclass
class QuoteReport:
    marked: str
    quotes: list[QuoteCheck] = field(default_factory=list)

    @property
    def stats(self) -> dict[str, Any]:
        n = len(self.quotes)
        count = {s: sum(q.status == s for q in self.quotes) for s in ("exact", "normalized", "repaired")}
        valid = [q for q in self.quotes if q.valid]
        return {
            "n_quotes": n,
            "n_valid": len(valid),
            "n_exact": count["exact"],
            "n_normalized": count["normalized"],
            "n_repaired": count["repaired"],
            "n_invalid": n - len(valid),
            "quoted_words": sum(len(_WORD.findall(q.text)) for q in valid),
            "invalid_words": sum(len(_WORD.findall(q.original)) for q in self.quotes if not q.valid),
            "valid_frac": (len(valid) / n) if n else None,
        }


def _story_span(idx: StoryIndex, first: int, last: int) -> str:
    return idx.text[idx.spans[first][0]: idx.spans[last][1]]


def check_quote(quote: str, background: str, *, fuzzy_threshold: float = 90.0) -> QuoteCheck:
    """Classify one quoted span; valid non-exact spans come back as the story's exact text."""
    stripped = quote.strip()
    if stripped and stripped in background and _WORD.search(stripped):
        return QuoteCheck(quote, "exact", stripped)
    norm = normalize(stripped)
    if not norm:
        return QuoteCheck(quote, "invalid", quote, 0.0)
    idx = index_story(background)
    if not idx.joined:
        return QuoteCheck(quote, "invalid", quote, 0.0)
    hit = f" {idx.joined} ".find(f" {norm} ")
    if hit >= 0:
        first = bisect_left(idx.starts, hit)
        last = first + norm.count(" ")
        return QuoteCheck(quote, "normalized", _story_span(idx, first, last))
    al = fuzz.partial_ratio_alignment(norm, idx.joined, score_cutoff=fuzzy_threshold)
    if al is None or al.score < fuzzy_threshold or al.dest_end <= al.dest_start:
        score = 0.0 if al is None else al.score
        return QuoteCheck(quote, "invalid", quote, score)
    # widen the aligned character range to whole words of the story
    first = max(0, bisect_right(idx.starts, al.dest_start) - 1)
    if al.dest_start >= idx.ends[first]:  # alignment starts on the space after a word
        first = min(first + 1, len(idx.starts) - 1)
    last = max(first, bisect_right(idx.starts, al.dest_end - 1) - 1)
    return QuoteCheck(quote, "repaired", _story_span(idx, first, last), al.score)


def validate_quotes(speech: str, background: str, *, fuzzy_threshold: float = 90.0,
                    max_quote_words: int | None = None) -> QuoteReport:
    """Check every quote of `speech`; the marked text is what the judge (and the opponent) see.

    `max_quote_words` is a per-speech budget: valid quotes beyond it are marked invalid
    ("over_limit"), so long verbatim dumps of the story cannot replace argument.
    """
    checks: list[QuoteCheck] = []
    budget = max_quote_words

    def repl(m: re.Match[str]) -> str:
        nonlocal budget
        c = check_quote(m.group(1), background, fuzzy_threshold=fuzzy_threshold)
        if c.valid and budget is not None:
            n = len(_WORD.findall(c.text))
            if n > budget:
                c = QuoteCheck(c.original, "over_limit", c.original, c.score)
            else:
                budget -= n
        checks.append(c)
        if c.valid:
            return f"<quote>{c.text}</quote>"
        return f"<invalid_quote>{c.original.strip()}</invalid_quote>"

    marked = QUOTE_RE.sub(repl, speech)
    return QuoteReport(marked, checks)
