"""Tournament schedules: which agents play which instances, as deterministic EpisodeJobs.

Seeds are derived from (run seed, instance, repeat[, swiss round]) — never from a job's position
— so adding matchups, sharding or resuming never changes what an episode plays, and every matchup
meets the same randomness on the same question (paired comparisons). Participants fill the
game's non-judge seats in order; the judge (or a panel of judges) fills every judge seat; a
format with one non-judge seat (consultancy) or none (naive judge) just seats fewer agents.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparring.engine.episode import EpisodeJob
from sparring.engine.loader import Experiment, panel_name
from sparring.records.record import EpisodeRecord
from sparring.stable_json import stable_dumps

Matchup = tuple[str, ...]


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from JSON-able parts (stable across Python versions and processes)."""
    blob = stable_dumps(list(parts)).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF


def matchup_name(agents: Matchup, judges: list[str]) -> str:
    if agents:
        return " vs ".join(agents)
    return f"judge:{panel_name(judges)}" if judges else "solo"


def seats_for(exp: Experiment, agents: Matchup) -> dict[str, str]:
    seats = dict(zip(exp.seat_players, agents, strict=True))
    if exp.judges:
        judge = panel_name(exp.judges)
        seats.update({p: judge for p in exp.judge_players})
    return seats


def base_matchups(exp: Experiment) -> list[Matchup]:
    """Matchups of every type except swiss (paired per round) and replicate (from the source)."""
    t, k, parts = exp.config.tournament, len(exp.seat_players), exp.participants
    if k == 0:
        return [()]
    if t.type == "self_play":
        return [(a,) * k for a in parts]
    if t.type == "custom":
        return [tuple(m) for m in t.matchups]
    if k == 1:
        return [(a,) for a in parts]
    combos = itertools.combinations_with_replacement if t.self_pairs else itertools.combinations
    return [tuple(c) for c in combos(parts, k)]


