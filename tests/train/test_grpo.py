"""Online GRPO through the engine: the trained tokens are exactly the learner's sampled tokens, each
in the context it was sampled in; groups, slots, rewards and the zero-advantage count; a config
error for a greedy learner; GRPO steps on a tiny random model with the quickstart game settings."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
import yaml

from sparring.engine.play import Arena
from sparring.errors import ConfigError
from sparring.models.hf import HFModel
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_model
from sparring.train.online.rollout import EpisodeRollout, episode_reward, parse_prompt, prompt_rows
from sparring.train.online.sequence import learner_sequences

# the shipped grpo-quickstart game settings: prefilled proposals, untagged replies taken as messages
QUICKSTART_ARGS = {"objective": "self", "max_turns": 6, "untagged_as_message": True, "prefill_proposals": True,
                   "propose_after": 4, "reveal_proposals": True, "remind_pool": True}


def dond(max_new_tokens: int = 6, **learner_sampling) -> dict:
    return {"game": "dond", "game_args": QUICKSTART_ARGS,
            "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 40, "seed": 0}, "limit": 2},
            "agents": {"learner": {"role": "negotiator", "model": "learner",
                                   "sampling": {"temperature": 1.0, "max_new_tokens": max_new_tokens,
                                                **learner_sampling}},
                       "partner": {"role": "negotiator", "model": "partner"}},
            "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}}


def partner() -> ScriptedModel:
    return ScriptedModel("partner", mode="cycle", texts=["[message] I want the books",
                                                         "[propose] (1 books, 0 hats, 0 balls)"])


def fake_trainer(model):
    """What the rollout reads of TRL's trainer: its model and `accelerator.unwrap_model`."""
    return SimpleNamespace(model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(vocab=1024)


def play_groups(tiny, *, train_rejected=False, num_generations=3, sequences_per_episode=3, config=None):
    model, tok = tiny
    with Arena.from_config(config or dond(), models={"learner": ScriptedModel("learner"), "partner": partner()}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=num_generations,
                                 sequences_per_episode=sequences_per_episode, train_rejected=train_rejected)
        rows = prompt_rows(sorted(arena.instances)[:1], [0, 1])
        prompts = [rows[0]["prompt"]] * rollout.slots + [rows[1]["prompt"]] * rollout.slots
        out = rollout(prompts, fake_trainer(model))
    return rollout, out


def own_sampled(record, player, rejected_too=False):
    """The learner's sampled token ids in the episode, read straight from the record."""
    return [t for c in record.calls if c.player == player and c.model == "learner" and c.op == "generate"
            and (rejected_too or not c.rejected) for t in c.completions[0].token_ids]


@pytest.mark.parametrize("view", ["rendered", "conversation"])
def test_trained_tokens_are_exactly_the_sampled_tokens_each_in_the_context_it_was_sampled_in(tiny, view):
    model, tok = tiny
    rollout, _ = play_groups(tiny, config={**dond(), "view": view}, sequences_per_episode=12)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    seen_rewritten = seen_cut = seen_rejected = seen_joined = False
    for rec, seqs, job in zip(rollout.last_records, rollout.last_sequences, rollout._last_jobs, strict=True):
        player = rollout.player_of(job)
        # the invariant: env_mask=1 tokens of the episode's sequences, in order == its sampled tokens
        assert [t for s in seqs for t in s.trained_ids()] == own_sampled(rec, player)
        for s in seqs:
            assert len(s.completion_ids) == len(s.env_mask) == len(s.logprobs)
            # the context is what the model was fed: its own log-probs of the sampled tokens, recomputed
            # from prompt + completion, equal the log-probs recorded while sampling (temperature 1)
            ids = torch.tensor([s.prompt_ids + s.completion_ids])
            with torch.no_grad():
                logits = model(ids).logits[0, len(s.prompt_ids) - 1:-1].float()
            lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(s.completion_ids)[:, None])[:, 0]
            for got, want, m in zip(lp.tolist(), s.logprobs, s.env_mask, strict=True):
                assert (m == 0 and math.isnan(want)) or abs(got - want) < 1e-3
            seen_joined |= len(s.calls) > 1
            for i in s.calls:
                call = rec.calls[i]
                comp = call.completions[0]
                # the game shows earlier replies rewritten ("[message] " added): context only
                shown = [m.content for m in call.messages if m.role == "assistant"]
                seen_rewritten |= any(m.startswith("[message] ") for m in shown)
                assert "[message]" not in tok.decode(s.trained_ids())
                if comp.finish_reason == "length":  # cut at max_new_tokens: no end-of-turn trained
                    seen_cut = True
                    assert eos not in comp.token_ids
        seen_rejected |= any(c.rejected for c in rec.calls if c.player == player)
    assert seen_cut and seen_rejected
    # rendered: earlier replies come back rewritten, every call its own sequence; conversation: a
    # player's calls extend one another, so a sequence joins several of them
    assert (seen_rewritten, seen_joined) == ((True, False) if view == "rendered" else (False, True))


