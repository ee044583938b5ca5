"""Scheduler counts for every tournament type, seating per format, seeds, shards."""

from __future__ import annotations

from collections import Counter

import pytest

from sparring.engine.episode import EpisodeJob
from sparring.engine.loader import load_config, resolve
from sparring.engine.schedule import Schedule
from sparring.engine.shard import in_shard, parse_shard, select
from sparring.errors import ConfigError
from sparring.gameapi.game import Outcome
from sparring.records.record import EpisodeRecord, SeatRecord, episode_id

IDS = [f"q{i}" for i in range(6)]


def schedule(make_config, patch=None, ids=IDS):
    cfg, p = load_config(make_config(patch))
    return Schedule(resolve(cfg, p), list(ids))


def pairs(jobs):
    return Counter(j.matchup for j in jobs)


def test_self_play(make_config):
    jobs = schedule(make_config, {"tournament": {"type": "self_play", "flip": False}}).jobs()
    assert len(jobs) == 3 * 6
    assert all(j.seats["A"] == j.seats["B"] for j in jobs)
    assert pairs(jobs) == {"alice vs alice": 6, "bob vs bob": 6, "carol vs carol": 6}


def test_round_robin_flip_repeats_self_pairs(make_config):
    s = schedule(make_config, {"tournament": {"type": "round_robin", "flip": True, "repeats": 2}})
    jobs = s.jobs()
    assert len(jobs) == 3 * 6 * 2 * 2  # 3 pairs x 6 questions x 2 repeats x 2 seatings
    assert set(pairs(jobs)) == {"alice vs bob", "alice vs carol", "bob vs carol"}
    assert Counter(j.flip for j in jobs) == {False: 36, True: 36}
    assert len({j.id for j in jobs}) == len(jobs)
    # a flipped job shares everything with its mirror but the flag (same seed: same randomness)
    by_key = {(j.matchup, j.instance_id, j.repeat, j.flip): j for j in jobs}
    for (m, i, r, f), j in by_key.items():
        assert by_key[(m, i, r, not f)].seed == j.seed
    s2 = schedule(make_config, {"tournament": {"type": "round_robin", "self_pairs": True}})
    assert len(set(pairs(s2.jobs()))) == 6  # 3 pairs + 3 self pairs
    assert len(s2.jobs()) == 6 * 6 * 2


def test_custom_matchups_keep_seat_order(make_config):
    jobs = schedule(make_config, {"tournament": {"type": "custom", "flip": False,
                                                 "matchups": [["bob", "alice"], ["carol", "carol"]]}}).jobs()
    assert pairs(jobs) == {"bob vs alice": 6, "carol vs carol": 6}
    assert all(j.seats["A"] == "bob" for j in jobs if j.matchup == "bob vs alice")


def test_capped_gives_disjoint_covering_slices(make_config):
    ids = [f"q{i}" for i in range(10)]
    jobs = schedule(make_config, {"tournament": {"type": "capped", "flip": True}}, ids).jobs()
    per = {}
    for j in jobs:
        per.setdefault(j.matchup, set()).add(j.instance_id)
    assert len(per) == 3
    slices = list(per.values())
    assert sorted(len(s) for s in slices) == [3, 3, 4]
    assert set().union(*slices) == set(ids)
    assert all(not (a & b) for i, a in enumerate(slices) for b in slices[i + 1:])
    assert len(jobs) == 10 * 2
    with pytest.raises(ConfigError, match="capped"):
        schedule(make_config, {"tournament": {"type": "capped"}}, ["q0", "q1"])


def test_seeds_depend_on_instance_and_repeat_not_position(make_config):
    small = schedule(make_config, {"tournament": {"participants": ["alice", "bob"]}}).jobs()
    big = schedule(make_config).jobs()
    assert {j.id: j.seed for j in small}.items() <= {j.id: j.seed for j in big}.items()
    # every matchup meets the same seed on the same question/repeat (paired comparisons)
    seeds = {}
    for j in big:
        seeds.setdefault((j.instance_id, j.repeat), set()).add(j.seed)
    assert all(len(v) == 1 for v in seeds.values())
    other = schedule(make_config, {"run": {"seed": 99}}).jobs()
    assert not {j.id for j in other} & {j.id for j in big}


@pytest.mark.parametrize("patch", [{"tournament": {"type": "round_robin", "flip": True, "repeats": 2}},
                                   {"tournament": {"type": "swiss", "rounds": 2}}])
def test_scheduled_ids_are_episode_ids(make_config, patch):
    """The schedule fills each job's id the cheap way; it must be exactly `episode_id` of the job
    (stored runs are resumed by id)."""
    jobs = schedule(make_config, patch, ids=["q0", "naïve \"id\"", "q2"]).jobs(1, {})
    assert jobs
    for j in jobs:
        assert j.id == episode_id(j.experiment, j.instance_id, j.seats, j.seed, j.repeat, j.flip)
        fresh = EpisodeJob(**j.model_dump())
        assert fresh.id == j.id and fresh == j


