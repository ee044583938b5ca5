"""The step-cost breakdown: its arithmetic, TRL's trainers metered by hooks on the model they call
(scoring passes only where a reference or old-policy pass runs), and padding-free SFT giving the
padded loss."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from sparring.train.step_cost import ForwardMeter, StepCost, line, total

from . import two_turn_game  # noqa: F401  (registers the game "two_turn")


def test_a_step_cost_adds_up_and_reads_as_one_line():
    c = StepCost()
    with c.part("rollout"):
        time.sleep(0.01)
    c.count("scoring", 90, 100)
    c.count("training", 90, 100)
    c.count("training", 90, 100)
    c.trained_tokens = 30
    c.close()
    s = c.summary(roof_tokens_per_s=1000.0)
    assert s["cost/forward_tokens"] == 270 and s["cost/padded_tokens"] == 300 and s["cost/training_tokens"] == 180
    assert s["cost/model_tokens_per_trained_token"] == 9.0
    assert s["cost/scoring_passes"] == 1 and s["cost/training_passes"] == 2
    assert s["cost/total_s"] == pytest.approx(sum(c.seconds.values()), abs=1e-3) and s["cost/rollout_s"] >= 0.01
    both = total([c, c])
    assert both.forward_tokens == 540 and both.passes == {"scoring": 2, "training": 4}
    assert "270 model tokens for 30 trained (9.0 per trained)" in line(s)


def test_the_meter_tells_scoring_from_training_passes_and_ignores_paused_ones():
    import torch

    from sparring.models.tiny import tiny_model

    model, _ = tiny_model(seed=0, vocab=1024)
    meter = ForwardMeter(model)
    ids = torch.tensor([[5, 6, 7, 0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
        with meter.paused():
            model(input_ids=ids)  # a rollout's generation: not a pass of the step
    model(input_ids=ids, attention_mask=mask).logits.sum().backward()
    c = meter.end_step(trained_tokens=2)
    assert c.passes == {"scoring": 1, "training": 1} and c.forward_tokens == 6 and c.padded_tokens == 8
    assert c.seconds["scoring"] > 0
    meter.close()
    model(input_ids=ids)
    assert meter.cost.forward_tokens == 6  # detached: no longer counted


def test_a_pass_reports_the_memory_it_held_at_its_peak():
    """On a Linux CPU: the process's resident high-water mark, reset when the pass starts, so a
    pass that holds 200 MB more than the one before reports ~200 MB more."""
    from sparring.train import peak_memory

    if peak_memory.kind() != "process RSS" or not peak_memory.reset():
        pytest.skip("no resettable peak resident set here (not Linux, or /proc/self/clear_refs not writable)")
    import numpy as np

    small, large = StepCost(), StepCost()
    with small.part("training"):
        np.ones(1 << 20)  # 8 MB
    with large.part("training"):
        block = np.ones(200 << 17)  # 200 MB, touched
        del block
    assert small.peak_memory_mb is not None and large.peak_memory_mb is not None
    assert large.peak_memory_mb - small.peak_memory_mb > 150
    # what the pass added on top of what the process held when it started: the 200 MB, not the process
    assert large.peak_added_mb is not None and 150 < large.peak_added_mb < large.peak_memory_mb - 10
    assert small.peak_added_mb is not None and small.peak_added_mb < 100
    with small.part("rollout"):
        np.ones(200 << 17)
    assert small.peak_memory_mb < large.peak_memory_mb - 150  # a rollout is not a pass: not counted
    s = large.close().summary()
    assert s["cost/peak_memory_mb"] == round(large.peak_memory_mb, 1) and "peak memory" in line(s)
    assert s["cost/peak_added_mb"] == round(large.peak_added_mb, 1) and "added by a pass" in line(s)
    both = total([small, large])
    assert both.peak_memory_mb == large.peak_memory_mb and both.peak_added_mb == large.peak_added_mb


@pytest.mark.slow
def test_trls_grpo_steps_report_their_passes(tmp_path):
    from sparring.models.tiny import save_tiny_model
    from sparring.train.online.launch import load_online, run_online
    from sparring.train.online.trl.grpo import read_log

    tiny = save_tiny_model(tmp_path / "tiny", seed=1, vocab=1024)
    for beta in (0.0, 0.04):
        data = {"name": f"t{beta}", "model": str(tiny), "learner_agent": "learner", "beta": beta,
                "experiment": {"game": "two_turn", "dataset": {"name": "topics", "split": "train"},
                               "agents": {"learner": {"role": "player", "model": "learner",
                                                      "sampling": {"temperature": 1.0, "max_new_tokens": 6}}},
                               "tournament": {"type": "self_play", "participants": ["learner"]}},
                "num_generations": 2, "max_steps": 1, "sequences_per_episode": 2, "save_steps": 0,
                "output_dir": str(tmp_path / f"out{beta}"), "lora": {"r": 4, "alpha": 8}}
        path = tmp_path / f"{beta}.yaml"
        path.write_text(yaml.safe_dump(data))
        config, file = load_online(str(path))
        run_online(config, file)
        (point,) = read_log(tmp_path / f"out{beta}" / "rewards.jsonl")
        assert point["cost/training_passes"] >= 1 and point["cost/trained_tokens"] == point["trained_tokens"]
        # TRL skips the old-policy pass on-policy; the reference pass runs only with beta > 0
        assert point["cost/scoring_passes"] == (1 if beta else 0)
        assert point["cost/rollout_s"] > 0 and point["cost/total_s"] >= point["cost/rollout_s"]
        rollout = json.loads((tmp_path / f"out{beta}" / "rollouts.jsonl").read_text().splitlines()[0])
        assert point["cost/rollout_s"] >= rollout["rollout_s"]  # the games and building their sequences


@pytest.mark.slow
def test_padding_free_sft_gives_the_padded_loss(tmp_path):
    from sparring.models.tiny import save_tiny_model
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train_sft

    tiny = save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)
    rows = [{"messages": [{"role": "user", "content": "hello " * (5 + 7 * i)},
                          {"role": "assistant", "content": "world " * (3 + i)}]} for i in range(4)]
    results = [train_sft(rows, TrainSettings(model=str(tiny), max_steps=2, batch_size=4, padding_free=free,
                                             lora={"r": 4, "alpha": 8, "dropout": 0.0}), tmp_path / f"o{free}")
               for free in (False, True)]
    padded, free = results
    assert free.loss == pytest.approx(padded.loss, abs=1e-5)
    assert free.metrics["grad_norm"] == pytest.approx(padded.metrics["grad_norm"], abs=1e-5)
