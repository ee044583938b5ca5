"""sparring's own online trainer: baselines (group, per role, SPIRAL's running per-role RAE), who sits
where (fixed, self-play, league), GRPO on it, the step-cost breakdown, and the old and new paths of
the same mathematics giving the same losses (shared prefix, rollout log-probs, TRL's GRPO)."""

from __future__ import annotations

import json
import random

import pytest
import yaml

from sparring.train.online.trainer.advantages import Baselines
from sparring.train.online.trainer.opponents import Opponents, OpponentSettings

from . import duel_game, two_turn_game  # noqa: F401  (register the games "duel" and "two_turn")


def test_group_role_and_rae_baselines():
    rewards = {(0, "A"): 1.0, (0, "B"): -1.0, (1, "A"): 3.0, (1, "B"): -3.0, (2, "A"): 0.0, (2, "B"): 0.0}
    groups = {k: 0 for k in rewards}
    pooled = Baselines("group", "none").advantages(rewards, groups)
    assert pooled == rewards  # zero-sum self-play: the pooled mean is 0, the baseline says nothing
    role = Baselines("role", "none").advantages(rewards, groups)
    assert role[(1, "A")] == pytest.approx(3.0 - 4 / 3) and role[(1, "B")] == pytest.approx(-3.0 + 4 / 3)
    scaled = Baselines("role", "group").advantages(rewards, groups)
    assert scaled[(1, "A")] == pytest.approx((3.0 - 4 / 3) / (1.5275252 + 1e-4), rel=1e-5)  # unbiased std, as TRL
    rae = Baselines("rae", "none", decay=0.5)
    first = rae.advantages(rewards, groups)
    # per role, each reward minus the running mean read before it is updated: A: 0 -> 0.5 -> 1.75
    assert [first[(e, "A")] for e in range(3)] == pytest.approx([1.0, 2.5, -1.75])
    assert [first[(e, "B")] for e in range(3)] == pytest.approx([-1.0, -2.5, 1.75])
    assert rae.state() == pytest.approx({"A": 0.875, "B": -0.875})
    restored = Baselines("rae", "none", decay=0.5)
    restored.restore(rae.state())
    assert restored.advantages({(0, "A"): 1.0}, {(0, "A"): 0}) == {(0, "A"): pytest.approx(0.125)}


def test_who_sits_where():
    fixed = Opponents(OpponentSettings(), "me", ["me", "bot"], seats=2)
    assert fixed.seating(1, random.Random(0)).agents == ("bot", "me") and fixed.seating(1, random.Random(0)).trained == (1,)
    pool = Opponents(OpponentSettings(mode="pool"), "me", ["me", "random", "blocker"], seats=2)
    groups = [random.Random(g) for g in range(40)]
    drawn = [pool.seating(0, random.Random(100 + g), group).agents for g, group in enumerate(groups)]
    assert {a[1] for a in drawn} == {"random", "blocker"} and all(a[0] == "me" for a in drawn)
    for g in range(5):  # every game of a group meets the same opponent, whatever its own generator
        assert len({pool.seating(1, random.Random(k), random.Random(g)).agents for k in range(6)}) == 1
    assert pool.seating(1, random.Random(0), random.Random(0)).trained == (1,)
    selfplay = Opponents(OpponentSettings(mode="self_play"), "me", ["me"], seats=2)
    s = selfplay.seating(0, random.Random(0))
    assert s.agents == ("me", "me") and s.trained == (0, 1)
    league = Opponents(OpponentSettings(mode="league", league_size=2, current_share=0.0), "me", ["me"], seats=2)
    assert league.seating(0, random.Random(0)).agents == ("me", "me")  # an empty league: self-play
    assert [league.next_slot(s) for s in (0, 10, 20)] == [0, 1, 0]  # a ring: the oldest slot is reused
    assert league.snapshots == [1, 0]  # oldest first
    seen = {league.seating(1, random.Random(k)).agents[0] for k in range(20)}
    assert seen == {"me-past0", "me-past1"}  # current_share 0: always a checkpoint
    assert league.seating(1, random.Random(0)).trained == (1,)
    other = Opponents(OpponentSettings(mode="league"), "me", ["me"], seats=2)
    other.restore(league.state())
    assert other.snapshots == league.snapshots


