"""Which alternatives become DPO pairs (`sparring.train.export.contrast`): the best against each
or against its worst sibling, a minimum value gap, near-identical pairs dropped, ties broken by a
seeded shuffle; and the summary of a pair set the loop prints before training."""

from __future__ import annotations

import json

import pytest

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.train.export import ExportFilters, dpo_rows
from sparring.train.export.contrast import (
    PairRule,
    pair_line,
    pair_summary,
    pick_pairs,
    prefix_share,
    similarity,
)

QUOTE = "The answer is A. The story says: <quote>{}</quote>"


def test_each_pairs_the_best_with_every_lower_sibling_and_worst_only_with_the_lowest():
    values = {0: 0.9, 1: 0.5, 2: 0.1, 3: 0.85}
    texts = {i: f"reply {i}" for i in values}
    assert pick_pairs(values, texts, PairRule(), "p") == [(0, 1), (0, 2), (0, 3)]
    assert pick_pairs(values, texts, PairRule(rejected="worst"), "p") == [(0, 2)]
    assert pick_pairs(values, texts, PairRule(min_gap=0.10), "p") == [(0, 1), (0, 2)]  # 0.05 below: dropped
    assert pick_pairs({0: 0.5}, {0: "x"}, PairRule(), "p") == []
    # the best's own text is never its rejected reply (the same reply valued twice)
    assert pick_pairs({0: 0.9, 1: 0.2}, {0: "same", 1: "same"}, PairRule(), "p") == []


def test_near_identical_pairs_are_dropped_before_the_worst_is_chosen():
    best = QUOTE.format("Ann took the boat across the lake at dawn")
    near = QUOTE.format("Ann took the boat across the lake at dusk")  # one word swapped
    far = "B. Nothing in the story supports A, and the boat never left the shore."
    assert similarity(best, near) > 0.9 > similarity(best, far)
    assert prefix_share(best, near) > 0.8 and prefix_share(best, far) == 0.0
    assert similarity(best, best) == 1.0 and prefix_share("", "") == 0.0
    values, texts = {0: 0.9, 1: 0.1, 2: 0.4}, {0: best, 1: near, 2: far}
    assert pick_pairs(values, texts, PairRule(rejected="worst"), "p") == [(0, 1)]
    assert pick_pairs(values, texts, PairRule(rejected="worst", max_similarity=0.9), "p") == [(0, 2)]
    assert pick_pairs(values, texts, PairRule(max_similarity=0.9), "p") == [(0, 2)]


def test_ties_are_broken_by_the_seeded_shuffle_not_by_record_order():
    texts = {i: f"reply {i}" for i in range(6)}
    tied = {i: 0.8 if i < 3 else 0.2 for i in range(6)}
    shuffled = dict(reversed(list(tied.items())))  # the same alternatives read in another order
    picks = {seed: pick_pairs(tied, texts, PairRule(rejected="worst", seed=seed), "tree-1:0:[]") for seed in range(12)}
    for seed, pairs in picks.items():
        assert pick_pairs(shuffled, texts, PairRule(rejected="worst", seed=seed), "tree-1:0:[]") == pairs
        assert len(pairs) == 1 and tied[pairs[0][0]] == 0.8 and tied[pairs[0][1]] == 0.2
    assert len({pairs[0][0] for pairs in picks.values()}) > 1  # every tied best gets its turn
    assert len({pairs[0][1] for pairs in picks.values()}) > 1
    # the same seed at another branch point draws again
    keys = {pick_pairs(tied, texts, PairRule(rejected="worst"), f"tree-{i}:0:[]")[0] for i in range(12)}
    assert len(keys) > 1


BRANCHED = {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
            "dataset": {"name": "generated", "split": "all", "limit": 3},
            "agents": {"d": {"role": "debater", "model": "m"}, "j": {"role": "judge", "model": "jm"}},
            "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]},
            "branch": {"target": "d", "k": 4, "mode": "half", "depth": 1}}


@pytest.fixture(scope="module")
def branched():
    texts = [QUOTE.format("Ann took the boat"), QUOTE.format("Ann took the car"), "B is right, A is not.",
             "I argue for the answer the story gives, which is plainly the first one."]
    models = {"m": ScriptedModel("m", mode="random", texts=texts, seed=3),
              "jm": ScriptedModel("jm", score_mode="random", seed=1)}
    with Arena.from_config(BRANCHED, models=models) as arena:
        return arena.play(arena.jobs())


