"""DPO pairs from branched rollouts: sibling alternatives at a branch point were shown identical
messages; each alternative's value is the mean outcome for the branching player over the leaves
of its subtree (judge probability for its side, negotiation reward).

Leaf values: a completed leaf counts with the reward its outcome gives the branching player. An
aborted leaf (too many invalid replies, a debate that ended without a verdict) counts with
`abort_value`, by default 0.0, the game's abort reward (Deal or No Deal gives both players 0 on
an abort; an aborted debate has no verdict, so no probability for either side), whatever its
record carries; `abort_value=None` leaves aborted leaves out of the means. A failed leaf (an
engine error, no outcome) never counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sparring.records.record import CallRecord, EpisodeRecord
from sparring.train.export.contrast import PairRule, likeness, pick_pairs
from sparring.train.export.conversation import apply_rule, meta, rejection_marks, reply_text
from sparring.train.export.filters import ExportFilters
from sparring.train.export.targets import pair_row


def leaf_value(leaf: EpisodeRecord, player: str, abort_value: float | None = 0.0) -> float | None:
    """The value of one leaf for `player` (None: left out of the subtree mean)."""
    if leaf.status == "failed" or leaf.outcome is None:
        return None if leaf.status == "failed" or abort_value is None else abort_value
    if leaf.status == "aborted" or leaf.outcome.status == "aborted":
        return abort_value
    return float(leaf.outcome.rewards.get(player, 0.0))


def branch_pairs(records: Iterable[EpisodeRecord], f: ExportFilters, *, target: Any = "prob", gamma: float = 1.0,
                 rule: PairRule | None = None, abort_value: float | None = 0.0) -> list[dict[str, Any]]:
    """The pairs of every branch point (`rule`: which of its alternatives pair up, `contrast.py`)."""
    rule = rule or PairRule()
    trees: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for rec in records:
        if rec.tree and rec.status != "failed":
            trees[rec.tree["id"]].append(rec)
    rows: list[dict[str, Any]] = []
    for leaves in trees.values():
        depth = max(len(leaf.tree["path"]) for leaf in leaves if leaf.tree)
        for d in range(depth):
            by_parent: dict[tuple[int, ...], dict[int, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
            for leaf in leaves:
                path = leaf.tree["path"] if leaf.tree else []
                if len(path) > d:
                    by_parent[tuple(path[:d])][path[d]].append(leaf)
            for parent, children in by_parent.items():
                rows.extend(_pairs_at(children, d, list(parent), f, target, gamma, rule, abort_value))
    return rows


def _branch_call(leaf: EpisodeRecord, d: int) -> CallRecord | None:
    return next((c for c in leaf.calls if c.meta.get("branch") == d and c.op == "generate"), None)


def _pairs_at(children: dict[int, list[EpisodeRecord]], d: int, parent: list[int], f: ExportFilters, target: Any,
              gamma: float, rule: PairRule, abort_value: float | None) -> list[dict[str, Any]]:
    if len(children) < 2:
        return []
    alts: dict[int, tuple[str, float, CallRecord, EpisodeRecord]] = {}
    for i, leaves in children.items():
        call = _branch_call(leaves[0], d)
        if call is None or call.rejected:
            continue
        reply = reply_text(call)
        player = call.player
        seat = leaves[0].seats.get(player)
        if reply is None or seat is None or (f.role and seat.role != f.role) or (f.agent and seat.agent != f.agent):
            continue
        values = [v for v in (leaf_value(leaf, player, abort_value) for leaf in leaves) if v is not None]
        if not values:
            continue
        alts[i] = (reply, sum(values) / len(values), call, leaves[0])
    if len(alts) < 2:
        return []
    tree = next(iter(alts.values()))[3].tree or {}
    pairs = pick_pairs({i: a[1] for i, a in alts.items()}, {i: a[0] for i, a in alts.items()}, rule,
                       key=f"{tree.get('id')}:{d}:{parent}")
    rows = []
    for best, i in pairs:
        reply_c, v_c, call, leaf = alts[best]
        index = next(k for k, c in enumerate(leaf.calls) if c is call)
        prompt = apply_rule(call.messages, rejection_marks(leaf, call.player).get(index, set()), f.after_rejection)
        reply_r, v_r = alts[i][0], alts[i][1]
        rows.append(pair_row(prompt, reply_c, reply_r, v_c, v_r, target, gamma,
                             meta(leaf, call.player, source="branch", branch_depth=d, branch_parent=parent,
                                  tree=leaf.tree["id"] if leaf.tree else None, siblings=len(alts),
                                  **likeness(reply_c, reply_r))))
    return rows
