"""What sparring relies on from TRL, transformers and PEFT, checked directly, so that an upgrade
that changes one of these contracts fails here, loudly, and not in the middle of a training run."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fields(config_cls) -> set[str]:
    return {f.name for f in dataclasses.fields(config_cls)}


def test_installed_versions_are_inside_the_supported_ranges():
    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    bounded = {r.name: r for r in map(Requirement, deps) if r.name in ("trl", "transformers", "peft")}
    assert set(bounded) == {"trl", "transformers", "peft"}
    for name, req in bounded.items():
        assert any(s.operator == "<" for s in req.specifier), f"{name} needs an upper bound"
        version = importlib.metadata.version(name)
        assert req.specifier.contains(version, prereleases=True), f"{name} {version} is outside {req.specifier}"


def test_no_private_library_names_in_sparring():
    """The issue's grep, plus module-path imports from TRL (only `from trl import X` is public)."""
    offenders = []
    for path in (ROOT / "sparring").rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"trl\.[a-z_.]*\._|\._signature|fused_lm_head|from trl\.|import trl\.", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_trl_public_trainers_and_the_config_fields_we_set():
    import trl

    for name in ("SFTConfig", "SFTTrainer", "DPOConfig", "DPOTrainer", "KTOConfig", "KTOTrainer", "GRPOConfig",
                 "GRPOTrainer"):
        assert hasattr(trl, name), f"trl.{name} is gone"
    assert {"assistant_only_loss", "max_length"} <= _fields(trl.SFTConfig)
    assert {"beta", "loss_type", "max_length"} <= _fields(trl.DPOConfig)
    assert trl.DPOConfig(output_dir="/tmp/x", loss_type=["sigmoid", "sft"], use_cpu=True, bf16=False).loss_type \
        == ["sigmoid", "sft"]
    assert {"beta", "desirable_weight", "undesirable_weight", "max_length"} <= _fields(trl.KTOConfig)
    assert {"num_generations", "beta"} <= _fields(trl.GRPOConfig)
    assert "rollout_func" in inspect.signature(trl.GRPOTrainer.__init__).parameters
    for trainer in (trl.SFTTrainer, trl.DPOTrainer, trl.GRPOTrainer):  # (KTO: covered by its training test)
        assert "peft_config" in inspect.signature(trainer.__init__).parameters


def test_transformers_trainer_hooks_the_soft_trainer_overrides():
    from transformers import Trainer, TrainingArguments

    assert list(inspect.signature(Trainer.compute_loss).parameters)[:5] == [
        "self", "model", "inputs", "return_outputs", "num_items_in_batch"]
    assert list(inspect.signature(Trainer.log).parameters)[:2] == ["self", "logs"]
    assert {"remove_unused_columns", "gradient_checkpointing", "use_cpu"} <= _fields(TrainingArguments)


def test_peft_calls_we_use():
    import peft

    assert {"disable_adapter", "save_pretrained", "add_adapter"} <= set(dir(peft.PeftModel))
    assert "selected_adapters" in inspect.signature(peft.PeftModel.save_pretrained).parameters
    assert "is_trainable" in inspect.signature(peft.PeftModel.from_pretrained).parameters
    assert callable(peft.get_peft_model)


@pytest.mark.slow
def test_trl_dpo_logs_the_metrics_the_loop_report_reads(tmp_path):
    """TRL's own DPO losses must keep logging rewards/* under these names (the report reads them)."""
    from sparring.models.tiny import save_tiny_model
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train

    prompt = [{"role": "user", "content": "Your turn."}]
    rows = [{"prompt": prompt, "chosen": [{"role": "assistant", "content": f"offer {i}"}],
             "rejected": [{"role": "assistant", "content": "no"}], "preference": 1.0} for i in range(2)]
    tiny = save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)
    result = train(rows, TrainSettings(method="dpo", model=str(tiny), max_steps=1, batch_size=2, max_length=128),
                   tmp_path / "out")
    assert {"rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"} <= set(result.metrics)
    assert result.metrics["soft/floor"] == 0.0  # hard labels
