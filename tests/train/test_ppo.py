"""Credit below the episode and PPO: GAE and returns against hand computations; per-step rewards add
up to the outcome; PPO trains exactly the sampled tokens; in a two-turn game where only the second
reply changes the reward the first turn's credit is the second's discounted (zero with λ = 0);
GRPO's turn option gives each turn its own group-normalised return (against the group's turns or
those at its turn number) and, on sparring's trainer, keeps an extending game one sequence; a PPO run checkpoints, keeps
its best held-out adapter and, resumed, reproduces the steps it would have taken."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import yaml

from sparring.train.online.credit import (
    gae,
    group_normalised,
    index_normalised,
    progress_before,
    progress_normalised,
    returns_to_go,
    state_normalised,
    turn_normalised,
    turn_rewards,
    turn_states,
    whiten,
)

from . import two_turn_game  # noqa: F401  (registers the game "two_turn")


def test_gae_and_returns_match_a_hand_computation():
    rewards, values = [1.0, 0.0, 2.0], [0.5, 1.0, 1.5]
    gamma, lam = 0.9, 0.8
    # deltas: r + γ V' - V
    d2 = 2.0 + 0 - 1.5                    # 0.5
    d1 = 0.0 + 0.9 * 1.5 - 1.0            # 0.35
    d0 = 1.0 + 0.9 * 1.0 - 0.5            # 1.4
    a2 = d2
    a1 = d1 + gamma * lam * a2            # 0.35 + 0.72 * 0.5 = 0.71
    a0 = d0 + gamma * lam * a1            # 1.4 + 0.72 * 0.71
    adv, ret = gae(rewards, values, gamma, lam)
    assert adv == pytest.approx([a0, a1, a2])
    assert ret == pytest.approx([a0 + 0.5, a1 + 1.0, a2 + 1.5])
    assert returns_to_go([1.0, 0.0, 2.0], 0.5) == pytest.approx([1.0 + 0.5 * (0.0 + 0.5 * 2.0), 1.0, 2.0])
    assert gae([1.0, 2.0], [0.0, 0.0], 1.0, 1.0)[0] == pytest.approx(returns_to_go([1.0, 2.0]))  # λ=1, V=0: returns
    (a, b), (c,) = group_normalised([[1.0, 3.0], [2.0]])  # mean 2, std sqrt(2/3)
    assert (a, b, c) == pytest.approx((-1.2247, 1.2247, 0.0), abs=1e-3)
    assert group_normalised([[1.0], [1.0]]) == [[0.0], [0.0]]
    assert sum(whiten([1.0, 2.0, 3.0])) == pytest.approx(0.0)


def test_the_turn_index_baseline_measures_each_turn_against_the_same_turn_of_the_other_games():
    # a game that scores as it goes: the winner's last (decisive) move has a small return-to-go
    won, lost = returns_to_go([0.4, 0.4, 0.2]), returns_to_go([0.4, 0.0, 0.0])  # [1, .6, .2], [.4, 0, 0]
    flat = won + lost
    mean = sum(flat) / 6
    std = math.sqrt(sum((v - mean) ** 2 for v in flat) / 6)
    by_group, by_index = group_normalised([won, lost]), index_normalised([won, lost])
    assert by_group[0][2] == pytest.approx((0.2 - mean) / (std + 1e-4))  # 0.2 < the mean over all turns
    assert by_group[0][2] < 0  # the group baseline pushes the winning move down
    scaled = [x / (std + 1e-4) for x in (0.3, 0.3, 0.1)]  # each turn against the other game's same turn
    assert by_index[0] == pytest.approx(scaled) and by_index[1] == pytest.approx([-x for x in scaled])
    assert index_normalised([[1.0, 2.0, 3.0], [1.0]]) == [[0.0, 0.0, 0.0], [0.0]]  # a turn only one game made: 0
    assert index_normalised([[], []]) == [[], []] and index_normalised([]) == []


def test_the_progress_baseline_measures_each_turn_against_turns_made_at_the_same_score():
    # two games of one world: one scores at once, one wastes its first command then scores the same
    fast, slow = [1.0, 1.0], [0.0, 1.0, 1.0]
    assert progress_before(slow) == [0.0, 0.0, 1.0]
    by_index = turn_normalised([fast, slow], 1.0, "turn_index")
    assert by_index[0][1] < 0 < by_index[1][1]  # by turn number the fast game's 2nd score loses to the slow one's 1st
    undiscounted = turn_normalised([fast, slow], 1.0, "progress")
    assert undiscounted[1][0] == pytest.approx(0.0, abs=1e-9)  # with gamma 1 a wasted command costs nothing
    returns = [returns_to_go(fast, 0.9), returns_to_go(slow, 0.9)]  # [1.9, 1], [1.71, 1.9, 1]
    flat = returns[0] + returns[1]
    std = math.sqrt(sum((v - sum(flat) / 5) ** 2 for v in flat) / 5)  # over every turn of the group
    at_zero = (1.9 + 1.71 + 1.9) / 3  # the three turns made with nothing collected yet
    expected = [[(1.9 - at_zero) / (std + 1e-4), 0.0],
                [(1.71 - at_zero) / (std + 1e-4), (1.9 - at_zero) / (std + 1e-4), 0.0]]
    by_progress = turn_normalised([fast, slow], 0.9, "progress")
    assert by_progress == [pytest.approx(e, abs=1e-6) for e in expected]
    assert by_progress[1][0] < 0 < by_progress[0][0]  # the wasted command loses to the one that scored at once
    assert progress_normalised(returns, [[0.0, 1.0], [0.0, 0.0, 1.0]]) == by_progress
    assert turn_normalised([[], []], 0.9, "progress") == [[], []]
    outcome_only = [[0.0, 0.0, 1.0], [0.0, -1.0]]  # a game scored by its outcome: every turn at progress 0
    assert turn_normalised(outcome_only, 0.9, "progress") == turn_normalised(outcome_only, 0.9, "group")


def _game(*moves: tuple[str, str, bool]) -> SimpleNamespace:
    """A record whose calls are (player, reply, refused) in order."""
    return SimpleNamespace(calls=[SimpleNamespace(player=p, op="generate", rejected=r, chosen=None, meta={},
                                                  completions=[SimpleNamespace(text=t)]) for p, t, r in moves])


def test_the_state_baseline_compares_the_commands_played_from_one_game_state():
    """GiGPO's anchor states: a turn's state is every accepted reply before it; a refused reply
    changes nothing, so the command after it is compared with the commands played from the same
    state (TextWorld's `take knife` before and after the drawer is opened)."""
    # game a: open the drawer, take the knife (scores); game b: take knife (refused), open, take knife
    a = _game(("P", "open drawer", False), ("P", "take knife", False))
    b = _game(("P", "take  Knife", True), ("P", "open drawer", False), ("P", "take knife", False))
    sa, sb = turn_states(a, [0, 1]), turn_states(b, [0, 1, 2])
    assert sa[0] == sb[0] == sb[1]  # the start, and the state after the refused command: the same
    assert sa[1] == sb[2] != sa[0]  # after `open drawer`, in both games
    assert turn_states(b, [2]) == [sb[2]]  # a turn's key does not depend on which other turns are asked for
    other = _game(("Q", "open drawer", False), ("P", "take knife", False))  # another player's move counts too
    assert turn_states(other, [1]) != [sa[1]]
    # a command the game took without changing its state (TextWorld's unknown command) counts as refused
    taken = _game(("P", "take knife", False), ("P", "open drawer", False), ("P", "take knife", False))
    taken.calls[0].meta["unchanged"] = True
    assert turn_states(taken, [0, 1, 2]) == sb
    rewards = [[0.0, 1.0], [0.0, 0.0, 1.0]]
    returns = [returns_to_go(r, 0.9) for r in rewards]  # [0.9, 1], [0.81, 0.9, 1]
    flat = returns[0] + returns[1]
    std = math.sqrt(sum((v - sum(flat) / 5) ** 2 for v in flat) / 5)
    start = (0.9 + 0.81 + 0.9) / 3  # the three commands played from the start state
    expected = [[(0.9 - start) / (std + 1e-4), 0.0], [(0.81 - start) / (std + 1e-4), (0.9 - start) / (std + 1e-4), 0.0]]
    by_state = turn_normalised(rewards, 0.9, "state", [sa, sb])
    assert by_state == [pytest.approx(e, abs=1e-6) for e in expected]
    assert by_state[1][0] < 0 < by_state[0][0]  # the refused command loses to the one played there instead
    # a state only one turn reached falls back to the turns at its progress
    lone = turn_normalised([[0.0, 1.0], [0.0, 1.0]], 0.9, "state", [["s", "x"], ["t", "y"]])
    assert lone == turn_normalised([[0.0, 1.0], [0.0, 1.0]], 0.9, "progress")
    assert state_normalised([[1.0], [0.0]], [["s"], ["s"]], [[0.0], [0.0]])[0][0] > 0
    with pytest.raises(ValueError, match="state key"):
        turn_normalised(rewards, 0.9, "state")


def test_turn_rewards_add_up_to_the_outcome():
    calls = [SimpleNamespace(step_reward=0.25), SimpleNamespace(step_reward=None), SimpleNamespace(step_reward=0.5)]
    record = SimpleNamespace(calls=calls)
    assert turn_rewards(record, [0, 1, 2], 1.0) == pytest.approx([0.25, 0.0, 0.75])  # the rest on the last turn
    assert turn_rewards(record, [1], -1.0) == pytest.approx([-1.0])  # a game scored by its outcome only
    assert sum(turn_rewards(record, [0, 2], 0.3)) == pytest.approx(0.3)


def two_turn(tmp_path, algorithm: str = "ppo", **extra):
    from sparring.models.tiny import save_tiny_model

    tiny = tmp_path / "tiny"
    if not tiny.is_dir():
        save_tiny_model(tiny, seed=1, vocab=1024)
    data = {"name": f"two-{algorithm}", "algorithm": algorithm, "model": str(tiny), "learner_agent": "learner",
            "experiment": {"game": "two_turn", "dataset": {"name": "topics", "split": "train"},
                           "agents": {"learner": {"role": "player", "model": "learner",
                                                  "sampling": {"temperature": 1.0, "max_new_tokens": 6}}},
                           "tournament": {"type": "self_play", "participants": ["learner"]},
                           "run": {"seed": 0, "max_live": 8}},
            "num_generations": 4, "prompts_per_step": 2, "max_steps": 2, "learning_rate": 1e-3, "save_steps": 1,
            "output_dir": str(tmp_path / f"out-{algorithm}"), "lora": {"r": 4, "alpha": 8}, **extra}
    path = tmp_path / f"{algorithm}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def arena_and_trainer(tmp_path, **ppo):
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.online.launch import load_online
    from sparring.train.online.rollout import LEARNER
    from sparring.train.online.trainer.core import OnlineTrainer

    config, file = load_online(str(two_turn(tmp_path, ppo={"whiten_advantages": False, "kl_coef": 0.0, **ppo})))
    arena = Arena.from_config({"name": config.name, **config.experiment}, models={LEARNER: ScriptedModel(LEARNER)})
    return arena, OnlineTrainer(config, file, arena, tmp_path / "out")


def test_ppo_trains_exactly_the_sampled_tokens_and_credits_the_turn_that_mattered(tmp_path):
    from sparring.train.online.sequence import sampled_ids

    arena, trainer = arena_and_trainer(tmp_path, lam=0.0)
    try:
        c = trainer.collect(0)
        records, items, rewards = c.records, c.items, c.rewards
        assert len(records) == 8 and all(len(r) == 2 for r in rewards.values())  # two turns each
        # the learner reuses its earlier turns' states (prefix cache) and trains the same tokens anyway
        assert trainer.learner.prefix_cache is not None and trainer.learner.prefix_cache.hits > 0
        assert {round(r[0], 6) for r in rewards.values()} == {0.0}  # the first reply earns nothing
        for e, rec in c.kept.items():  # what the loss sees: the learner's sampled tokens, nothing else
            sampled = [t for i in range(len(rec.calls)) for t in sampled_ids(rec, i)]
            trained = [it.ids[p] for it in items if it.episode == e for p in it.positions]
            assert trained == sampled
            assert sorted(t for it in items if it.episode == e for t in it.turns) == [0, 1]
        # an ideal critic: V = the expected reward at both turns (the first reply does not change it)
        mean = sum(r[1] for r in rewards.values()) / len(rewards)
        for it in items:
            it.old_values = [mean] * len(it.turns)
            it.old_logprobs, it.ref_logprobs = [0.0] * len(it.positions), []
        trainer.advantages(c)
        for k, r in rewards.items():
            assert trainer.credit.adv[k][0] == pytest.approx(0.0)          # λ = 0: the first turn gets no credit
            assert trainer.credit.adv[k][1] == pytest.approx(r[1] - mean)  # the second carries the signal
        trainer.ppo = trainer.ppo.model_copy(update={"lam": 0.95})
        trainer.advantages(c)
        for k, r in rewards.items():  # with λ the first turn's credit is the second's, discounted
            assert trainer.credit.adv[k][0] == pytest.approx(0.95 * (r[1] - mean))
    finally:
        arena.close()


def test_grpo_turn_credit_gives_each_turn_its_group_normalised_return(tmp_path):
    from sparring.engine.play import Arena
    from sparring.models.hf import HFModel
    from sparring.models.scripted import ScriptedModel
    from sparring.models.tiny import tiny_model
    from sparring.train.online.rollout import LEARNER, EpisodeRollout, prompt_rows

    two_turn(tmp_path, "grpo")
    model, tok = tiny_model(seed=2, vocab=1024)
    cfg = yaml.safe_load((tmp_path / "grpo.yaml").read_text())["experiment"]
    with Arena.from_config({"name": "t", **cfg}, models={LEARNER: ScriptedModel(LEARNER)}) as arena:
        arena.pool.add(LEARNER, HFModel.from_objects(model, tok, name=LEARNER, prefix_cache_mb=0))
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=4, sequences_per_episode=2, credit="turn")
        rollout.arena.pool.add(LEARNER, HFModel.from_objects(model, tok, name=LEARNER, prefix_cache_mb=0))
        prompts = [prompt_rows(sorted(arena.instances)[:1], [0])[0]["prompt"]]
        records, sequences = rollout.play(prompts, arena.pool.get(LEARNER).prompt_ids)
    assert all(len(s) == 2 and all(len(q.calls) == 1 for q in s) for s in sequences)  # one sequence per turn
    credits = rollout.turn_credit(records, sequences)
    outcome = [r.outcome.rewards["Solo"] for r in records]
    flat = [c for ep in credits for c in ep]
    assert sum(flat) == pytest.approx(0.0, abs=1e-6)
    for ep, reward in zip(credits, outcome, strict=True):
        assert ep[0] == pytest.approx(ep[1])  # no step reward on turn 1: its return-to-go is the episode's
        if len(set(outcome)) > 1:
            assert (ep[1] > 0) == (reward > sum(outcome) / len(outcome))