def test_rejected_replies_are_trained_only_when_asked(tiny):
    _, tok = tiny
    rollout, _ = play_groups(tiny, train_rejected=True, sequences_per_episode=12)
    trained_rejected = prefilled = 0
    for rec, seqs, job in zip(rollout.last_records, rollout.last_sequences, rollout._last_jobs, strict=True):
        player = rollout.player_of(job)
        assert [t for s in seqs for t in s.trained_ids()] == own_sampled(rec, player, rejected_too=True)
        trained_rejected += sum(1 for s in seqs for i in s.calls if rec.calls[i].rejected)
        for s in seqs:
            if rec.calls[s.calls[0]].assistant_prefix:  # the prefill "[propose] (" is prompt, never trained
                prefilled += 1
                assert tok.decode(s.prompt_ids).endswith("[propose] (")
                assert not tok.decode(s.trained_ids()).startswith("[propose]")
    assert trained_rejected > 0 and prefilled > 0


def test_slots_groups_rewards_and_the_zero_advantage_count(tiny):
    rollout, out = play_groups(tiny, num_generations=3, sequences_per_episode=3)
    assert len(out["prompt_ids"]) == 2 * rollout.slots == 18
    assert all(len(out[k]) == 18 for k in ("completion_ids", "env_mask", "logprobs", "episode_reward"))
    for e, (rec, seqs, job) in enumerate(zip(rollout.last_records, rollout.last_sequences, rollout._last_jobs,
                                             strict=True)):
        slots = range(3 * e, 3 * e + 3)
        assert {out["episode_id"][i] for i in slots} == {rec.id}
        assert {out["episode_reward"][i] for i in slots} == {rollout.reward(rec, rollout.player_of(job))}
        for n, i in enumerate(slots):
            if n >= len(seqs):
                assert out["env_mask"][i] == [0]  # a placeholder: no loss
    stats = rollout.history[-1]
    groups = [[out["episode_reward"][i] for i in range(g * 9, g * 9 + 9, 3)] for g in range(2)]
    zero = sum(1 for grp in groups if len(set(grp)) == 1)
    assert stats["groups"] == 2 and stats["zero_advantage_groups"] == zero
    assert stats["zero_advantage_fraction"] == zero / 2
    # the speed figures of the learning suite: tokens the optimizer step runs, and the play time
    used = [i for i in range(18) if out["env_mask"][i] != [0]]
    assert stats["sequence_tokens"] == sum(len(out["prompt_ids"][i]) + len(out["completion_ids"][i]) for i in used)
    assert stats["rollout_s"] > 0
    assert stats["example"]["equal"] and stats["example"]["trained_text"] == stats["example"]["sampled_text"]
    assert episode_reward(episode_reward=out["episode_reward"]) == out["episode_reward"]


