"""Training under `accelerate launch` with several processes (gloo on CPU, `configs/accelerate/cpu2.yaml`):
each game is played once, state.json and the adapter are written by one process, the adapter is
the one a single process trains on the same data, a failure on the main process stops the others
with its reason. The launched tests are slow (two processes load torch + TRL); the helpers' single
process behaviour and the GRPO group numbering are fast."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparring.train import distributed

REPO = Path(__file__).resolve().parents[2]
CPU2 = REPO / "configs" / "accelerate" / "cpu2.yaml"

# Loaded by every launched process (sitecustomize on PYTHONPATH): logs each file a process opens
# for writing (or renames into place) under WATCH, one log per rank, so a test can prove that only
# the main process wrote state.json, the run directories and the adapter.
AUDIT = '''
import os, sys
_root, _logs = os.environ.get("SPARRING_TEST_WATCH"), os.environ.get("SPARRING_TEST_WRITES")
if _root and _logs:
    _fd = os.open(os.path.join(_logs, "writes-%s.log" % os.environ.get("RANK", "single")),
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    def _hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, os.PathLike)):
            mode, flags = args[1], args[2] or 0
            if not ((isinstance(mode, str) and any(c in mode for c in "wax+"))
                    or (mode is None and flags & (os.O_WRONLY | os.O_RDWR))):
                return
            path = os.fspath(args[0])
        elif event == "os.rename":
            path = os.fspath(args[1])
        else:
            return
        path = os.path.abspath(path)
        if path.startswith(_root):
            os.write(_fd, (path + "\\n").encode())
    sys.addaudithook(_hook)
'''


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(tmp_path: Path, args: list[str], watch: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """`accelerate launch --config_file configs/accelerate/cpu2.yaml ARGS` (2 processes, gloo)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(AUDIT)
    logs = tmp_path / "writes"
    logs.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), str(REPO)]), "OMP_NUM_THREADS": "1",
           "SPARRING_TEST_WATCH": str(watch.resolve()), "SPARRING_TEST_WRITES": str(logs),
           "TRL_EXPERIMENTAL_SILENCE": "1"}
    env.pop("WORLD_SIZE", None)
    cmd = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch", "--config_file", str(CPU2),
           "--main_process_port", str(_port()), *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def writes(tmp_path: Path, rank: int) -> list[str]:
    path = tmp_path / "writes" / f"writes-{rank}.log"
    return path.read_text().splitlines() if path.is_file() else []


def adapter_tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def assert_same_adapter(a: Path, b: Path) -> None:
    import torch

    ta, tb = adapter_tensors(a), adapter_tensors(b)
    assert set(ta) == set(tb) and ta
    assert any(t.abs().sum() > 0 for k, t in ta.items() if "lora_B" in k)  # trained: LoRA B starts at zero
    for k in ta:
        torch.testing.assert_close(ta[k], tb[k], atol=1e-5, rtol=1e-4, msg=k)


# -- single process: every helper is the plain behaviour -----------------------------------------
def test_helpers_without_a_launcher_run_in_this_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not distributed.launched() and distributed.is_main() and distributed.process_index() == 0
    assert distributed.on_main(lambda: 3, "x") == 3
    assert distributed.stage(lambda: "t", all_ranks=True, what="train") == "t"
    assert distributed.preceding(["a"]) == [] and distributed.from_main({"k": 1}) == {"k": 1}
    with pytest.raises(ValueError, match="boom"):
        distributed.on_main(lambda: (_ for _ in ()).throw(ValueError("boom")), "x")
    distributed.finish()  # nothing to tear down