def test_episode_ids_are_pinned_to_their_stored_encoding():
    """Stored runs resume by id: the id of a known job must never change."""
    assert episode_id("exp", "q0", {"B": "bob", "A": "alice"}, 7, 0, False) == "5b3f5bafa81a99f1"


def test_seating_adapts_to_formats(make_config):
    consult = schedule(make_config, {"game_args": {"speakers": 1}, "tournament": {"type": "round_robin"}}).jobs()
    assert pairs(consult) == {"alice": 12, "bob": 12, "carol": 12}
    assert all(set(j.seats) == {"A", "judge"} for j in consult)
    empty = schedule(make_config, {"game_args": {"speakers": 0}, "=tournament": {"type": "self_play"}}).jobs()
    assert pairs(empty) == {"judge:judge": 6}
    assert all(j.seats == {"judge": "judge"} for j in empty)
    unjudged = schedule(make_config, {"game_args": {"judged": False}, "tournament": {"judges": []}}).jobs()
    assert all("judge" not in j.seats for j in unjudged)


def test_panel_fills_the_judge_seat(make_config):
    jobs = schedule(make_config, {"agents": {"j2": {"role": "judge", "model": "t-fixed"}},
                                  "tournament": {"judges": ["judge", "j2"]}}).jobs()
    assert all(j.seats["judge"] == "judge+j2" for j in jobs)


def _result(job: EpisodeJob, rewards: dict[str, float]) -> EpisodeRecord:
    return EpisodeRecord(id=job.id, experiment=job.experiment, game="toy", instance_id=job.instance_id,
                         seats={p: SeatRecord(agent=a, model="m", role="r") for p, a in job.seats.items()},
                         seed=job.seed, status="complete", outcome=Outcome(rewards=rewards))


def test_swiss_pairs_by_standing_and_avoids_rematches(make_config):
    patch = {"agents": {"dave": {"role": "debater", "model": "t-fixed"}},
             "tournament": {"type": "swiss", "rounds": 3, "flip": False}}
    s = schedule(make_config, patch, ["q0", "q1"])
    strength = {"alice": 4, "bob": 3, "carol": 2, "dave": 1}
    results = {}
    r1 = s.swiss_pairs(1, results)
    assert len(r1) == 2 and {a for p in r1 for a in p} == set(strength)
    for rnd in (1, 2):
        for job in s.jobs(rnd, results):
            a, b = job.seats["A"], job.seats["B"]
            results[job.id] = _result(job, {"A": float(strength[a] > strength[b]), "B": float(strength[b] > strength[a])})
    r2 = s.swiss_pairs(2, results)
    # after round 1 the two winners meet, and the two losers
    winners = {max(p, key=strength.get) for p in r1}
    assert {frozenset(p) for p in r2} == {frozenset(winners), frozenset(set(strength) - winners)}
    r3 = s.swiss_pairs(3, results)
    assert not {frozenset(p) for p in r3} & {frozenset(p) for p in r1 + r2}  # no rematch
    table = s.standings(2, results)
    assert table["alice"]["points"] == 4.0 and table["dave"]["points"] == 0.0  # 2 wins x 2 questions
    assert table["alice"]["rating"] > table["bob"]["rating"] > table["dave"]["rating"]
    # swiss rounds get their own seeds, so the same pair on the same question is a new episode
    assert not {j.id for j in s.jobs(1, results)} & {j.id for j in s.jobs(3, results)}


def test_swiss_odd_count_gets_a_bye(make_config):
    s = schedule(make_config, {"tournament": {"type": "swiss", "rounds": 3, "flip": False}}, ["q0"])
    results = {}
    sitting_out = []
    for rnd in (1, 2, 3):
        ps = s.swiss_pairs(rnd, results)
        assert len(ps) == 1
        sitting_out += list({"alice", "bob", "carol"} - set(ps[0]))
        for job in s.jobs(rnd, results):
            results[job.id] = _result(job, {"A": 1.0, "B": 0.0})
    assert sorted(sitting_out) == ["alice", "bob", "carol"]  # everyone sits out once


def test_shard_partition_is_disjoint_and_covering(make_config):
    jobs = schedule(make_config, {"tournament": {"repeats": 3}}).jobs()
    parts = [select(jobs, (i, 4)) for i in range(4)]
    ids = [j.id for p in parts for j in p]
    assert len(ids) == len(set(ids)) == len(jobs)
    assert all(len(p) > 0 for p in parts)
    assert all(in_shard(j.id, (i, 4)) for i, p in enumerate(parts) for j in p)
    assert parse_shard("1/4") == (1, 4) and parse_shard(None) is None
    for bad in ("4/4", "x", "1/0", "-1/2"):
        with pytest.raises(ConfigError, match="shard"):
            parse_shard(bad)


def test_describe_counts(make_config):
    d = schedule(make_config, {"tournament": {"repeats": 2}}).describe()
    assert d["episodes"] == 3 * 6 * 2 * 2 and d["matchups"]["alice vs bob"] == 24