def test_an_episode_with_more_calls_than_slots_counts_the_dropped_calls(tiny):
    rollout, out = play_groups(tiny, num_generations=2, sequences_per_episode=1, train_rejected=True)
    stats = rollout.history[-1]
    expected = sum(len(s.calls) for seqs in rollout.last_sequences for s in seqs[1:])
    assert expected > 0 and stats["dropped_calls"] == expected


def test_zero_advantage_groups_are_counted_when_rewards_differ():
    """A group counts as zero-advantage only when all its episodes' rewards are equal."""
    model, tok = tiny_model(vocab=1024)
    good = ScriptedModel("partner", mode="cycle", texts=["[message] hi", "[propose] (0 books, 0 hats, 0 balls)"])
    with Arena.from_config(dond(), models={"learner": ScriptedModel("learner"), "partner": good}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2)
        records = [SimpleNamespace(status="complete", outcome=SimpleNamespace(rewards={"Player_1": r}), calls=[])
                   for r in (1.0, 1.0, 0.0, 2.0)]
        job = arena.job(sorted(arena.instances)[0], ("learner", "partner"))
        rollout._last_jobs = [job] * 4
        rollout._report(records, [[], [], [], []], dropped=0)  # type: ignore[arg-type]
    assert rollout.history[-1]["zero_advantage_groups"] == 1 and rollout.history[-1]["zero_advantage_fraction"] == 0.5


def test_calls_whose_prompts_extend_share_one_sequence(tiny):
    """A debate shows each debater its whole history: a later call's prompt is the earlier prompt,
    the earlier sampled tokens and the new messages, so both calls train in one sequence and the
    tokens between them are environment."""
    model, tok = tiny
    cfg = {"game": "debate", "game_args": {"format": "debate", "rounds": 2},
           "dataset": {"name": "generated", "split": "all", "limit": 1, "args": {"people": 2, "filler_sentences": 0}},
           "agents": {"learner": {"role": "debater", "model": "learner",
                                  "sampling": {"temperature": 1.0, "max_new_tokens": 8}},
                      "other": {"role": "debater", "model": "other"}, "j": {"role": "judge", "model": "judge"}},
           "tournament": {"type": "custom", "matchups": [["learner", "other"]], "judges": ["j"]}}
    learner = HFModel.from_objects(model, tok, name="learner", prefix_cache_mb=0)
    models = {"learner": learner, "other": ScriptedModel("other", text="My answer is right."),
              "judge": ScriptedModel("judge", score_mode="random", seed=1)}
    with Arena.from_config(cfg, models=models) as arena:
        rec = arena.play(arena.jobs(limit=1))[0]
    player = next(p for p, s in rec.seats.items() if s.agent == "learner")
    seqs = learner_sequences(rec, player, lambda c: learner.prompt_ids(c.messages, c.assistant_prefix, 8),
                             model="learner")
    assert [t for s in seqs for t in s.trained_ids()] == own_sampled(rec, player)
    calls = [c for c in rec.calls if c.player == player and c.model == "learner"]
    assert len(calls) == 2
    # merged exactly when the second prompt starts with the first prompt + the first sampled ids
    first = learner.prompt_ids(calls[0].messages, "", 8) + calls[0].completions[0].token_ids
    extends = learner.prompt_ids(calls[1].messages, "", 8)[: len(first)] == first
    assert len(seqs) == (1 if extends else 2)
    if extends:
        assert 0 in seqs[0].env_mask and seqs[0].env_mask[0] == 1 and seqs[0].env_mask[-1] == 1


