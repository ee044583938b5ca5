"""The settings researchers tune reach TRL/PEFT; `trainer_args:` is checked against the installed TRL
config; trackers are checked before anything loads and the loops' own numbers reach TensorBoard;
a bare Hugging Face id works wherever a model name does."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sparring.errors import ConfigError
from sparring.train.arguments import check_settings, training_args
from sparring.train.config import TrainSettings


def test_tuned_settings_reach_the_trl_config(tmp_path):
    from trl import DPOConfig, SFTConfig

    settings = TrainSettings(model="unused", optim="adafactor", weight_decay=0.01, lr_scheduler_type="cosine",
                             warmup_steps=0.1, max_grad_norm=0.5, trainer_args={"neftune_noise_alpha": 5.0})
    config = SFTConfig(**training_args(settings, tmp_path))
    assert (config.optim, config.weight_decay, config.lr_scheduler_type, config.max_grad_norm) == \
        ("adafactor", 0.01, "cosine", 0.5)
    assert config.neftune_noise_alpha == 5.0
    assert getattr(config, "warmup_ratio", None) == 0.1 or config.warmup_steps == 0.1
    dpo = TrainSettings(model="unused", method="dpo", trainer_args={"ref_model_mixup_alpha": 0.5})
    assert DPOConfig(**training_args(dpo, tmp_path)).ref_model_mixup_alpha == 0.5


def test_lora_bias_and_modules_to_save_reach_peft():
    from sparring.train.policy import lora_config

    lora = lora_config(TrainSettings(lora={"bias": "lora_only", "modules_to_save": ["lm_head"], "dropout": 0.1}))
    assert lora.bias == "lora_only" and lora.lora_dropout == 0.1 and set(lora.modules_to_save) == {"lm_head"}


@pytest.mark.parametrize("extra,match", [
    ({"neftune_noise_alfa": 5}, r"'neftune_noise_alfa' is not a field of the installed SFTConfig \(did you mean "
                                r"'neftune_noise_alpha'"),
    ({"learning_rate": 1e-3}, "'learning_rate' is set by sparring: use learning_rate instead"),
    ({"per_device_train_batch_size": 8}, "use batch_size instead"),
])
def test_the_escape_hatch_rejects_unknown_and_owned_keys(extra, match):
    with pytest.raises(ConfigError, match=match) as err:
        check_settings(TrainSettings(model="unused", trainer_args=extra))
    assert err.value.key.startswith("trainer_args.")


def test_unknown_optimizer_scheduler_and_tracker_are_named():
    with pytest.raises(ConfigError, match="unknown optimizer 'adamw_turbo'"):
        check_settings(TrainSettings(optim="adamw_turbo"))
    with pytest.raises(ConfigError, match="unknown scheduler 'cosinus'"):
        check_settings(TrainSettings(lr_scheduler_type="cosinus"))
    with pytest.raises(ConfigError, match="unknown tracker 'tensorbored'"):
        check_settings(TrainSettings(report_to=["tensorbored"]))


def test_a_tracker_that_is_not_installed_names_its_extra(monkeypatch):
    import transformers.integrations as integrations

    from sparring.train import tracking

    monkeypatch.setattr(integrations, "get_available_reporting_integrations", lambda: ["tensorboard"])
    with pytest.raises(ConfigError, match=r"tracker 'wandb' is not installed: pip install 'sparring\[wandb\]'"):
        tracking.check_report_to(["wandb"])
    assert TrainSettings(report_to="tensorboard").report_to == ["tensorboard"]
    assert TrainSettings(report_to="none").report_to == []


def test_the_loop_metric_log_writes_tensorboard_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from sparring.train.loop.report import iteration_metrics
    from sparring.train.tracking import MetricLog

    it = {"evaluate": {"vs": {"base": {"win_rate": 0.75, "ci": [0.5, 0.9], "games": 8}},
                       "judge_accuracy": {"accuracy": 0.6, "ci": [0.4, 0.8], "n": 8},
                       "games": {"a vs b": {"episodes": 8, "metrics": {"agreement": {"value": 0.5}}}}},
          "train": {"loss": 0.69, "steps": 3, "metrics": {"rewards/margins": 0.2}}, "export": {"rows": 6}}
    log = MetricLog(["tensorboard"], tmp_path, "loop")
    for k in (1, 2):
        log.log(iteration_metrics(it), step=k)
    log.close()
    (events,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"heldout/win_rate_vs_base", "heldout/judge_accuracy", "heldout/a_vs_b/agreement", "train/loss",
            "train/rewards/margins", "train/rows"} <= tags
    assert [e.step for e in acc.Scalars("heldout/win_rate_vs_base")] == [1, 2]
    assert acc.Scalars("heldout/win_rate_vs_base")[0].value == pytest.approx(0.75)


def test_a_bare_hub_id_is_a_model_name():
    from sparring.models.registry import load_model_specs, resolve_name
    from sparring.train.policy import base_args

    specs = load_model_specs()
    assert resolve_name("Qwen/Qwen2.5-0.5B-Instruct", specs) == "Qwen/Qwen2.5-0.5B-Instruct"
    spec = specs["Qwen/Qwen2.5-0.5B-Instruct"]
    assert spec.backend == "hf" and spec.args == {"model": "Qwen/Qwen2.5-0.5B-Instruct"}
    assert base_args("Qwen/Qwen2.5-0.5B-Instruct")["model"] == "Qwen/Qwen2.5-0.5B-Instruct"


def test_dry_run_shows_the_resolved_trainer_settings(tmp_path):
    pytest.importorskip("tensorboard")
    import json

    import yaml

    from sparring.cli.root import app

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}) + "\n")
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"optim": "adafactor", "lr_scheduler_type": "cosine", "warmup_steps": 0.1,
                                      "lora": {"r": 4, "bias": "all"}, "trainer_args": {"neftune_noise_alpha": 5}}))
    result = CliRunner().invoke(app, ["train", "sft", str(rows), "-o", str(tmp_path / "out"), "-c", str(config),
                                      "--dry-run", "--report-to", "tensorboard"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    for part in ("optim adafactor", "lr_scheduler_type cosine", "report_to tensorboard", "r=4", "bias=all",
                 "trainer_args {'neftune_noise_alpha': 5}"):
        assert part in out, (part, out)
    bad = CliRunner().invoke(app, ["train", "sft", str(rows), "-o", str(tmp_path / "out"), "--dry-run",
                                   "--report-to", "tensorbored"])
    assert bad.exit_code == 2 and "unknown tracker 'tensorbored'" in bad.output


def test_a_model_named_only_in_a_models_file_resolves_through_it(tmp_path):
    """A loop's `train.model` may be an entry of the loop's own `models_file` (the trainer used to
    look it up in the shipped models only)."""
    import yaml

    from sparring.train.policy import base_args, base_spec

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {"my-base": {"backend": "hf", "args": {"model": "acme/base-1b",
                                                                                     "revision": "v2"}}}}))
    with pytest.raises(ConfigError, match="unknown model 'my-base'"):
        base_spec("my-base")
    assert base_args("my-base", str(models)) == {"model": "acme/base-1b", "revision": "v2"}


def test_a_policy_load_reads_the_model_registry_once(tmp_path, tiny_model_dir, monkeypatch):
    """`load_policy` resolves its base model once (it was 7-8 registry reads a load): the model,
    its tokenizer and the adapter check all use that one resolution."""
    import yaml

    import sparring.models.registry as registry
    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": {"tiny-base": {"backend": "hf", "args": {"model": str(tiny_model_dir)}}}}))
    reads = []
    real = registry.load_model_specs
    monkeypatch.setattr(registry, "load_model_specs", lambda *a, **k: reads.append(a) or real(*a, **k))
    model, tokenizer = load_policy(TrainSettings(model="tiny-base", models_file=str(models)))
    assert len(reads) == 1 and tokenizer.pad_token is not None
    assert model.config.num_hidden_layers == 2