def config_file(tmp_path, game: str = "two_turn", **extra):
    from sparring.models.tiny import save_tiny_model

    tiny = tmp_path / "tiny"
    if not tiny.is_dir():
        save_tiny_model(tiny, seed=1, vocab=1024)
    data = {"name": f"{game}-online", "algorithm": "grpo", "trainer": "sparring", "model": str(tiny),
            "learner_agent": "learner",
            "experiment": {"game": game, "dataset": {"name": "topics", "split": "train"},
                           "agents": {"learner": {"role": "player", "model": "learner",
                                                  "sampling": {"temperature": 1.0, "max_new_tokens": 6}}},
                           "tournament": {"type": "self_play", "participants": ["learner"]},
                           "run": {"seed": 0, "max_live": 8}},
            "num_generations": 4, "prompts_per_step": 2, "max_steps": 2, "learning_rate": 1e-3, "save_steps": 1,
            "output_dir": str(tmp_path / "out"), "lora": {"r": 4, "alpha": 8, "dropout": 0.0}, **extra}
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def trainer_for(path):
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.online.launch import load_online
    from sparring.train.online.rollout import LEARNER
    from sparring.train.online.trainer.core import OnlineTrainer
    from sparring.train.online.trainer.opponents import league_agents

    config, file = load_online(str(path))
    experiment = league_agents(config.experiment, config.learner_agent, config.opponents)
    arena = Arena.from_config({"name": config.name, **experiment}, models={LEARNER: ScriptedModel(LEARNER)})
    return arena, OnlineTrainer(config, file, arena, path.parent / "out")


@pytest.mark.slow
def test_grpo_on_sparrings_trainer_needs_no_scoring_pass_and_reports_where_the_step_went(tmp_path):
    from sparring.train.online.launch import load_online, run_online

    config, file = load_online(str(config_file(tmp_path)))
    report = run_online(config, file)
    steps = [json.loads(x) for x in (tmp_path / "out" / "grpo.jsonl").read_text().splitlines()]
    assert len(steps) == 2
    for p in steps:
        # on-policy at temperature 1: the old log-probs are the rollout's, and beta 0 needs no reference
        assert p["cost/scoring_passes"] == 0 and p["cost/training_passes"] >= 1
        assert p["cost/trained_tokens"] == p["trained_tokens"] > 0
        assert p["cost/forward_tokens"] > 0 and p["cost/model_tokens_per_trained_token"] > 1
        assert p["cost/total_s"] >= p["cost/rollout_s"] + p["cost/training_s"] - 1e-6
        assert 0 < p["cost/training_roof_ratio"] < 5
    text = report.read_text()
    assert "Where the steps went" in text and (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()
    # every training game is kept, a run directory like any other
    from sparring.records.reader import read_run

    kept = read_run(tmp_path / "out" / "rollouts")
    assert len(kept.episodes) + len(kept.failures) == sum(p["episodes"] for p in steps)
    assert kept.manifest["status"] == "complete" and len({r.id for r in kept.episodes}) == len(kept.episodes)
    # each kept game names the GRPO group it was played in: one instance, num_generations games
    from sparring.train.online.trainer.collect import game_group

    groups: dict = {}
    for r in kept.episodes:
        groups.setdefault(game_group(r.repeat, config.num_generations), []).append(r.instance_id)
    assert {step for step, _ in groups} == set(range(len(steps)))
    assert all(len(set(ids)) == 1 and len(ids) <= config.num_generations for ids in groups.values())


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["ppo", "grpo"])
def test_the_shared_prefix_and_rollout_logprobs_leave_the_losses_unchanged(tmp_path, algorithm):
    """Old path (every row padded in full, a scoring pass for the old log-probs) vs new (the shared
    prefix once, the rollout's log-probs) vs new with activations recomputed in the backward
    (`gradient_checkpointing: true`: its training passes run every row in full, transformers drops
    the key/value cache they would share): the same episodes, the same losses to 1e-5."""
    ppo = {"kl_coef": 0.0, "ppo_epochs": 2, "minibatch_size": 3} if algorithm == "ppo" else {}
    losses, checkpointing = {}, {}
    for name, extra in (("old", {"share_prefix": False, "rollout_logprobs": False}),
                        ("new", {"share_prefix": True, "rollout_logprobs": True}),
                        ("recomputed", {"gradient_checkpointing": True})):
        base = tmp_path / name
        base.mkdir()
        arena, trainer = trainer_for(config_file(base, algorithm=algorithm, ppo=ppo, **extra))
        try:
            checkpointing[name] = any(getattr(m, "gradient_checkpointing", False) for m in trainer.model.modules())
            losses[name] = [trainer.train_step(s) for s in range(2)]
        finally:
            arena.close()
    assert checkpointing == {"old": False, "new": False, "recomputed": True}
    for old, new, recomputed in zip(losses["old"], losses["new"], losses["recomputed"], strict=True):
        assert old["reward"] == new["reward"] == recomputed["reward"]
        assert old["trained_tokens"] == new["trained_tokens"] == recomputed["trained_tokens"]
        for key in ("pg_loss", "entropy", "vf_loss") if algorithm == "ppo" else ("pg_loss", "entropy"):
            assert new[key] == pytest.approx(old[key], abs=1e-5), key
            assert recomputed[key] == pytest.approx(old[key], abs=1e-5), key
        assert new["cost/forward_tokens"] < old["cost/forward_tokens"]  # fewer tokens through the model
        # GRPO needs no scoring pass at all; PPO keeps one for its values (without the output layer)
        assert new["cost/scoring_passes"] < old["cost/scoring_passes"] or algorithm == "ppo"
        assert recomputed["cost/training_tokens"] > new["cost/training_tokens"]  # no shared prefix in training


