"""A loop that starts from an adapter trained elsewhere (`warm_start: {adapter: DIR}`, e.g. SFT
on demonstrations): ALIAS@0 is the base model with it, iteration 1 trains on from it, and a bad
adapter or an ambiguous warm start is a clear error before anything is played."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from sparring.errors import ConfigError
from sparring.train.loop.config import LoopConfig, WarmStart
from sparring.train.loop.driver import Loop

pytestmark = pytest.mark.slow  # saves a tiny model and a LoRA of it: a few seconds


def _config(tmp_path, tiny, warm):
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {}}))
    dataset = {"name": "dond_generated", "args": {"n": 40, "seed": 1}}
    return LoopConfig.model_validate({
        "method": "sft", "alias": "p", "iterations": 1, "output_dir": str(tmp_path / "loop"),
        "models_file": str(tmp_path / "models.yaml"), "warm_start": warm,
        "selfplay": {"game": "dond", "dataset": {**dataset, "split": "train", "limit": 2},
                     "agents": {"policy": {"role": "negotiator", "model": "ignored"}},
                     "tournament": {"type": "self_play", "participants": ["policy"]}},
        "train": {"method": "sft", "model": str(tiny), "max_steps": 1},
        "evaluation": {"dataset": {**dataset, "split": "test", "limit": 2}}})


def test_exactly_one_source():
    with pytest.raises(ValidationError, match="exactly one of `file`"):
        WarmStart(file="data.txt", adapter="a")
    with pytest.raises(ValidationError, match="exactly one of `file`"):
        WarmStart()


def test_alias_0_is_the_base_with_the_adapter_and_iteration_1_continues_it(tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from sparring.models.tiny import save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    lora = get_peft_model(AutoModelForCausalLM.from_pretrained(str(tiny)),
                          LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    lora.save_pretrained(str(tmp_path / "sft"))
    loop = Loop(_config(tmp_path, tiny, {"adapter": str(tmp_path / "sft")}), "<test>")
    loop.start()
    entry = yaml.safe_load(loop.models_file.read_text())["models"]["p@0"]
    assert entry["args"]["adapters"] == {"iter0": str((tmp_path / "sft").resolve())}
    assert entry["args"]["default_adapter"] == "iter0"
    assert loop.state["warm"]["rows"] == 0  # nothing trained: the adapter is taken as it is
    assert loop._adapter(0) == str((tmp_path / "sft").resolve())  # what iteration 1's training continues

    from sparring.train.dry_run import loop_plan

    (tmp_path / "dry").mkdir()
    plan = loop_plan(_config(tmp_path / "dry", tiny, {"adapter": str(tmp_path / "sft")}), "<test>")
    assert plan["warm"] == {"adapter": str(tmp_path / "sft"), "rows": 0, "steps": 0}


def test_a_missing_adapter_is_a_config_error_before_anything_runs(tmp_path):
    from sparring.models.tiny import save_tiny_model

    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    loop = Loop(_config(tmp_path, tiny, {"adapter": str(tmp_path / "nope")}), "<test>")
    with pytest.raises(ConfigError, match="does not exist"):
        loop.start()
    assert "warm" not in loop.state