def test_grpo_groups_split_over_two_processes_play_the_episodes_of_one_process():
    """Each process plays whole groups (prompts_per_step divides by the processes); the groups on
    process 1 continue process 0's numbering, so the episodes are those a single process plays."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.models.tiny import tiny_tokenizer
    from sparring.train.online.rollout import EpisodeRollout, prompt_rows

    from .test_grpo import dond, partner

    with Arena.from_config(dond(), models={"learner": ScriptedModel("learner"), "partner": partner()}) as arena:
        rollout = EpisodeRollout(arena, "learner", tiny_tokenizer(), num_generations=2)
        prompts = [r["prompt"] for r in prompt_rows(sorted(arena.instances)[:2], [0])]
        one = rollout.jobs(prompts)
        split = rollout.jobs(prompts[:1]) + rollout.jobs(prompts[1:], first=1)
        assert [(j.seed, j.repeat) for j in split] == [(j.seed, j.repeat) for j in one]
        assert len({j.seed for j in split}) == 4
        unnumbered = rollout.jobs(prompts[:1]) + rollout.jobs(prompts[1:])  # without `first`
        assert [j.repeat for j in unnumbered] != [j.repeat for j in one]


# -- two processes --------------------------------------------------------------------------------
FAIL = '''
from sparring.train import distributed

def fail():
    raise RuntimeError("judge server unreachable")

try:
    distributed.on_main(fail, "iteration 1: play")
except Exception as err:
    print("rank", distributed.process_index(), type(err).__name__, err, flush=True)
    raise SystemExit(3)
'''


@pytest.mark.slow
def test_a_failure_on_the_main_process_stops_every_process_with_its_reason(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(FAIL)
    result = launch(tmp_path, [str(script)], watch=tmp_path, timeout=300)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "RuntimeError judge server unreachable" in out
    # the two processes print at once, so their lines can interleave: look for each part
    assert "RankFailed iteration 1: play failed on the main process: RuntimeError: judge server unreachable" in out


TRAIN_FAIL = '''
from sparring.train import distributed

def train():
    if distributed.process_index() == 1:
        raise RuntimeError("CUDA out of memory on rank 1")
    distributed.barrier()  # rank 0 waits in a collective, as inside a training step

distributed.everywhere(train, "iteration 1: train")
'''


@pytest.mark.slow
def test_a_failure_inside_training_on_another_process_stops_the_main_one(tmp_path):
    """Rank 1 dies while rank 0 waits in a collective: the launcher stops rank 0 and the run
    fails, the reason in the log, instead of rank 0 waiting for the process-group timeout."""
    script = tmp_path / "train_fail.py"
    script.write_text(TRAIN_FAIL)
    result = launch(tmp_path, [str(script)], watch=tmp_path, timeout=300)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "RuntimeError: CUDA out of memory on rank 1" in out
    assert "rank      : 1" in out  # torchrun's summary names the failed process


EXIT = '''
import os
import torch.distributed as dist
from sparring.cli.common import run_guarded
from sparring.train import distributed

run_guarded(distributed.barrier)  # creates the process group, as a training command does
left = dist.is_initialized()  # one write per line: the two processes share the output pipe
os.write(1, f"rank {distributed.process_index()} group left after the command: {left}\\n".encode())
'''


@pytest.mark.slow
def test_a_command_destroys_its_process_group_before_the_interpreter_exits(tmp_path):
    """Left to interpreter shutdown, gloo's threads can be destroyed while joinable: 'terminate
    called without an active exception' and SIGABRT on rank 0 of a DPO loop that had finished
    (seen once in CI). Every command run through `run_guarded` destroys the group itself."""
    script = tmp_path / "exit.py"
    script.write_text(EXIT)
    result = launch(tmp_path, [str(script)], watch=tmp_path, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} group left after the command: False" in out
    assert "terminate called" not in out


@pytest.fixture
def tiny(tmp_path):
    from sparring.models.tiny import save_tiny_model

    return save_tiny_model(tmp_path / "tiny", seed=0, vocab=1024)


def dpo_loop_config(tmp_path: Path, tiny: Path, out: str, batch_size: int) -> Path:
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {
        "scripted-judge": {"backend": "scripted", "args": {"score_mode": "random", "seed": 5}}}}))
    config = {
        "name": "tiny-dist", "alias": "tiny-dpo", "iterations": 1, "output_dir": str(tmp_path / out),
        "models_file": str(tmp_path / "models.yaml"), "policy_agent": "policy",
        "selfplay": {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
                     "dataset": {"name": "generated", "split": "train", "limit": 2},
                     "agents": {"policy": {"role": "debater", "model": "ignored", "best_of_n": {"n": 2},
                                           "sampling": {"temperature": 1.0, "max_new_tokens": 6}},
                                "judge": {"role": "judge", "model": "scripted-judge"}},
                     "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"]}},
        "export": {"max_pairs": 4},
        "train": {"method": "dpo", "model": str(tiny), "max_steps": 1, "batch_size": batch_size, "max_length": 1024,
                  "lora": {"r": 4, "alpha": 8, "dropout": 0.0}, "dpo": {"soft": True}},
        "evaluation": {"dataset": {"name": "generated", "split": "test", "limit": 1}, "flip": False},
    }
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def episode_ids(run_dir: str) -> list[str]:
    from sparring.records.reader import iter_records

    return [r.id for r in iter_records(run_dir)]


@pytest.mark.slow
@pytest.mark.timeout(600)  # two `accelerate launch` runs and one in-process iteration: 112 s on 2 loaded cores
def test_a_dpo_iteration_on_two_processes_plays_once_writes_once_and_trains_what_one_process_trains(tmp_path, tiny):
    from sparring.train.loop.config import load_loop
    from sparring.train.loop.driver import Loop

    two = dpo_loop_config(tmp_path, tiny, "two", batch_size=2)  # 2 processes x 2 pairs = 4 pairs a step
    result = launch(tmp_path, ["scripts/run_iterative_dpo.py", "--configuration", str(two)], watch=tmp_path / "two")
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    state = json.loads((tmp_path / "two" / "state.json").read_text())
    it = state["iterations"]["1"]
    assert it["done"] == ["play", "export", "train", "register", "check", "evaluate"]
    assert it["export"]["pairs"] == 4 and it["train"]["steps"] == 1 and math.isfinite(it["train"]["loss"])

    # Only the main process wrote in the loop directory (state, runs, rows, adapter, models); the
    # other one only wrote the datasets library's tokenization caches in the trainer's scratch folder.
    main, other = writes(tmp_path, 0), writes(tmp_path, 1)
    assert all("/trainer/rows" in p for p in other), other[:5]
    assert any(p.endswith("state.json") for p in main) and any(p.endswith("adapter_config.json") for p in main)
    assert sorted(p.name for p in (tmp_path / "two" / "runs").iterdir()) == ["eval-1", "play-1"]

    # The same command again resumes: every stage is done, nothing is played or trained twice.
    adapter_file = Path(it["train"]["adapter"]) / "adapter_model.safetensors"
    mtime = adapter_file.stat().st_mtime_ns
    again = launch(tmp_path, ["scripts/run_iterative_dpo.py", "--configuration", str(two)], watch=tmp_path / "two")
    assert again.returncode == 0, (again.stdout + again.stderr)[-6000:]
    assert json.loads((tmp_path / "two" / "state.json").read_text())["iterations"]["1"] == it
    assert adapter_file.stat().st_mtime_ns == mtime and "iteration 1: play" not in again.stdout

    # One process, same games, one batch of 4 pairs: the same episodes and the same adapter.
    config, file = load_loop(str(dpo_loop_config(tmp_path, tiny, "one", batch_size=4)))
    Loop(config, file).run()
    ref = json.loads((tmp_path / "one" / "state.json").read_text())["iterations"]["1"]
    played = episode_ids(it["play"]["run_dir"])
    assert len(played) == len(set(played)) == it["export"]["episodes"]  # each game played once
    assert played == episode_ids(ref["play"]["run_dir"])
    assert sorted(episode_ids(it["evaluate"]["run_dir"])) == sorted(episode_ids(ref["evaluate"]["run_dir"]))
    assert_same_adapter(Path(it["train"]["adapter"]), Path(ref["train"]["adapter"]))


def sft_rows(n: int) -> list[dict]:
    return [{"messages": [{"role": "user", "content": f"Offer {i}: how many books?"},
                          {"role": "assistant", "content": f"I take {i % 3} books and the ball."}]} for i in range(n)]


@pytest.mark.slow
def test_run_sft_on_two_processes_saves_the_adapter_one_process_saves(tmp_path, tiny):
    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train_sft

    data = tmp_path / "data" / "train.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in sft_rows(4)))
    settings = {"model": str(tiny), "batch_size": 2, "max_length": 256, "learning_rate": 1e-3,
                "lora": {"r": 4, "alpha": 8, "dropout": 0.0}}
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(settings))
    out = tmp_path / "two"
    result = launch(tmp_path, ["scripts/run_sft.py", str(data.parent), "-o", str(out), "--config",
                               str(tmp_path / "sft.yaml"), "--max-steps", "1"], watch=out)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert result.stdout.count("SFT: 4 rows") == 1  # one summary, from the main process
    assert writes(tmp_path, 1) == [] and any(p.endswith("adapter_config.json") for p in writes(tmp_path, 0))
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 1 and math.isfinite(summary["train_loss"])

    one = train_sft(str(data), TrainSettings(**{**settings, "batch_size": 4, "max_steps": 1}), tmp_path / "one")
    assert one.steps == 1
    assert_same_adapter(out, tmp_path / "one")


@pytest.mark.slow
def test_two_grpo_steps_on_two_processes(tmp_path, tiny):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"models": {"partner": {"backend": "scripted", "args": {
        "mode": "cycle", "texts": ["[message] hi", "[propose] (1 books, 0 hats, 0 balls)"]}}}}))
    out = tmp_path / "out"
    cfg = {"name": "t", "model": str(tiny), "output_dir": str(out), "num_generations": 2, "max_steps": 2, "prompts_per_step": 2, "sequences_per_episode": 2,
           "experiment": {"game": "dond", "game_args": {"max_turns": 4, "untagged_as_message": True},
                          "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 20, "seed": 0},
                                      "limit": 2},
                          "models_file": str(tmp_path / "m.yaml"),
                          "agents": {"learner": {"role": "negotiator", "model": "learner",
                                                 "sampling": {"max_new_tokens": 5, "temperature": 1.0}},
                                     "partner": {"role": "negotiator", "model": "partner"}},
                          "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}}}
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(cfg))
    result = launch(tmp_path, ["scripts/run_grpo.py", "--configuration", str(tmp_path / "grpo.yaml")], watch=out)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    losses = [float(x) for x in re.findall(r"'loss': '?([-+0-9.eEnaif]+)", result.stdout)]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses), result.stdout[-3000:]
    curve = [json.loads(line) for line in (out / "rewards.jsonl").read_text().splitlines()]
    assert [p["step"] for p in curve] == [1, 2]  # logged once per step, by the main process
    assert all(math.isfinite(p["reward"]) for p in curve)
    assert writes(tmp_path, 1) == [] and any(p.endswith("adapter_config.json") for p in writes(tmp_path, 0))
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(tiny)), str(out / "adapter"))
    assert model.peft_config["default"].r == 8