@dataclass
class Schedule:
    """Jobs of one experiment over its instances. Swiss schedules have `rounds` > 1 and pair each
    round from the stored results of the previous ones; every other type has one round."""

    exp: Experiment
    instance_ids: list[str]
    replicate_jobs: list[EpisodeJob] | None = None
    rounds: int = 1
    _swiss_pairs: dict[int, list[Matchup]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = self.exp.config.tournament
        if t.type == "swiss":
            if len(self.exp.seat_players) != 2:
                raise self.exp.error("swiss pairs two participants per episode; this game seats "
                                     f"{len(self.exp.seat_players)}", "tournament.type")
            self.rounds = t.rounds
        if t.type == "capped":
            n = len(base_matchups(self.exp))
            if len(self.instance_ids) < n:
                raise self.exp.error(f"capped gives each of the {n} matchups a disjoint slice of the "
                                     f"instances but only {len(self.instance_ids)} are loaded",
                                     "tournament.type")

    @property
    def swiss(self) -> bool:
        return self.exp.config.tournament.type == "swiss"

    def jobs(self, round: int = 1, results: Mapping[str, EpisodeRecord] | None = None) -> list[EpisodeJob]:
        """Jobs of `round` (1-based). Swiss rounds > 1 need the results of earlier rounds."""
        t = self.exp.config.tournament
        if t.type == "replicate":
            return list(self.replicate_jobs or [])
        if not self.swiss:
            ms = base_matchups(self.exp)
            if t.type == "capped":
                slices = _slices(self.instance_ids, len(ms))
                return [j for m, ids in zip(ms, slices, strict=True) for j in self._jobs_for(m, ids)]
            return [j for m in ms for j in self._jobs_for(m, self.instance_ids)]
        return [j for m in self.swiss_pairs(round, results or {}) for j in
                self._jobs_for(m, self.instance_ids, swiss_round=round)]

    def _jobs_for(self, agents: Matchup, instance_ids: list[str], swiss_round: int | None = None) -> list[EpisodeJob]:
        exp, t = self.exp, self.exp.config.tournament
        seats = seats_for(exp, agents)
        name = matchup_name(agents, exp.judges)
        run_seed = exp.config.run.seed
        flips = (False, True) if t.flip else (False,)
        meta = {} if swiss_round is None else {"round": swiss_round}
        out = []
        for iid in instance_ids:
            for r in range(t.repeats):
                parts: tuple = (run_seed, iid, r) if swiss_round is None else (run_seed, iid, r, "swiss", swiss_round)
                seed = derive_seed(*parts)
                for flip in flips:
                    out.append(EpisodeJob(experiment=exp.name, instance_id=iid, seats=seats, seed=seed,
                                          repeat=r, flip=flip, matchup=name, meta=meta))
        return out

    # -- swiss ---------------------------------------------------------------------------------
    def swiss_pairs(self, round: int, results: Mapping[str, EpisodeRecord]) -> list[Matchup]:
        """Pairs of `round`: seeded random in round 1, then down the standings (Bradley-Terry
        rating of the results so far, then points, then mean reward), avoiding rematches where
        possible; an odd participant out gets a bye."""
        if round in self._swiss_pairs:
            return self._swiss_pairs[round]
        parts = list(self.exp.participants)
        history: list[Matchup] = []
        for k in range(1, round):
            history += self.swiss_pairs(k, results)
        if round == 1:
            order = parts[:]
            random.Random(derive_seed(self.exp.config.run.seed, "swiss-round-1")).shuffle(order)
        else:
            table = self.standings(round - 1, results)
            order = sorted(parts, key=lambda a: (-table[a]["rating"], -table[a]["points"],
                                                 -table[a]["mean_reward"], parts.index(a)))
        pairs = _pair(order, {frozenset(p) for p in history}, _byes(history, parts), round)
        self._swiss_pairs[round] = pairs
        return pairs

    def standings(self, upto: int, results: Mapping[str, EpisodeRecord]) -> dict[str, dict[str, float]]:
        """Agent -> rating (Bradley-Terry, Elo scale, fitted on every episode of swiss rounds
        1..upto: higher reward than the opponent = win, equal = draw), points (1 per win, 0.5 per
        draw) and mean reward. Failed or missing episodes count for nothing."""
        from sparring.stats.ratings import Comparison, bradley_terry

        parts = self.exp.participants
        points = {a: 0.0 for a in parts}
        rewards: dict[str, list[float]] = {a: [] for a in parts}
        comparisons: list[Comparison] = []
        players = self.exp.seat_players
        for k in range(1, upto + 1):
            for job in self.jobs(k, results):
                rec = results.get(job.id)
                if rec is None or rec.outcome is None or rec.status == "failed":
                    continue
                (pa, a), (pb, b) = [(p, job.seats[p]) for p in players]
                ra, rb = rec.outcome.rewards.get(pa, 0.0), rec.outcome.rewards.get(pb, 0.0)
                rewards[a].append(ra)
                rewards[b].append(rb)
                if a == b:
                    continue
                score = 1.0 if ra > rb else 0.5 if ra == rb else 0.0
                points[a] += score
                points[b] += 1.0 - score
                comparisons.append(Comparison(a, b, score, group=job.id))
        table = bradley_terry(comparisons, players=parts, n_bootstrap=0)
        # no comparison yet (e.g. only byes): the anchor, i.e. an average player
        rating = {a: r if r == r else table.anchor for a, r in table.ratings.items()}
        return {a: {"rating": rating.get(a, table.anchor), "points": points[a],
                    "mean_reward": sum(rewards[a]) / len(rewards[a]) if rewards[a] else 0.0} for a in parts}

    # -- description ---------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Counts for --dry-run: episodes per matchup (round 1 only for swiss)."""
        jobs = self.jobs(1, {})
        per: dict[str, int] = {}
        for j in jobs:
            per[j.matchup] = per.get(j.matchup, 0) + 1
        total = len(jobs) * (self.rounds if self.swiss else 1)
        return {"episodes": total, "instances": len(self.instance_ids), "matchups": per,
                "rounds": self.rounds}


def _slices(ids: list[str], n: int) -> list[list[str]]:
    """n disjoint contiguous slices of (almost) equal size covering `ids`."""
    q, r = divmod(len(ids), n)
    out, pos = [], 0
    for i in range(n):
        size = q + (1 if i < r else 0)
        out.append(ids[pos : pos + size])
        pos += size
    return out


def _byes(history: list[Matchup], parts: list[str]) -> set[str]:
    played: dict[str, int] = {}
    for m in history:
        for a in set(m):
            played[a] = played.get(a, 0) + 1
    rounds = max(played.values(), default=0)
    return {a for a in parts if played.get(a, 0) < rounds}


def _pair(order: list[str], met: set[frozenset], had_bye: set[str], round: int) -> list[Matchup]:
    """Greedy Swiss pairing down the standings; the lowest-ranked player without a bye sits out."""
    order = order[:]
    if len(order) % 2:
        out = next((a for a in reversed(order) if a not in had_bye), order[-1])
        order.remove(out)
    pairs: list[Matchup] = []
    while order:
        a = order.pop(0)
        b = next((x for x in order if frozenset((a, x)) not in met), order[0])
        order.remove(b)
        pairs.append((a, b))
    return pairs