def test_exported_pairs_follow_the_rule_and_say_how_alike_they_are(branched):
    each = dpo_rows(branched, ExportFilters(agent="d"))
    worst = dpo_rows(branched, ExportFilters(agent="d"), rejected="worst")
    assert each and worst and len(worst) < len(each)
    points = {(r["meta"]["tree"], r["meta"]["branch_depth"]) for r in worst}
    assert len(points) == len(worst)  # one pair per branch point
    for row in worst:
        same_point = [r for r in each if (r["meta"]["tree"], r["meta"]["branch_depth"]) ==
                      (row["meta"]["tree"], row["meta"]["branch_depth"])]
        assert row["margin"] == pytest.approx(max(r["margin"] for r in same_point))  # the lowest-valued sibling
    for row in each:
        m = row["meta"]
        assert m["siblings"] >= 2
        assert m["similarity"] == pytest.approx(similarity(row["chosen"][0]["content"], row["rejected"][0]["content"]),
                                                abs=1e-4)
        assert 0.0 <= m["prefix_share"] <= 1.0
    alike = dpo_rows(branched, ExportFilters(agent="d"), max_similarity=0.5)
    assert all(r["meta"]["similarity"] <= 0.5 for r in alike) and len(alike) < len(each)
    # the same records and seed give the same pairs, whatever order they are read in
    again = dpo_rows(list(reversed(branched)), ExportFilters(agent="d"), rejected="worst")
    assert sorted(json.dumps(r, sort_keys=True) for r in again) == sorted(json.dumps(r, sort_keys=True) for r in worst)


def test_the_summary_says_length_gap_likeness_and_spread(branched):
    rows = dpo_rows(branched, ExportFilters(agent="d"))
    s = pair_summary(rows)
    assert s["questions"] == len({r["meta"]["instance_id"] for r in rows})
    assert 0 < s["top_question_share"] <= 1 and 0 < s["top_seat_share"] <= 1
    assert s["similarity"] == pytest.approx(sum(r["meta"]["similarity"] for r in rows) / len(rows), abs=1e-3)
    assert 0 <= s["near_identical"] <= 1 and 0 <= s["prefix_share"] <= 1
    assert s["value_gap"] == pytest.approx(sum(r["margin"] for r in rows) / len(rows))
    line = pair_line(len(rows), s)
    assert f"{len(rows)} pairs over {len({r['meta']['instance_id'] for r in rows})} question(s)" in line
    assert "near-identical" in line and "shared opening" in line
    assert pair_summary([]) == {} and pair_line(0, {}) == "0 pairs"


@pytest.mark.parametrize("export, key", [({"rejected": "lowest"}, "rejected"), ({"held_back": 1.0}, "held_back"),
                                          ({"max_similarity": 1.5}, "max_similarity")])
def test_bad_pair_settings_fail_at_load_naming_the_file_and_key(tmp_path, export, key):
    import yaml

    from sparring.errors import SparringError
    from sparring.train.loop.config import load_loop

    loop = {"alias": "x", "iterations": 1, "policy_agent": "policy", "export": export,
            "selfplay": {"game": "debate", "agents": {"policy": {"role": "debater", "model": "ignored"}},
                         "tournament": {"type": "self_play", "participants": ["policy"]}},
            "train": {"method": "dpo", "model": "smollm2-135m"},
            "evaluation": {"dataset": {"name": "generated", "split": "test"}}}
    path = tmp_path / "bad-pairs.yaml"
    path.write_text(yaml.safe_dump(loop))
    with pytest.raises(SparringError) as info:
        load_loop(str(path))
    assert "bad-pairs.yaml" in str(info.value) and key in str(info.value)


def test_hold_back_draws_a_seeded_share_and_keeps_at_least_one_of_each():
    from sparring.train.export.contrast import hold_back

    rows = [{"i": i} for i in range(10)]
    kept, held = hold_back(rows, 0.2, seed=3)
    assert len(held) == 2 and len(kept) == 8 and sorted(r["i"] for r in kept + held) == list(range(10))
    assert hold_back(rows, 0.2, seed=3) == (kept, held) and hold_back(rows, 0.2, seed=4) != (kept, held)
    two_kept, two_held = hold_back(rows[:2], 0.01)  # a tiny share still holds one back, and keeps one
    assert len(two_kept) == len(two_held) == 1
    assert hold_back(rows, 0.0) == (rows, []) and hold_back(rows[:1], 0.5) == (rows[:1], [])
