"""Bounded, resumable training: periodic checkpoints, a time limit that saves and stops, a rerun that
resumes from the last checkpoint, and a changed config that stops the rerun (exit 2) until
`--restart`."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from sparring.train.checkpoints import TimeLimit
from sparring.train.config import TrainSettings

# Tiny-model training: seconds on an idle machine, minutes on a loaded one.
slow = pytest.mark.slow


def sft_rows(n: int = 8) -> list[dict]:
    return [{"messages": [{"role": "user", "content": f"Say {i}."}, {"role": "assistant", "content": f"{i} it is."}]}
            for i in range(n)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from sparring.models.tiny import save_tiny_model

    return str(save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0, vocab=1024))


def test_time_limit_asks_the_trainer_to_save_and_stop_once_the_time_is_up():
    now = [0.0]
    limit = TimeLimit(1.0, clock=lambda: now[0])
    state, control = SimpleNamespace(global_step=3, max_steps=10), SimpleNamespace(should_save=False,
                                                                                   should_training_stop=False)
    limit.on_train_begin(None, state, control)
    now[0] = 59.0
    limit.on_step_end(None, state, control)
    assert not control.should_save and not control.should_training_stop
    now[0] = 61.0
    limit.on_step_end(None, state, control)
    assert control.should_save and control.should_training_stop and limit.stopped


@slow
def test_time_limit_checkpoint_and_resume(tiny, tmp_path):
    from sparring.train.trainers import train_sft

    base = dict(model=tiny, max_steps=4, batch_size=2, save_steps=0, lora={"r": 4, "alpha": 8})
    out = tmp_path / "out"
    first = train_sft(sft_rows(), TrainSettings(**base, max_minutes=1e-6), out)  # stops after its first step
    assert not first.complete and first.steps == 1
    assert (out / "trainer" / "checkpoint-1").is_dir()  # saved although save_steps is 0
    assert json.loads((out / "train_summary.json").read_text())["complete"] is False
    second = train_sft(sft_rows(), TrainSettings(**base), out)
    assert second.complete and second.steps == 4
    assert second.resumed_from and second.resumed_from.endswith("checkpoint-1")


@slow
def test_save_steps_writes_periodic_checkpoints_and_keeps_the_last_ones(tiny, tmp_path):
    from sparring.train.trainers import train_sft

    settings = TrainSettings(model=tiny, max_steps=4, batch_size=1, save_steps=1, save_total_limit=2,
                             lora={"r": 4, "alpha": 8})
    train_sft(sft_rows(4), settings, tmp_path / "out")
    names = sorted(p.name for p in (tmp_path / "out" / "trainer").iterdir() if p.name.startswith("checkpoint-"))
    assert names == ["checkpoint-3", "checkpoint-4"]


@slow
def test_cli_rerun_with_other_settings_exits_2_until_restart(tiny, tmp_path, capsys):
    from sparring.cli import main

    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in sft_rows(4)))
    cfg = tmp_path / "sft.yaml"

    def run(lr: float, *extra: str) -> int:
        cfg.write_text(f"learning_rate: {lr}\nbatch_size: 2\nlora: {{r: 4, alpha: 8}}\n")
        try:
            main(["train", "sft", str(data), "-o", str(tmp_path / "out"), "-c", str(cfg), "--model", tiny,
                  "--max-steps", "1", *extra])
        except SystemExit as e:
            return int(e.code or 0)
        return 0

    assert run(1e-4) == 0
    capsys.readouterr()
    assert run(3e-4) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "learning_rate: 0.0001 -> 0.0003" in err and "--restart" in err
    assert run(3e-4, "--restart") == 0
    discarded = list((tmp_path / "out" / "discarded").iterdir())
    assert (discarded[0] / "adapter_config.json").is_file()
    assert json.loads((tmp_path / "out" / "state.json").read_text())["config"]["learning_rate"] == 3e-4


def test_activation_checkpointing_default_is_off_for_sft_and_on_for_preference_pairs():
    from sparring.train.arguments import checkpointing

    assert checkpointing(TrainSettings(method="sft")) is False  # measured: 25% faster, +1.5 GB peak
    assert checkpointing(TrainSettings(method="dpo")) is True  # measured: 13.5 -> 8 GB peak
    assert checkpointing(TrainSettings(method="kto")) is True
    assert checkpointing(TrainSettings(method="sft", gradient_checkpointing=True)) is True


def test_checkpoint_settings_reach_the_trainer_arguments(tmp_path):
    from sparring.train.arguments import training_args

    args = training_args(TrainSettings(save_steps=5, save_total_limit=3), tmp_path)
    assert (args["save_strategy"], args["save_steps"], args["save_total_limit"]) == ("steps", 5, 3)
    assert training_args(TrainSettings(save_steps=0), tmp_path)["save_strategy"] == "no"


def test_lora_learning_rate_default_is_the_measured_one():
    assert TrainSettings().learning_rate == 2e-4  # bench_lora_defaults.py: 4x the held-out gain of 5e-5