@pytest.mark.parametrize("turn_baseline", ["group", "turn_index", "progress", "state"])
def test_sparring_grpo_turn_credit_trains_an_extending_game_as_one_sequence(tmp_path, turn_baseline):
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.online.launch import load_online
    from sparring.train.online.rollout import LEARNER
    from sparring.train.online.trainer.core import OnlineTrainer

    from .test_grpo import dond, partner

    path = two_turn(tmp_path, "grpo", trainer="sparring", credit="turn", turn_baseline=turn_baseline,
                    num_generations=4, prompts_per_step=2)
    data = yaml.safe_load(path.read_text())
    data["experiment"] = {**dond(), "view": "conversation", "run": {"seed": 0, "max_live": 8}}
    path.write_text(yaml.safe_dump(data))
    config, file = load_online(str(path))
    arena = Arena.from_config({"name": config.name, **config.experiment},
                              models={LEARNER: ScriptedModel(LEARNER), "partner": partner()})
    try:
        trainer = OnlineTrainer(config, file, arena, tmp_path / "out")
        c = trainer.collect(0)
        turns = sum(len(r) for r in c.rewards.values())
        assert turns > len(c.items) >= len(c.rewards)  # the conversation's calls share sequences
        assert any(len(it.turns) > 1 for it in c.items)
        trainer.advantages(c)
        normalise = {"group": group_normalised, "turn_index": index_normalised,
                     "progress": lambda rtg: progress_normalised(rtg, [progress_before(c.rewards[k]) for k in keys]),
                     "state": lambda rtg: state_normalised(rtg, [c.states[k] for k in keys],
                                                           [progress_before(c.rewards[k]) for k in keys])}
        for group in set(c.groups.values()):
            keys = [k for k in c.rewards if c.groups[k] == group]
            for k, adv in zip(keys, normalise[turn_baseline]([returns_to_go(c.rewards[k]) for k in keys]),
                              strict=True):
                assert trainer.credit.adv[k] == pytest.approx(adv)
        # what the loss reads: each trained token carries its own turn's advantage
        for it in c.items:
            assert len(it.token_turn) == len(it.positions) and set(it.token_turn) == set(it.turns)
    finally:
        arena.close()


