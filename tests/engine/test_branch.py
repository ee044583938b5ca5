"""Branched rollouts: a job plays a tree of episodes through the batched runner and the store;
DPO pairs come from sibling alternatives with subtree-mean values; runs resume tree by tree."""

from __future__ import annotations

import pytest

from sparring.engine.config import open_store
from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.records.reader import iter_records
from sparring.train.export import ExportFilters, dpo_rows

CONFIG = {"game": "debate", "game_args": {"format": "debate", "rounds": 2},
          "dataset": {"name": "generated", "split": "all", "limit": 2},
          "agents": {"d": {"role": "debater", "model": "m"}, "j": {"role": "judge", "model": "jm"}},
          "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]},
          "branch": {"target": "d", "k": 2, "mode": "half", "depth": 2}}


def models():
    return {"m": ScriptedModel("m", mode="random", texts=["A is right", "B is wrong", "The story says so"], seed=3),
            "jm": ScriptedModel("jm", score_mode="random", seed=1)}


def test_a_job_plays_a_tree_of_k_to_the_depth_leaves_with_shared_prefixes():
    with Arena.from_config(CONFIG, models=models()) as arena:
        jobs = arena.jobs()
        records = arena.play(jobs)
    assert len(records) == len(jobs) * 2 ** 2 and len({r.id for r in records}) == len(records)
    for job in jobs:
        leaves = [r for r in records if r.tree and r.tree["id"] == job.id]
        assert sorted(tuple(r.tree["path"]) for r in leaves) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        for r in leaves:  # the first branch call is shared by both leaves of a subtree
            first = next(c for c in r.calls if c.meta.get("branch") == 0)
            assert first.meta["alternative"] == r.tree["path"][0]
        siblings = [r for r in leaves if r.tree["path"][0] == 0]
        a = next(c for c in siblings[0].calls if c.meta.get("branch") == 1)
        b = next(c for c in siblings[1].calls if c.meta.get("branch") == 1)
        assert a.messages == b.messages  # sibling alternatives answered the same shown messages


def test_pairs_from_a_tree_use_subtree_means_and_identical_prompts():
    with Arena.from_config(CONFIG, models=models()) as arena:
        records = arena.play(arena.jobs(limit=1))
    rows = [r for r in dpo_rows(records, ExportFilters(agent="d"), target="binary") if r["meta"]["source"] == "branch"]
    assert rows
    for row in rows:
        d = row["meta"]["branch_depth"]
        assert row["margin"] > 0 and row["preference"] == 1.0
        # recompute the values: mean reward of the branching seat over each subtree
        player = row["meta"]["seat"]
        parent = row["meta"]["branch_parent"]

        def value(text, d=d, parent=parent, player=player):
            vals = [r.outcome.rewards[player] for r in records if r.tree["path"][:d] == parent
                    and any(c.meta.get("branch") == d and c.completions and c.completions[0].text == text
                            for c in r.calls)]
            return sum(vals) / len(vals)
        assert row["margin"] == pytest.approx(value(row["chosen"][0]["content"]) - value(row["rejected"][0]["content"]))


def test_a_branched_run_stores_leaves_and_resumes_tree_by_tree(tmp_path):
    with Arena.from_config(CONFIG, models=models()) as arena:
        jobs = arena.jobs()
        with open_store(tmp_path / "run", arena.exp.config) as store:
            arena.play(jobs[:1], store=store)
        with open_store(tmp_path / "run", arena.exp.config) as store:  # reopened: the first tree is stored
            assert store.stored(jobs[0].id) and not store.stored(jobs[1].id)
            arena.play([j for j in jobs if not store.stored(j.id)], store=store)
    stored = list(iter_records(tmp_path / "run"))
    assert len(stored) == 8 and len({r.tree["id"] for r in stored}) == 2


def test_a_branch_target_must_be_an_agent(tmp_path):
    from sparring.errors import ConfigError

    with pytest.raises(ConfigError, match="branch.target"):
        Arena.from_config({**CONFIG, "branch": {"target": "nobody"}}, models=models())
