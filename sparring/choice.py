"""Turning a judge's output into probabilities over options (shared by games and agents).

Two routes: log-probabilities from `Model.score` (normalised with a softmax, the default and the
calibrated one) and, for backends that cannot score, parsing a generated reply such as
`Debater_A | 73%` or `73% Debater_A`. Parsing never guesses: a reply that does not name exactly
one option (with an optional confidence) gives None, and the caller retries or records a failure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_NUM = r"(\d{1,3}(?:\.\d+)?)\s*(%|(?i:percent)\b)?"


def _key(s: str) -> str:
    return re.sub(r"[\s_\-]+", "_", s.strip().lower())


def _aliases(options: Sequence[str]) -> tuple[dict[str, str], str]:
    """Spellings that name an option, and a regex alternation matching them.

    Full names match in any case, with spaces/hyphens for underscores ("debater a"); an
    option's last part ("A" of "Debater_A") matches only as written and only when unique, so
    the article "a" in "a strong case" is not read as a vote.
    """
    table: dict[str, str] = {}
    alts: list[tuple[int, str]] = []
    for opt in options:
        table[_key(opt)] = opt
        parts = [re.escape(p) for p in re.split(r"[\s_\-]+", opt.strip()) if p]
        alts.append((len(opt), "(?i:" + r"[\s_\-]*".join(parts) + ")"))
    tails: dict[str, list[str]] = {}
    for opt in options:
        tails.setdefault(re.split(r"[\s_\-]+", opt.strip())[-1], []).append(opt)
    for tail, owners in tails.items():
        if len(owners) == 1 and _key(tail) not in table:
            table[_key(tail)] = owners[0]
            alts.append((len(tail), re.escape(tail)))
    body = "|".join(a for _, a in sorted(alts, key=lambda x: -x[0]))
    return table, rf"(?<![\w])(?:{body})(?![\w])"


def _confidence(num: str, pct: str | None) -> float | None:
    value = float(num)
    if pct or value > 1.0:
        value /= 100.0
    return value if 0.0 <= value <= 1.0 else None


def _spread(options: Sequence[str], chosen: str, conf: float) -> dict[str, float]:
    rest = [o for o in options if o != chosen]
    share = (1.0 - conf) / len(rest) if rest else 0.0
    return {o: round(conf if o == chosen else share, 9) for o in options}


def parse_choice(text: str | None, options: Sequence[str], *,
                 bare_confidence: float | None = 1.0) -> dict[str, float] | None:
    """Probabilities over `options` from a reply like "Debater_A | 73%", or None if unparseable.

    Accepted shapes (the last one in the text wins, since replies often reason first):
    `OPTION | 73%`, `OPTION: 0.73`, `OPTION (73%)`, `73% OPTION`, `73% confident in OPTION`.
    A reply that names exactly one option and no confidence gets `bare_confidence` (None makes
    such replies unparseable); a confidence outside 0-100% makes the reply unparseable.
    Options may be written with spaces ("Debater A") or, when unambiguous, by their last part.
    """
    if not text or not options:
        return None
    table, opt = _aliases(options)
    after = re.compile(rf"({opt})\s*([|:=,\-–—(]|(?i:with|at))?\s*{_NUM}")
    before = re.compile(rf"{_NUM}\s*(?i:(?:confidence|confident|sure|certain|chance|probability)\s*)?"
                        rf"(?i:(?:that|in|for|on|of|it'?s|it\s+is)\s*)?(?i:the\s+answer\s+is\s+)?({opt})")
    found: list[tuple[int, str, float | None]] = []
    for m in after.finditer(text):
        sep, num, pct = m.group(2), m.group(3), m.group(4)
        # a bare number counts only as a percentage, a 0-1 decimal, or after "|" ("A, 2 reasons" is no vote)
        if pct or "." in num or (sep or "").strip() == "|":
            found.append((m.start(), table[_key(m.group(1))], _confidence(num, pct)))
    for m in before.finditer(text):
        if m.group(2):
            found.append((m.start(), table[_key(m.group(3))], _confidence(m.group(1), m.group(2))))
    if found:
        _, chosen, conf = max(found, key=lambda f: f[0])
        return None if conf is None else _spread(options, chosen, conf)
    named = {table[_key(m.group(0))] for m in re.finditer(opt, text)}
    if len(named) == 1 and bare_confidence is not None:
        return _spread(options, named.pop(), bare_confidence)
    return None


def normalize_probs(probs: dict[str, float] | None, options: Sequence[str]) -> dict[str, float] | None:
    """Validated probabilities over exactly `options` (missing ones get 0), or None if unusable."""
    if not probs:
        return None
    if any(k not in options for k in probs):
        return None
    values = {o: float(probs.get(o, 0.0)) for o in options}
    if any(not math.isfinite(v) or v < 0 for v in values.values()):
        return None
    total = sum(values.values())
    if total <= 0:
        return None
    return {o: v / total for o, v in values.items()}


def probs_from_logprobs(logprobs: Sequence[float], options: Sequence[str]) -> dict[str, float]:
    """Softmax over the options' log-probabilities (as returned by `Model.score`)."""
    if len(logprobs) != len(options):
        raise ValueError(f"{len(logprobs)} scores for {len(options)} options")
    finite = [lp for lp in logprobs if math.isfinite(lp)]
    if not finite:
        return {o: 1.0 / len(options) for o in options}
    top = max(finite)
    ex = [math.exp(lp - top) if math.isfinite(lp) else 0.0 for lp in logprobs]
    z = sum(ex)
    return {o: e / z for o, e in zip(options, ex, strict=True)}


def parse_answer_choice(text: str, answers: list[str]) -> int | None:
    """Index (0 = A, 1 = B) of the answer a debater chose, or None if not exactly one is named."""
    probs = parse_choice(text, ["Answer_A", "Answer_B"], bare_confidence=1.0)
    if probs is not None and max(probs.values()) > 0.5:
        return max(range(2), key=lambda i: probs[("Answer_A", "Answer_B")[i]])
    low = text.lower()
    hits = [i for i, a in enumerate(answers) if a.strip().lower() and a.strip().lower() in low]
    return hits[0] if len(hits) == 1 else None
