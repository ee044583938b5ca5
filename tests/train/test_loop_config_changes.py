"""A loop notices an edited config: each stage stores the config it ran with, a rerun with other
settings stops (exit 2) naming the changed keys, and `--restart-from STAGE` starts over from a
stage on purpose, moving that stage's and later stages' outputs aside. The stages are stubs here
(the real ones are exercised in test_loop.py); what is tested is the bookkeeping."""

from __future__ import annotations

import json

import pytest
import yaml

from sparring.train.fingerprint import ConfigChanged
from sparring.train.loop.config import load_loop
from sparring.train.loop.driver import Loop


@pytest.fixture
def stub_stages(monkeypatch):
    calls: list[str] = []

    def stage(name):
        def run(self, k):
            calls.append(f"{k}:{name}")
            if name == "train":
                out = self.dir / f"iter-{k}" / "adapter"
                out.mkdir(parents=True, exist_ok=True)
                (out / "adapter_config.json").write_text("{}")
                return {"adapter": str(out)}
            return {"stub": name}
        return run

    for name in ("play", "export", "train", "evaluate"):
        monkeypatch.setattr(Loop, name, stage(name))
    monkeypatch.setattr(Loop, "write_report", lambda self: self.dir / "report.md")
    return calls


def write(tmp_path, **changes):
    config = {"alias": "p", "iterations": 2, "output_dir": str(tmp_path / "loop"), "policy_agent": "policy",
              "selfplay": {"game": "debate", "dataset": {"name": "generated", "split": "train", "limit": 2},
                           "agents": {"policy": {"role": "debater", "model": "smollm2-135m"}},
                           "tournament": {"type": "self_play", "participants": ["policy"]}},
              "train": {"method": "dpo", "model": "smollm2-135m", "learning_rate": 1e-4},
              "evaluation": {"dataset": {"name": "generated", "split": "test", "limit": 1}}}
    for key, value in changes.items():
        node = config
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_changed_config_stops_naming_the_keys_and_restart_from_redoes_from_that_stage(tmp_path, stub_stages):
    config, file = load_loop(str(write(tmp_path)))
    Loop(config, file).run()
    assert len(stub_stages) == 8  # 2 iterations x play, export, train, evaluate
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    assert set(state["fingerprints"]) >= {"1:play", "1:train", "2:evaluate"}

    config, file = load_loop(str(write(tmp_path, **{"train.learning_rate": 3e-4})))
    with pytest.raises(ConfigChanged) as err:
        Loop(config, file).run()
    message = str(err.value)
    assert "train.learning_rate" in message and "1:train" in message and "--restart-from 1:train" in message
    assert "selfplay" not in message  # only what changed is named
    assert len(stub_stages) == 8  # nothing ran

    stub_stages.clear()
    Loop(config, file).run(restart_from="1:train")
    assert stub_stages == ["1:train", "1:evaluate", "2:play", "2:export", "2:train", "2:evaluate"]
    discarded = list((tmp_path / "loop" / "discarded").iterdir())
    assert len(discarded) == 1 and (discarded[0] / "iter-1" / "adapter" / "adapter_config.json").is_file()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    assert state["fingerprints"]["1:train"]["config"]["train"]["learning_rate"] == 3e-4

    stub_stages.clear()
    Loop(config, file).run()  # unchanged config: nothing to do
    assert stub_stages == []


def test_more_iterations_continue_and_a_cosmetic_change_is_fine(tmp_path, stub_stages):
    config, file = load_loop(str(write(tmp_path, iterations=1)))
    Loop(config, file).run()
    stub_stages.clear()
    config, file = load_loop(str(write(tmp_path, iterations=2, description="longer",
                                       **{"train.max_minutes": 30, "train.save_steps": 5})))
    Loop(config, file).run()
    assert stub_stages == ["2:play", "2:export", "2:train", "2:evaluate"]


def test_cli_exits_2_on_a_changed_config(tmp_path, stub_stages, capsys):
    from sparring.cli import main

    config, file = load_loop(str(write(tmp_path)))
    Loop(config, file).run()
    write(tmp_path, **{"selfplay.dataset.limit": 3})
    with pytest.raises(SystemExit) as exit_:
        main(["train", "loop", str(tmp_path / "loop.yaml")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "selfplay.dataset.limit: 2 -> 3" in " ".join(err.split()) and "1:play" in err


def test_restart_from_rejects_an_unknown_stage(tmp_path, stub_stages):
    from sparring.errors import SparringError

    config, file = load_loop(str(write(tmp_path)))
    with pytest.raises(SparringError, match="expected 'warm', 'K' or 'K:STAGE'"):
        Loop(config, file).run(restart_from="1:bake")


def test_grpo_output_remembers_its_config(tmp_path):
    """GRPO: a changed config stops the rerun naming the key; more steps or a time limit do not."""
    from sparring.train.online.launch import load_online, state_for

    config, file = load_online("grpo-quickstart")
    config = config.model_copy(update={"output_dir": str(tmp_path / "grpo")})
    state_for(config, file).start()
    state_for(config.model_copy(update={"max_steps": 40, "max_minutes": 5.0}), file).check()
    with pytest.raises(ConfigChanged, match=r"learning_rate: 2e-05 -> 0.0001.*--restart"):
        state_for(config.model_copy(update={"learning_rate": 1e-4}), file).check()
    moved = state_for(config, file).restart()
    assert moved == ["state.json"] and not (tmp_path / "grpo" / "state.json").exists()


def test_a_training_stage_cut_by_the_time_limit_is_not_marked_done(tmp_path, stub_stages, monkeypatch):
    """`--max-minutes` in a loop: the cut train stage stops the loop (exit 3 in the CLI) and the
    rerun redoes that stage (resuming its checkpoint), not the next one."""
    from types import SimpleNamespace

    import sparring.train.trainers as trainers
    from sparring.train.checkpoints import TrainingStopped

    monkeypatch.undo()  # the real Loop.train, with a stub trainer
    monkeypatch.setattr(Loop, "play", lambda self, k: {"run_dir": "x"})
    monkeypatch.setattr(Loop, "export", lambda self, k: {"path": "rows"})
    monkeypatch.setattr(Loop, "evaluate", lambda self, k: {})
    monkeypatch.setattr(Loop, "write_report", lambda self: self.dir / "report.md")
    complete = [False]

    def fake_train(rows, settings, out):
        assert settings.max_minutes == 1.5
        return SimpleNamespace(adapter=out, rows=1, dropped=0, steps=2, loss=1.0, complete=complete[0], metrics={})

    monkeypatch.setattr(trainers, "train", fake_train)
    # no pair fit: the stub trainer saves no adapter to score
    config, file = load_loop(str(write(tmp_path, iterations=1, pair_fit=False, **{"train.max_minutes": 1.5})))
    with pytest.raises(TrainingStopped, match="iteration 1: train stopped by the time limit"):
        Loop(config, file).run()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    assert state["iterations"]["1"]["done"] == ["play", "export"]
    complete[0] = True
    Loop(config, file).run()
    state = json.loads((tmp_path / "loop" / "state.json").read_text())
    assert state["iterations"]["1"]["done"] == ["play", "export", "train", "register", "check", "evaluate"]
