"""A loop that starts from SFT on a demonstrator's games (`warm_start: {demonstrator: MODEL}`, the
debate DPO recipe's warm start, docs/learning/debate-dpo-contrast.md): the demonstrator plays the
policy's seat in the self-play games (not branched), its turns are the SFT rows, the warm start's
own trainer settings apply, and bad settings are a clear error before anything loads."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from pydantic import ValidationError

from sparring.train.loop.config import LoopConfig, WarmStart

pytestmark = pytest.mark.slow  # saves a tiny model and trains a LoRA of it: a few seconds

SCRIPTED = Path(str(resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"))
DATA = {"name": "generated", "args": {"people": 2, "filler_sentences": 0}}


def _config(tmp_path: Path, model: str, warm: dict) -> LoopConfig:
    return LoopConfig.model_validate({
        "name": "demo-loop", "method": "dpo", "alias": "p", "iterations": 1, "output_dir": str(tmp_path / "loop"),
        "models_file": str(SCRIPTED), "warm_start": warm,
        "selfplay": {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
                     "dataset": {**DATA, "split": "train", "limit": 2},
                     "agents": {"policy": {"role": "debater", "model": "ignored",
                                           "sampling": {"temperature": 0.7, "max_new_tokens": 8}},
                                "judge": {"role": "judge", "model": "quote-judge"}},
                     "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"],
                                    "flip": True},
                     "branch": {"target": "policy", "k": 4, "mode": "half", "depth": 1}},
        "train": {"method": "dpo", "model": model, "learning_rate": 1e-4, "batch_size": 2, "max_length": 1024},
        "evaluation": {"dataset": {**DATA, "split": "test", "limit": 2}}})


def test_settings_errors_name_the_key_before_anything_loads():
    with pytest.raises(ValidationError, match="exactly one of `file`"):
        WarmStart(demonstrator="debate-demonstrator", adapter="a")
    with pytest.raises(ValidationError, match="unknown trainer setting.*learnig_rate"):
        WarmStart(demonstrator="debate-demonstrator", train={"learnig_rate": 1e-3})
    with pytest.raises(ValidationError, match="method cannot differ"):
        WarmStart(demonstrator="debate-demonstrator", train={"method": "dpo"})
    with pytest.raises(ValidationError, match="not to a given `adapter`"):
        WarmStart(adapter="a", train={"max_steps": 3})
    with pytest.raises(ValidationError, match="learning_rate"):  # a bad value fails when the settings are built
        WarmStart(demonstrator="d", train={"learning_rate": -1}).settings(LoopConfig.model_fields["train"]
                                                                          .default_factory())


def test_the_warm_start_trains_on_the_demonstrators_turns_with_its_own_settings(tmp_path):
    from sparring.models.tiny import save_tiny_model
    from sparring.records.reader import iter_records
    from sparring.train.loop.driver import Loop

    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    warm = {"demonstrator": "debate-demonstrator", "train": {"learning_rate": 5e-4, "max_steps": 2, "batch_size": 4}}
    config = _config(tmp_path, str(tiny), warm)
    settings = config.warm_start.settings(config.train)
    assert (settings.method, settings.learning_rate, settings.max_steps, settings.batch_size) == ("sft", 5e-4, 2, 4)
    assert settings.max_length == 1024  # the loop's own settings where the warm start says nothing

    loop = Loop(config, "<test>")
    demos = loop.demonstration_experiment()
    assert "branch" not in demos and demos["agents"]["policy"]["model"] == "debate-demonstrator"
    assert config.selfplay["agents"]["policy"]["model"] == "ignored"  # the loop's own config is untouched

    loop.start()
    warm_state = loop.state["warm"]
    records = list(iter_records(warm_state["run_dir"]))
    assert len(records) == 4 and all(r.status == "complete" for r in records)  # 2 questions, both sides
    speeches = [c.completions[0].text for r in records for c in r.calls
                if c.op == "generate" and c.player != "judge" and c.completions]
    assert all(s.startswith("The answer is") for s in speeches)  # the demonstrator's, not the model's
    assert warm_state["steps"] == 2 and warm_state["rows"] == len(speeches) == 8  # both seats are the policy's
    assert loop._adapter(0) == warm_state["adapter"] and Path(warm_state["adapter"]).is_dir()


def test_dry_run_plans_the_demonstrations(tmp_path):
    from sparring.models.tiny import save_tiny_model
    from sparring.train.dry_run import loop_plan

    tiny = save_tiny_model(tmp_path / "tiny", vocab=1024)
    plan = loop_plan(_config(tmp_path, str(tiny), {"demonstrator": "debate-demonstrator",
                                                   "train": {"max_steps": 3}}), "<test>")
    assert plan["warm"]["demonstrator"] == "debate-demonstrator"
    assert plan["warm"]["steps"].startswith("3")
    assert plan["warm"]["play"]["schedule"]["episodes"] == 4
