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


def speaker(request) -> str:
    return f"{request.context['player']} speaks in round {request.context['index']} (seed {request.sampling.seed % 7})"


def test_simultaneous_debates_branch_too_and_siblings_saw_the_same_messages():
    cfg = {**CONFIG, "game_args": {"format": "debate", "rounds": 2, "order": "simultaneous"}}
    ms = {**models(), "m": ScriptedModel("m", mode="callable", function=speaker)}
    with Arena.from_config(cfg, models=ms) as arena:
        records = arena.play(arena.jobs(limit=1))
    assert len(records) == 2 ** 2  # k ** depth leaves, as in a sequential debate
    assert sorted(tuple(r.tree["path"]) for r in records) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for d in (0, 1):
        by_parent: dict = {}
        for r in records:
            k = next(n for n, c in enumerate(r.calls) if c.meta.get("branch") == d)
            by_parent.setdefault(tuple(r.tree["path"][:d]), []).append((r, k))
        for pairs in by_parent.values():
            calls = [r.calls[k] for r, k in pairs]
            assert all(c.messages == calls[0].messages for c in calls) and len({c.meta["alternative"] for c in calls}) == 2
            # the other debater moved first in that simultaneous step; the brancher never sees it
            r, k = pairs[0]
            other = r.calls[k - 1]
            assert other.player != calls[0].player
            assert other.completions[0].text not in " ".join(m.content for m in calls[0].messages)
    assert all(r["prompt"][-1]["role"] == "user" for r in dpo_rows(records, ExportFilters(agent="d")))


def test_an_aborted_leaf_counts_with_the_abort_value_not_the_reward_it_carries():
    from sparring.train.export.branches import leaf_value

    with Arena.from_config(CONFIG, models=models()) as arena:
        records = arena.play(arena.jobs(limit=1))
    leaf = records[0]
    player = next(c.player for c in leaf.calls if c.meta.get("branch") == 1)
    aborted = leaf.model_copy(update={"status": "aborted", "outcome": leaf.outcome.model_copy(
        update={"status": "aborted", "rewards": {player: 0.97}})})
    assert leaf_value(aborted, player) == 0.0 and leaf_value(aborted, player, abort_value=0.25) == 0.25
    assert leaf_value(aborted, player, abort_value=None) is None
    assert leaf_value(leaf, player) == leaf.outcome.rewards[player]
    swapped = [aborted, *records[1:]]
    rows = [r for r in dpo_rows(swapped, ExportFilters(agent="d"), target="binary", min_gap=-1.0)
            if r["meta"]["source"] == "branch" and r["meta"]["branch_depth"] == 1 and r["meta"]["branch_parent"] == [0]]
    # the subtree under path [0] holds the aborted leaf (path [0, 0]) and one complete sibling
    sibling = next(r for r in records if r.tree["path"] == [0, 1])
    v_sibling = sibling.outcome.rewards[player]
    assert rows and abs(rows[0]["margin"]) == pytest.approx(abs(v_sibling - 0.0))


def test_a_tree_in_the_conversation_view_checks_each_branch_on_its_own():
    """Siblings show different speeches to the other debater: each branch's conversation grows from
    the fork, not from the sibling played before it (the growth check once compared them and failed
    every second branch)."""
    with Arena.from_config({**CONFIG, "view": "conversation"}, models=models()) as arena:
        jobs = arena.jobs()
        records = arena.play(jobs)
    assert len(records) == len(jobs) * 2 ** 2 and all(r.status == "complete" for r in records), \
        [r.error for r in records if r.error]