def test_turn_baseline_is_a_setting_of_grpo_turn_credit(tmp_path):
    from sparring.errors import SparringError
    from sparring.train.online.launch import load_online

    with pytest.raises(SparringError, match="turn_baseline"):
        load_online(str(two_turn(tmp_path, "grpo", trainer="sparring", turn_baseline="turn_index")))


@pytest.mark.slow
def test_a_ppo_run_keeps_its_best_checkpoint_and_resumed_reproduces_the_steps(tmp_path):
    import torch
    from safetensors.torch import load_file

    from sparring.train.checkpoints import TrainingStopped
    from sparring.train.online.launch import load_online, run_online

    ev = {"dataset": {"name": "topics", "split": "test"}, "every": 1, "temperature": 0.0}
    straight = tmp_path / "a"
    straight.mkdir()
    config, file = load_online(str(two_turn(straight, ppo={"eval": ev})))
    run_online(config, file)
    out_a = straight / "out-ppo"
    log_a = [json.loads(x) for x in (out_a / "ppo.jsonl").read_text().splitlines()]
    assert len(log_a) == 2 and all(math.isfinite(p["pg_loss"]) for p in log_a)
    assert (out_a / "adapter" / "adapter_config.json").is_file() and (out_a / "adapter" / "value_head.safetensors").is_file()
    assert (out_a / "best" / "eval.json").is_file() and len((out_a / "eval.jsonl").read_text().splitlines()) == 2
    assert "| held-out after step |" in (out_a / "report.md").read_text()

    resumed = tmp_path / "b"
    resumed.mkdir()
    config, file = load_online(str(two_turn(resumed, ppo={"eval": ev})))
    first = config.model_copy(update={"max_steps": 1})
    run_online(first, file)
    run_online(config, file)  # max_steps raised: resumes from checkpoint-1 and plays step 2
    out_b = resumed / "out-ppo"
    log_b = [json.loads(x) for x in (out_b / "ppo.jsonl").read_text().splitlines()]
    for a, b in zip(log_a, log_b, strict=True):
        for key in ("reward", "turns", "trained_tokens", "pg_loss", "vf_loss", "kl"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-7), key
    # the resumed run replayed step 2 and kept each training game once, as the straight run did
    from sparring.records.reader import read_run

    kept_a, kept_b = read_run(out_a / "rollouts"), read_run(out_b / "rollouts")
    assert sorted(r.id for r in kept_a.episodes) == sorted(r.id for r in kept_b.episodes)
    assert len(kept_a.episodes) + len(kept_a.failures) == sum(p["episodes"] for p in log_a)
    wa, wb = (load_file(str(o / "adapter" / "adapter_model.safetensors")) for o in (out_a, out_b))
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    with pytest.raises(TrainingStopped):
        limited = config.model_copy(update={"max_steps": 4, "max_minutes": 1e-9, "output_dir": str(tmp_path / "c")})
        run_online(limited, file)


def test_ppo_values_come_from_the_hidden_states_the_rollout_computed(tmp_path):
    """Issue #59: the hf backend records the decoder's last hidden state at each call's last prompt
    token while it generates; PPO's old values are the value head at those states — the values a
    values-only pass gives on the same items (1e-4), without the pass."""
    import torch

    from sparring.train.step_cost import StepCost

    arena, trainer = arena_and_trainer(tmp_path)
    try:
        c = trainer.collect(0)
        assert c.items and all(it.has_states() for it in c.items)
        torch.nn.init.normal_(trainer.head.summary.weight, std=0.5)  # a critic that is not zero
        from_rollout = StepCost()
        trainer.score(c.items, from_rollout)
        rollout_values = [list(it.old_values) for it in c.items]
        assert any(abs(v) > 1e-3 for vs in rollout_values for v in vs)
        trainer.ppo = trainer.ppo.model_copy(update={"rollout_values": False})
        by_pass = StepCost()
        trainer.score(c.items, by_pass)
        for it, values in zip(c.items, rollout_values, strict=True):
            assert it.old_values == pytest.approx(values, abs=1e-4)
        assert from_rollout.forward_tokens < by_pass.forward_tokens  # the values pass was not run
    finally:
        arena.close()