@pytest.mark.slow
def test_training_passes_run_without_dropout_so_the_on_policy_ratio_is_one(tmp_path):
    """disable_dropout (the default): the training pass computes the policy the rollout sampled
    from, so GRPO's ratio to the rollout's log-probs is 1 (approx KL ~0) even once the adapter has
    moved; with LoRA dropout left on, the same step's training pass sees a noisy policy."""
    import torch

    kl, found = {}, {}
    for flag in (True, False):
        base = tmp_path / str(flag)
        base.mkdir()
        arena, trainer = trainer_for(config_file(base, disable_dropout=flag, learning_rate=1e-2,
                                                 lora={"r": 4, "alpha": 8, "dropout": 0.5}))
        try:
            found[flag] = {m.p for m in trainer.model.modules() if isinstance(m, torch.nn.Dropout)}
            points = [trainer.train_step(s) for s in range(2)]
        finally:
            arena.close()
        assert all(p["trained_tokens"] > 0 for p in points)
        kl[flag] = points[1]["approx_kl"]  # step 2: the adapter has moved, its dropout now matters
    assert found == {True: {0.0}, False: {0.5}}
    assert kl[True] < 1e-9 and kl[False] > 1e-7 and kl[False] > 1e3 * max(kl[True], 1e-12)


def test_return_freed_memory_fixes_the_allocator_before_the_weights_load_and_only_when_asked(tmp_path, monkeypatch):
    """return_freed_memory: the trainer applies sparring.train.host_memory's setting at its start
    (replaced here, so this test process keeps its allocator); off by default; TRL's trainer refuses it."""
    from sparring.errors import SparringError
    from sparring.train import host_memory

    calls: list[str] = []
    monkeypatch.setattr(host_memory, "return_freed_memory", lambda: calls.append("set") or False)
    for flag in (False, True):
        base = tmp_path / str(flag)
        base.mkdir()
        extra = {"return_freed_memory": True} if flag else {}
        arena, trainer = trainer_for(config_file(base, **extra))
        arena.close()
        assert trainer.config.return_freed_memory is flag
        assert calls == (["set"] if flag else [])
    with pytest.raises(SparringError, match="return_freed_memory need sparring's trainer"):
        trainer_for(config_file(tmp_path / "True", name="trl-online", trainer="trl", return_freed_memory=True))