def test_a_greedy_learner_is_a_config_error_before_any_weights_load(tmp_path):
    from sparring.train.online.config import OnlineConfig
    from sparring.train.online.launch import run_online

    cfg = dond()
    cfg["agents"]["learner"]["sampling"] = {"max_new_tokens": 5}  # temperature defaults to 0
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"models": {"partner": {"backend": "scripted"}}}))
    cfg["models_file"] = str(tmp_path / "m.yaml")
    config = OnlineConfig(name="t", model=str(tmp_path / "no-such-model"), output_dir=str(tmp_path / "out"),
                        experiment=cfg, num_generations=2)
    with pytest.raises(ConfigError, match="temperature is 0") as err:
        run_online(config, "grpo.yaml")
    assert err.value.key == "experiment.agents.learner.sampling.temperature" and "grpo.yaml" in str(err.value)


def test_rollout_prompts_seeds_and_seats():
    _, tok = tiny_model(vocab=1024)
    with Arena.from_config(dond(), models={"learner": ScriptedModel("learner"), "partner": partner()}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2, format_penalty=0.5)
        rows = prompt_rows(sorted(arena.instances)[:1], [0, 1])
        assert [parse_prompt(r["prompt"]) for r in rows] == [(sorted(arena.instances)[0], 0),
                                                            (sorted(arena.instances)[0], 1)]
        jobs = rollout.jobs([rows[0]["prompt"], rows[1]["prompt"]])
        assert len(jobs) == 4 and len({j.seed for j in jobs}) == 4
        assert jobs[0].seats["Player_1"] == "learner" and jobs[2].seats["Player_2"] == "learner"
        records = arena.play(jobs)
    for rec, job in zip(records, jobs, strict=True):
        player = rollout.player_of(job)
        rejected = sum(1 for c in rec.calls if c.player == player and c.rejected)
        assert rollout.reward(rec, player) == pytest.approx(rec.outcome.rewards[player] - 0.5 * rejected)


def test_rollouts_of_a_single_player_game_score_the_learner_alone(tiny):
    """Wordle (one player): the learner's guesses are its sequences (the game's feedback is
    context), the reward is its quality score / 100."""
    cfg = {"game": "wordle", "game_args": {"max_guesses": 3},
           "dataset": {"name": "words", "split": "test", "limit": 1},
           "agents": {"learner": {"role": "guesser", "model": "learner",
                                  "sampling": {"temperature": 1.0, "max_new_tokens": 6}}},
           "tournament": {"type": "self_play", "participants": ["learner"]}}
    model, tok = tiny
    with Arena.from_config(cfg, models={"learner": ScriptedModel("learner")}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2, sequences_per_episode=4,
                                 train_rejected=True)  # a random model's guesses are mostly invalid
        rows = prompt_rows(sorted(arena.instances)[:1], [0])
        rollout([rows[0]["prompt"]] * rollout.slots, fake_trainer(model))
    for rec, seqs in zip(rollout.last_records, rollout.last_sequences, strict=True):
        player = next(iter(rec.seats))
        assert rollout.reward(rec, player) == pytest.approx(rec.outcome.rewards[player])
        assert seqs and [t for s in seqs for t in s.trained_ids()] == own_sampled(rec, player, rejected_too=True)


def tiny_grpo(tmp_path, **settings):
    """Two GRPO steps of 2 DoND games on a tiny model against a scripted partner, into tmp_path/out."""
    from sparring.models.tiny import save_tiny_model
    from sparring.train.online.config import OnlineConfig

    path = save_tiny_model(tmp_path / "tiny", vocab=1024)
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"models": {"partner": {"backend": "scripted", "args": {
        "mode": "cycle", "texts": ["[message] hi", "[propose] (1 books, 0 hats, 0 balls)"]}}}}))
    experiment = dond(max_new_tokens=5)
    experiment["models_file"] = str(tmp_path / "m.yaml")
    return OnlineConfig(name="t", model=str(path), output_dir=str(tmp_path / "out"), num_generations=2, max_steps=2,
                      sequences_per_episode=3, format_penalty=0.1, experiment=experiment, **settings)


