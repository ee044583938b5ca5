"""Which alternatives of one prompt become DPO pairs, and how alike a pair's two replies are.

A pair whose replies share most of their tokens teaches DPO little: the shared tokens cancel in
the margin, so the loss can be met by lowering both replies, and what they share (a debater's
quote) falls with them (likelihood displacement: Razin et al. 2024, arXiv 2410.08847, who drop
pairs the model sees as alike). `PairRule` says which pairs one prompt's alternatives give:

- `rejected="each"`: the best against every alternative at least `min_gap` below it (one pair per
  alternative); `"worst"`: the best against its lowest-valued alternative only, as the NYU debate
  code's preference loader does (there with a minimum judge gap of 0.10);
- ties for best (and for worst) are broken by a shuffle seeded with `seed` and the prompt's key
  (the branch point, or the turn), not by the order the records were written in;
- `max_similarity`: pairs whose two replies are more alike than this (`similarity`, 0..1) are
  dropped before the worst is chosen, so "worst" is the lowest-valued reply that is not a near copy.

`pair_summary` describes a set of pairs (lengths, value gap, likeness, spread) before training.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from rapidfuzz.distance import Indel

K = TypeVar("K", int, str)
Rejected = Literal["each", "worst"]


@dataclass(frozen=True)
class PairRule:
    min_gap: float = 0.0
    rejected: Rejected = "each"
    max_similarity: float | None = None
    seed: int = 0


def similarity(a: str, b: str) -> float:
    """How alike two replies are, 0 (no word in common) to 1 (the same words in the same order):
    the normalised Indel similarity of their word sequences (rapidfuzz)."""
    return float(Indel.normalized_similarity(a.split(), b.split()))


def prefix_share(a: str, b: str) -> float:
    """The share of the longer reply's words that both replies open with."""
    wa, wb = a.split(), b.split()
    n = 0
    for x, y in zip(wa, wb, strict=False):
        if x != y:
            break
        n += 1
    return n / max(1, len(wa), len(wb))


def likeness(a: str, b: str) -> dict[str, float]:
    """What every pair's `meta` says of how alike its two replies are."""
    return {"similarity": round(similarity(a, b), 4), "prefix_share": round(prefix_share(a, b), 4)}


def pick_pairs(values: Mapping[K, float], texts: Mapping[K, str], rule: PairRule, key: str) -> list[tuple[K, K]]:
    """(chosen, rejected) keys among one prompt's alternatives (`values`: each one's value, `texts`:
    its reply); `key` names the prompt for the seeded tie-break. Alternatives with the best's text
    are never its rejected reply."""
    if len(values) < 2:
        return []
    order = sorted(values)
    random.Random(f"{rule.seed}:{key}").shuffle(order)
    best = max(order, key=lambda k: values[k])  # the first of the tied best in the seeded order
    rejected = [k for k in order if k != best and texts[k] != texts[best]
                and values[best] - values[k] >= rule.min_gap
                and (rule.max_similarity is None or similarity(texts[best], texts[k]) <= rule.max_similarity)]
    if rule.rejected == "worst" and rejected:
        rejected = [min(rejected, key=lambda k: values[k])]  # the first of the tied worst
    return [(best, k) for k in sorted(rejected)]


NEAR_IDENTICAL = 0.9  # a pair at least this alike (word similarity) counts as near-identical


def pair_summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """What a set of DPO pairs looks like before anything trains on it: the words of each side (a
    length gap the loss can learn instead of the preference), the mean value gap, how alike the
    two replies are (mean word similarity, the share of near-identical pairs, the shared opening),
    and how the pairs spread over questions, answer sides and seats (one question, side or seat
    holding most pairs is a skew the policy learns)."""
    if not rows:
        return {}
    n = len(rows)

    def text(row: dict[str, Any], side: str) -> str:
        return " ".join(m["content"] for m in row[side])

    sims = [similarity(text(r, "chosen"), text(r, "rejected")) for r in rows]
    metas = [r.get("meta") or {} for r in rows]
    questions = Counter(m.get("instance_id") for m in metas)
    seats = Counter(m.get("seat") for m in metas)
    sides = [m["argued_correct"] for m in metas if m.get("argued_correct") is not None]
    out = {"chosen_words": sum(len(text(r, "chosen").split()) for r in rows) / n,
           "rejected_words": sum(len(text(r, "rejected").split()) for r in rows) / n,
           "value_gap": sum(float(r.get("margin", 0.0)) for r in rows) / n,
           "similarity": sum(sims) / n, "near_identical": sum(s >= NEAR_IDENTICAL for s in sims) / n,
           "prefix_share": sum(prefix_share(text(r, "chosen"), text(r, "rejected")) for r in rows) / n,
           "questions": float(len(questions)), "top_question_share": max(questions.values()) / n,
           "top_seat_share": max(seats.values()) / n}
    if sides:
        out["argued_correct_share"] = sum(sides) / len(sides)
    return out


def pair_line(n: int, s: dict[str, float]) -> str:
    """`pair_summary` in one line (the loop prints it at every iteration)."""
    if not s:
        return f"{n} pairs"
    side = f", argued the correct answer {s['argued_correct_share']:.0%}" if "argued_correct_share" in s else ""
    return (f"{n} pairs over {s['questions']:.0f} question(s) (the most from one: {s['top_question_share']:.0%}; "
            f"from one seat: {s['top_seat_share']:.0%}{side}); value gap {s['value_gap']:.3f}; words "
            f"{s['chosen_words']:.1f} chosen / {s['rejected_words']:.1f} rejected; word similarity "
            f"{s['similarity']:.2f} ({s['near_identical']:.0%} near-identical), shared opening {s['prefix_share']:.0%}")


def hold_back(rows: list[dict[str, Any]], share: float, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept, held back): `share` of the rows drawn with `seed` (at least one of each once there
    are two rows and a share above 0), both in their original order."""
    if share <= 0 or len(rows) < 2:
        return rows, []
    n = min(len(rows) - 1, max(1, round(share * len(rows))))
    held = set(random.Random(f"{seed}:held-back").sample(range(len(rows)), n))
    return [r for i, r in enumerate(rows) if i not in held], [r for i, r in enumerate(rows) if i in held]
