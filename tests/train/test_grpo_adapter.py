"""GRPO from a starting LoRA adapter (`adapter:`): the adapter is validated before anything is
played or loaded, and training continues that adapter's weights (not a fresh LoRA)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import yaml

from sparring.errors import ConfigError
from sparring.train.config import TrainSettings
from sparring.train.online.config import OnlineConfig
from sparring.train.policy import check_adapter, load_policy

DOND = {"game": "dond", "game_args": {"objective": "self", "max_turns": 6, "untagged_as_message": True,
                                      "prefill_proposals": True, "propose_after": 4, "reveal_proposals": True,
                                      "remind_pool": True},
        "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 40, "seed": 0}, "limit": 2},
        "agents": {"learner": {"role": "negotiator", "model": "learner",
                               "sampling": {"temperature": 1.0, "max_new_tokens": 5}},
                   "partner": {"role": "negotiator", "model": "partner"}},
        "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}}


def make_adapter(base, out, r: int = 4, seed: int = 1):
    """A LoRA adapter of the model directory `base` whose B matrices are random (a fresh LoRA has
    B = 0), so that "starts from the adapter" and "starts from a new LoRA" differ."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base))
    peft = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, target_modules="all-linear", task_type="CAUSAL_LM"))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    peft.save_pretrained(str(out))
    return out


def lora_weights(directory) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    from sparring.models.tiny import save_tiny_model

    root = tmp_path_factory.mktemp("bases")
    return save_tiny_model(root / "tiny", vocab=1024), save_tiny_model(root / "narrow", hidden_size=32, intermediate_size=64, vocab=1024)


def test_a_missing_or_non_lora_adapter_is_a_clear_config_error_before_anything_runs(tmp_path, bases):
    from sparring.train.online.launch import run_online

    tiny, _ = bases
    cfg = OnlineConfig(name="t", model=str(tiny), adapter=str(tmp_path / "nope"), output_dir=str(tmp_path / "out"),
                     experiment=DOND)
    with pytest.raises(ConfigError, match="does not exist") as e:
        run_online(cfg)
    assert e.value.key == "adapter" and not (tmp_path / "out").exists()  # nothing written, nothing loaded
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no adapter_config.json"):
        check_adapter(str(tmp_path / "empty"), str(tiny))
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "adapter_config.json").write_text(json.dumps({"peft_type": "PREFIX_TUNING"}))
    with pytest.raises(ConfigError, match="only LoRA"):
        check_adapter(str(tmp_path / "prefix"), str(tiny))


def test_a_lora_of_another_base_is_refused_by_its_config_or_when_loading(tmp_path, bases):
    tiny, narrow = bases
    adapter = make_adapter(narrow, tmp_path / "narrow-lora")
    with pytest.raises(ConfigError, match="not of the base model") as e:
        check_adapter(str(adapter), str(tiny))
    assert "hidden_size 32 vs 64" in str(e.value)
    check_adapter(str(adapter), str(narrow))  # its own base: fine
    # the recorded base is not on this machine: the shapes are checked when loading
    moved = tmp_path / "moved"
    shutil.copytree(narrow, moved)
    adapter2 = make_adapter(moved, tmp_path / "orphan-lora")
    shutil.rmtree(moved)
    check_adapter(str(adapter2), str(tiny))
    with pytest.raises(ConfigError, match="does not fit the base model") as e:
        load_policy(TrainSettings(model=str(tiny), adapter=str(adapter2)))
    assert e.value.key == "adapter"


@pytest.mark.slow
def test_grpo_continues_the_starting_adapter_with_it_as_the_kl_reference(tmp_path, bases):
    """One GRPO step at a small learning rate: the saved adapter is the starting adapter moved by at
    most ~lr per weight (Adam's first step), far from a fresh LoRA (B = 0); its rank is the
    adapter's (the config's `lora` is ignored); with beta > 0 the KL reference is the starting
    adapter (KL 0 at step 1) and TRL's frozen `ref` copy of it is not saved."""
    from sparring.train.online.launch import run_online

    tiny, _ = bases
    start = make_adapter(tiny, tmp_path / "start", r=4)
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"models": {"partner": {"backend": "scripted", "args": {
        "mode": "cycle", "texts": ["[message] hi", "[propose] (1 books, 0 hats, 0 balls)"]}}}}))
    lr = 1e-3
    cfg = OnlineConfig(name="t", model=str(tiny), adapter=str(start), output_dir=str(tmp_path / "out"),
                     num_generations=2, max_steps=1, sequences_per_episode=3, learning_rate=lr, beta=0.04,
                     save_steps=0, experiment={**DOND, "models_file": str(tmp_path / "m.yaml")})
    run_online(cfg)
    saved_dir = tmp_path / "out" / "adapter"
    assert json.loads((saved_dir / "adapter_config.json").read_text())["r"] == 4  # not lora.r = 8
    before, after = lora_weights(start), lora_weights(saved_dir)
    assert set(after) == set(before) and not any(".ref." in k for k in after)
    b_keys = [k for k in before if "lora_B" in k]
    assert b_keys and min(float(before[k].abs().max()) for k in b_keys) > 0.1  # a fresh LoRA would have 0 here
    moved = max(float((after[k] - before[k]).abs().max()) for k in before)
    assert moved <= 2 * lr
    # the step-1 KL is measured before the update: zero when the reference is the starting adapter
    # (with the base model as reference, the random B matrices would give a large KL)
    (point,) = [json.loads(x) for x in (tmp_path / "out" / "rewards.jsonl").read_text().splitlines()]
    assert point["kl"] is not None and abs(point["kl"]) < 1e-4
    assert "| KL to the start (beta > 0) |" in (tmp_path / "out" / "report.md").read_text()