@pytest.mark.slow
@pytest.mark.parametrize("checkpointing", [True, False])
def test_grpo_steps_on_a_tiny_model_with_the_quickstart_game_settings(tmp_path, capfd, monkeypatch, checkpointing):
    """The done-when check on a tiny model: the log shows the zero-advantage fraction and one
    sequence's env_mask=1 text equal to the learner's sampled replies; activation checkpointing is
    on or off as configured."""
    import trl

    from sparring.train.arguments import checkpointing_arg
    from sparring.train.online.launch import run_online

    cfg = tiny_grpo(tmp_path, gradient_checkpointing=checkpointing)
    trainers = []

    class Recording(trl.GRPOTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            trainers.append(self)

    monkeypatch.setattr(trl, "GRPOTrainer", Recording)
    report = run_online(cfg)
    (name,) = checkpointing_arg(True)  # `activation_checkpointing` from transformers 5.24, else the old name
    assert getattr(trainers[0].args, name) is checkpointing
    curve = [json.loads(line) for line in (tmp_path / "out" / "rewards.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [1, 2] and all("zero_advantage_fraction" in p for p in curve)
    steps = [json.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and all(s["example"]["equal"] for s in steps)
    err = capfd.readouterr().err
    assert "zero-advantage groups" in err and "env_mask=1 text == sampled replies: True" in err
    assert (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()
    assert "zero-advantage" in report.read_text()


def test_per_step_logs_keep_one_entry_per_step_and_a_resume_trims_the_lost_steps(tmp_path):
    """A run stopped after logging step 3 but with its last checkpoint at step 2 logs step 3
    again when resumed: the logs keep one entry per step (the last), and the resume drops the
    entries of steps whose weights were lost."""
    from sparring.train.online.trl.grpo import read_log, trim_logs

    rewards, rollouts = tmp_path / "rewards.jsonl", tmp_path / "rollouts.jsonl"
    rewards.write_text("".join(json.dumps({"step": s, "reward": r}) + "\n" for s, r in [(1, 0.1), (2, 0.2), (3, 0.3)]))
    rollouts.write_text("".join(json.dumps({"rollout": s}) + "\n" for s in (1, 2, 3)))
    trim_logs(tmp_path, 2)
    assert [p["step"] for p in read_log(rewards)] == [1, 2] and [r["rollout"] for r in read_log(rollouts)] == [1, 2]
    with open(rewards, "a") as f:  # the resumed run logs step 3 again; a log of an older version held both
        f.write(json.dumps({"step": 3, "reward": 0.9}) + "\n" + json.dumps({"step": 3, "reward": 0.5}) + "\n")
    assert [(p["step"], p["reward"]) for p in read_log(rewards)] == [(1, 0.1), (2, 0.2), (3, 0.5)]
    assert read_log(tmp_path / "nothing" / "rewards.jsonl") == []


@pytest.mark.slow
def test_a_resumed_grpo_run_logs_each_step_once(tmp_path):
    """Stopped between step 2's log line and its checkpoint, then rerun: it resumes from step 1's
    checkpoint and the curve and report hold steps 1 and 2 once each."""
    import shutil

    from sparring.train.online.launch import run_online

    out = tmp_path / "out"
    cfg = tiny_grpo(tmp_path, save_steps=1, save_total_limit=2)
    run_online(cfg)
    shutil.rmtree(out / "trainer" / "checkpoint-2")
    shutil.rmtree(out / "adapter")
    report = run_online(cfg)
    lines = [json.loads(line) for line in (out / "rewards.jsonl").read_text().splitlines()]
    assert [p["step"] for p in lines] == [1, 2]
    assert [json.loads(line)["rollout"] for line in (out / "rollouts.jsonl").read_text().splitlines()] == [1, 2]
    assert (out / "trainer" / "checkpoint-2").is_dir() and (out / "adapter" / "adapter_config.json").is_file()
    assert report.read_text().count("\n| 2 |") == 1
