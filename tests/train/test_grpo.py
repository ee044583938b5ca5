"""Online GRPO through the engine: the learner's sequence and masks from a scripted episode, the
reward per episode, and two GRPO steps on a tiny random model."""

from __future__ import annotations

import json

import pytest
import yaml

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_tokenizer
from sparring.train.chat_templates import apply_generation_markers
from sparring.train.grpo.rollout import EpisodeRollout, parse_prompt, prompt_rows
from sparring.train.grpo.sequence import learner_sequence

DOND = {"game": "dond", "game_args": {"max_turns": 6},
        "dataset": {"name": "dond_generated", "args": {"n": 3, "seed": 0}},
        "agents": {"learner": {"role": "negotiator", "model": "learner"},
                   "partner": {"role": "negotiator", "model": "partner"}},
        "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}}


def models():
    return {"learner": ScriptedModel("learner", mode="cycle", texts=[
                "[message] I want the books", "[propose] (3 books, 0 hats, 0 balls)"]),
            "partner": ScriptedModel("partner", mode="cycle", texts=[
                "[message] fine, take the books", "[propose] (0 books, 2 hats, 1 balls)", "no tag"])}


def test_learner_tokens_are_trained_and_partner_tokens_masked():
    tok = tiny_tokenizer()
    apply_generation_markers(tok)
    with Arena.from_config(DOND, models=models()) as arena:
        rec = arena.play(arena.jobs(limit=1))[0]
    seq = learner_sequence(rec, "Player_1", tok)
    assert seq is not None and len(seq.completion_ids) == len(seq.env_mask)
    trained = tok.decode([t for t, m in zip(seq.completion_ids, seq.env_mask, strict=True) if m])
    masked = tok.decode([t for t, m in zip(seq.completion_ids, seq.env_mask, strict=True) if not m])
    assert "I want the books" in trained and "take the books" not in trained
    assert "take the books" in masked  # the partner's message is in the sequence, without loss
    assert seq.env_mask[0] == 1 and seq.env_mask[-1] == 1  # starts and ends with the learner's tokens
    assert tok.decode(seq.completion_ids[-1:]) == "<|im_end|>"


def test_rollout_groups_seeds_seats_and_rewards():
    tok = tiny_tokenizer()
    apply_generation_markers(tok)
    with Arena.from_config(DOND, models=models()) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2, format_penalty=0.5)
        rows = prompt_rows(sorted(arena.instances)[:1], [0, 1])
        assert [parse_prompt(r["prompt"]) for r in rows] == [(sorted(arena.instances)[0], 0),
                                                            (sorted(arena.instances)[0], 1)]
        prompts = [rows[0]["prompt"]] * 2 + [rows[1]["prompt"]] * 2  # TRL repeats each prompt per generation
        jobs = rollout.jobs(prompts)
        assert len({j.seed for j in jobs}) == 4 and jobs[0].seats["Player_1"] == "learner"
        assert jobs[2].seats["Player_2"] == "learner"
        records = arena.play(jobs)
    rewards = [rollout.reward(r, "Player_1" if i < 2 else "Player_2") for i, r in enumerate(records)]
    for rec, reward, player in zip(records, rewards, ["Player_1"] * 2 + ["Player_2"] * 2, strict=True):
        rejected = sum(1 for c in rec.calls if c.player == player and c.rejected)
        assert reward == pytest.approx(rec.outcome.rewards[player] - 0.5 * rejected)


@pytest.mark.slow
def test_two_grpo_steps_on_a_tiny_model(tmp_path):
    from sparring.models.tiny import save_tiny_model
    from sparring.train.grpo.config import GRPOConfig
    from sparring.train.grpo.trainer import run_grpo

    tiny = save_tiny_model(tmp_path / "tiny")
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"models": {"partner": {"backend": "scripted", "args": {
        "mode": "cycle", "texts": ["[message] hi", "[propose] (1 books, 0 hats, 0 balls)"]}}}}))
    cfg = GRPOConfig(name="t", model=str(tiny), output_dir=str(tmp_path / "out"), num_generations=2, max_steps=2,
                     experiment={"game": "dond", "game_args": {"max_turns": 4, "untagged_as_message": True},
                                 "dataset": {"name": "dond_generated", "split": "train",
                                             "args": {"n": 20, "seed": 0}, "limit": 2},
                                 "models_file": str(tmp_path / "m.yaml"),
                                 "agents": {"learner": {"role": "negotiator", "model": "learner",
                                                        "sampling": {"max_new_tokens": 5, "temperature": 1.0}},
                                            "partner": {"role": "negotiator", "model": "partner"}},
                                 "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}})
    report = run_grpo(cfg)
    curve = [json.loads(line) for line in (tmp_path / "out" / "rewards.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [1, 2]
    assert (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()
    assert "| 2 |" in report.read_text()


def test_rollouts_of_a_single_player_game_score_the_learner_alone():
    """Wordle (one player): the learner's guesses are its sequence (the game's feedback masked),
    the reward is its quality score / 100."""
    cfg = {"game": "wordle", "game_args": {"max_guesses": 6},
           "dataset": {"name": "words", "split": "test", "limit": 2},
           "agents": {"learner": {"role": "guesser", "model": "learner"}},
           "tournament": {"type": "self_play", "participants": ["learner"]}}
    tok = tiny_tokenizer()
    apply_generation_markers(tok)
    learner = ScriptedModel("learner", mode="callable", function="sparring.games.wordle.scripted:solver")
    with Arena.from_config(cfg, models={"learner": learner}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2)
        rows = prompt_rows(sorted(arena.instances)[:1], [0])
        records = arena.play(rollout.jobs([rows[0]["prompt"]] * 2))
    player = next(iter(records[0].seats))
    for rec in records:
        assert rollout.reward(rec, player) == pytest.approx(rec.outcome.rewards[player])
        assert rec.outcome.metrics["quality_score"] == pytest.approx(100 * rec.outcome.rewards[player])
        seq = learner_sequence(rec, player, tok)
        assert seq is not None and 1 in seq.env_mask and 0 in seq.env_mask  # guesses trained, feedback masked
