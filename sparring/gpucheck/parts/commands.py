"""Parts that run sparring's own scripts as a user does, each in a subprocess: GRPO, one iteration
of each training loop, and `accelerate launch`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sparring.gpucheck.parts.base import CHECKOUT, Ctx, part


def _command(args: list[str], ctx: Ctx, name: str, timeout: int) -> dict[str, Any]:
    """A real command of sparring's (a script), as a user runs it; its output tail on failure."""
    import os

    log = ctx.work / f"{name}.log"
    env = {**os.environ, "SPARRING_RUNS_DIR": str(ctx.work / "runs"), "PYTHONUNBUFFERED": "1"}
    t = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(args, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ctx.work, timeout=timeout)
    seconds = round(time.perf_counter() - t, 1)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[1:3])} exited {done.returncode}:\n{log.read_text()[-3000:]}")
    return {"seconds": seconds, "command": " ".join(Path(a).name if a.endswith(".py") else a for a in args[1:])}


def _script(name: str) -> str:
    return str(CHECKOUT / "scripts" / name)


def _scripted_models() -> str:
    from importlib import resources

    return str(resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml")


def _write(ctx: Ctx, name: str, data: dict[str, Any]) -> Path:
    import yaml

    path = ctx.work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


DOND = {"objective": "self", "max_turns": 4, "untagged_as_message": True, "prefill_proposals": True,
        "propose_after": 2}


@part("grpo", 240)
def grpo(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_grpo.py`: two GRPO steps of the tiny learner against a scripted partner."""
    config = {"model": str(ctx.tiny), "learner_agent": "learner", "num_generations": 2, "prompts_per_step": 1,
              "max_steps": 2, "learning_rate": 1e-4, "sequences_per_episode": 2, "save_steps": 0,
              "output_dir": str(ctx.work / "grpo"),
              "experiment": {"game": "dond", "game_args": DOND,
                             "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 8, "seed": 0},
                                         "limit": 2},
                             "models_file": _scripted_models(),
                             "agents": {"learner": {"role": "negotiator", "model": "learner",
                                                    "sampling": {"temperature": 1.0, "max_new_tokens": 16}},
                                        "partner": {"role": "negotiator", "model": "fair-negotiator"}},
                             "tournament": {"type": "custom", "matchups": [["learner", "partner"]]},
                             "run": {"seed": 0, "max_live": 4}}}
    out = _command([sys.executable, _script("run_grpo.py"), "--configuration", str(_write(ctx, "grpo", config))],
                   ctx, "grpo", 230)
    steps = (ctx.work / "grpo" / "rewards.jsonl").read_text().splitlines()
    assert len(steps) == 2, f"{len(steps)} GRPO steps logged"
    return {**out, "steps": len(steps)}


def _loop(ctx: Ctx, method: str) -> dict[str, Any]:
    tiny = str(ctx.tiny)
    if method == "dpo":
        selfplay = {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
                    "dataset": {"name": "generated", "split": "train", "limit": 2,
                                "args": {"people": 2, "filler_sentences": 0}},
                    "agents": {"policy": {"role": "debater", "model": "tiny",
                                          "sampling": {"temperature": 0.9, "max_new_tokens": 16}},
                               "judge": {"role": "judge", "model": "tiny"}},
                    "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True},
                    "branch": {"target": "policy", "k": 2, "mode": "half", "depth": 1}, "run": {"seed": 0}}
        export: dict[str, Any] = {"target": "prob", "gamma": 4.0, "max_pairs": 4}
        evaluation = {"name": "generated", "split": "test", "limit": 2, "args": {"people": 2, "filler_sentences": 0}}
        script = "run_iterative_dpo.py"
    else:
        selfplay = {"game": "dond", "game_args": DOND,
                    "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 20, "seed": 0}, "limit": 4},
                    "agents": {"policy": {"role": "negotiator", "model": "tiny",
                                          "sampling": {"temperature": 0.8, "max_new_tokens": 16}}},
                    "tournament": {"type": "self_play", "participants": ["policy"]}, "run": {"seed": 0}}
        export = {"keep": "all", "include_aborted": True}  # a random model's games end aborted
        evaluation = {"name": "dond_generated", "split": "test", "args": {"n": 20, "seed": 0}, "limit": 2}
        script = "run_selfplay_sft.py"
    models = _write(ctx, f"models-{method}", {"models": {"tiny": {"backend": "hf", "args": {"model": tiny}}}})
    config = {"name": f"gpu-check-{method}", "method": method, "alias": f"check-{method}", "iterations": 1,
              "policy_agent": "policy", "models_file": str(models), "selfplay": selfplay, "export": export,
              "train": {"method": method, "model": "tiny", "max_steps": 2, "batch_size": 2, "max_length": 768,
                        "save_steps": 0},
              "evaluation": {"dataset": evaluation, "flip": method == "dpo"},
              "output_dir": str(ctx.work / f"loop-{method}")}
    out = _command([sys.executable, _script(script), "--configuration", str(_write(ctx, f"loop-{method}", config))],
                   ctx, f"loop-{method}", 300)
    state = json.loads((ctx.work / f"loop-{method}" / "state.json").read_text())
    done = state["iterations"]["1"]["done"]
    assert done[-1] == "evaluate", f"the iteration stopped after {done}"
    return {**out, "stages": done}


@part("loop_dpo", 300)
def loop_dpo(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_iterative_dpo.py`: one iteration (branched debates, DPO, held-out cross-play)."""
    return _loop(ctx, "dpo")


@part("loop_selfplay_sft", 300)
def loop_selfplay_sft(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_selfplay_sft.py`: one iteration (self-play, SFT, held-out evaluation)."""
    return _loop(ctx, "sft")


@part("accelerate", 240)
def accelerate(ctx: Ctx) -> dict[str, Any]:
    """`accelerate launch` with one process of `scripts/run_sft.py` (the GPU, or the CPU)."""
    args = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch", "--num_processes", "1",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    if ctx.cpu:
        args.append("--cpu")
    args += [_script("run_sft.py"), str(ctx.rows("sft")), "-o", str(ctx.work / "accelerate-sft"), "--model",
             str(ctx.tiny), "--max-steps", "2"]
    out = _command(args, ctx, "accelerate", 230)
    assert (ctx.work / "accelerate-sft" / "adapter_config.json").is_file(), "no adapter was saved"
    return out