@pytest.mark.slow
def test_the_rollout_runs_with_the_adapter_merged_and_training_with_it_unmerged(tmp_path):
    """merge_rollout (the default): the games are played with the LoRA merged into the base
    weights; every scoring and training pass sees it unmerged (its gradients reach the adapter),
    the base weights come back to float rounding, and the rollout's log-probs still equal the
    training pass's (on-policy ratio 1)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    arena, trainer = trainer_for(config_file(tmp_path, learning_rate=1e-2))
    try:
        layers = [m for m in trainer.model.modules() if isinstance(m, BaseTunerLayer)]
        frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" not in n}
        adapter = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}
        merged_while_playing = []
        play = trainer.arena.play

        def spy(jobs, **kwargs):
            before = all(m.merged for m in layers)
            records = play(jobs, **kwargs)  # nothing in the generation path unmerged it
            merged_while_playing.append(before and all(m.merged for m in layers))
            return records

        trainer.arena.play = spy
        points = [trainer.train_step(s) for s in range(2)]
        assert merged_while_playing == [True, True] and not any(m.merged for m in layers)
        after = dict(trainer.model.named_parameters())
        assert all(not torch_equal(after[n], p) for n, p in adapter.items())  # the adapter trained
        assert max(float((after[n] - p).abs().max()) for n, p in frozen.items()) < 1e-5
        assert all(p["trained_tokens"] > 0 and p["approx_kl"] < 1e-9 for p in points)
    finally:
        arena.close()


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a.detach(), b))


@pytest.mark.slow
def test_sparrings_grpo_gives_trls_loss_and_update_on_the_same_games(tmp_path):
    """The same rollout (same seeds), one optimizer step: TRL's GRPOTrainer (dapo loss, group std
    scaling, beta 0) and sparring's trainer move the adapter the same way. Two slots per game, so that
    TRL trains every call as sparring's trainer does (it has no slots). TRL's group std runs over slots
    (each game's reward twice), which only scales its advantages: Adam's first step is the same."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from sparring.models.tiny import save_tiny_model
    from sparring.train.online.launch import load_online, run_online
    from sparring.train.online.trl.grpo import read_log

    tiny = save_tiny_model(tmp_path / "tiny", seed=1, vocab=1024)
    torch.manual_seed(0)  # one starting adapter for both (B = 0, as a new LoRA)
    start = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny),
                           LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear"))
    start.save_pretrained(str(tmp_path / "start"))
    outs = {}
    for trainer in ("trl", "sparring"):
        base = tmp_path / trainer
        base.mkdir()
        (base / "tiny").symlink_to(tiny)
        path = config_file(base, trainer=trainer, max_steps=1, lr_scheduler_type="constant", prompts_per_step=1,
                           gradient_checkpointing=False, sequences_per_episode=2, adapter=str(tmp_path / "start"))
        data = yaml.safe_load(path.read_text())
        data["experiment"]["dataset"]["limit"] = 1  # one prompt: both trainers play the same games
        path.write_text(yaml.safe_dump(data))
        config, file = load_online(str(path))
        run_online(config, file)
        outs[trainer] = base / "out"
    trl_loss = read_log(outs["trl"] / "rewards.jsonl")
    ours = [json.loads(x) for x in (outs["sparring"] / "grpo.jsonl").read_text().splitlines()]
    assert ours[0]["reward"] == pytest.approx(trl_loss[0]["reward"], abs=1e-6)
    a = load_file(str(outs["trl"] / "adapter" / "adapter_model.safetensors"))
    b = load_file(str(outs["sparring"] / "adapter" / "adapter_model.safetensors"))
    s0 = load_file(str(tmp_path / "start" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() == s0.keys()
    # Adam's first step moves every weight by ±lr, whatever its gradient's size (a scale-free check)
    da = torch.cat([(a[k] - s0[k]).flatten() for k in sorted(a)])
    db = torch.cat([(b[k] - s0[k]).flatten() for k in sorted(a)])
    moved = da.abs() > 1e-4
    assert int(moved.sum()) > 100
    agree = float((torch.sign(da[moved]) == torch.sign(db[moved])).float().mean())
    print(f"{agree:.5f} of {int(moved.sum())} moved weights moved the same way")
    assert agree == 1.0 and float((da - db).abs().max()) < 1e-6


@pytest.mark.slow
def test_self_play_trains_both_seats_with_a_baseline_per_role(tmp_path):
    arena, trainer = trainer_for(config_file(tmp_path, game="duel", baseline="rae", num_generations=2,
                                             opponents={"mode": "self_play"}))
    try:
        point = trainer.train_step(0)
        assert {k for k in point if k.startswith("reward/")} == {"reward/First", "reward/Second"}
        assert point["reward/First"] == pytest.approx(-point["reward/Second"])  # zero-sum
        c = trainer.collect(1)
        assert {it.seat for it in c.items} == {"First", "Second"} and len(c.items) == 2 * len(c.records)
        assert set(trainer.baselines.state()) == {"First", "Second"}
    finally:
        arena.close()


@pytest.mark.slow
def test_a_league_plays_frozen_checkpoints_and_trains_only_the_learner(tmp_path):
    import torch

    arena, trainer = trainer_for(config_file(tmp_path, game="duel", num_generations=2,
                                             opponents={"mode": "league", "league_size": 2, "snapshot_every": 1,
                                                        "current_share": 0.0}))
    try:
        trainer.snapshot(trainer.opponents.next_slot(0))
        frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if ".past-0." in n}
        assert frozen and not any(p.requires_grad for n, p in trainer.model.named_parameters() if ".past-0." in n)
        point = trainer.train_step(0)
        c = trainer.collect(1)
        seats = {rec.seats[p].agent for rec in c.records for p in rec.seats}
        assert "learner-past0" in seats or "learner-past1" in seats  # checkpoints sat at the table
        assert all(len({it.seat for it in c.items if it.episode == e}) == 1 for e in {it.episode for it in c.items})
        after = {n: p for n, p in trainer.model.named_parameters() if ".past-0." in n}
        assert all(torch.equal(frozen[n], after[n]) for n in frozen)  # a checkpoint never trains
        assert any(p.requires_grad for n, p in trainer.model.named_parameters() if ".default." in n)
        assert point["trained_tokens"] > 0 and len(trainer.opponents.snapshots) == 2  # step 1 joined the league
    finally:
        arena.close()
