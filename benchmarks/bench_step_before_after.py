#!/usr/bin/env python
"""A TicTacToe GRPO step of `textarena-tictactoe-rl` as another commit ran it and as this checkout
runs it: the same warm start, training seeds, sizes and settings, each side through its own
`scripts/run_grpo.py` in a process of its own, the pairs in turn (issue #59's "a TicTacToe GRPO
step ≤ 1/3 of today's" is a comparison across commits, which `bench_step_cost.py` cannot make:
its rendered variant already has this checkout's trainer).

    git worktree add ../sparring-824997e 824997e    # the commit the 15-step run measured
    OMP_NUM_THREADS=2 python benchmarks/bench_step_before_after.py --before-checkout ../sparring-824997e

Before: the arm as `textarena-tictactoe-rl` configured it at 824997e — the rendered view (every
move re-reads the game so far) and `micro_batch_size: 2` (the run it replaced was killed by the
OOM killer at 8 games a forward); that commit's trainer defaults otherwise. After: the arm as it
is configured now — the conversation view (each game one sequence, read once) and this trainer's
defaults (a token budget per forward, no dropout in the training passes, the adapter merged for
the rollout). Both: GRPO on sparring's trainer, 2 training seeds × 4 games a step against
`textarena-random`, both seats, refused moves trained, lr 2e-4, β 0, T 1.0, 16 new tokens a move,
from a LoRA warm start of `--warm-steps` SFT steps on the random player's moves (built once by
`bench_step_cost.warm_adapter`). The policies sample different games (their prompts differ), so
each step's seconds are also given per learner move. Prints every step, the medians and the
after/before ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIGURES = (("step s", "cost/total_s"), ("rollout s", "cost/rollout_s"), ("training s", "cost/training_s"),
           ("model tokens", "cost/training_tokens"), ("per trained token", "cost/model_tokens_per_trained_token"),
           ("roof share", "cost/training_roof_ratio"))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-checkout", required=True, help="a checkout of the commit to compare against "
                    "(its scripts/run_grpo.py and package run the 'before' side)")
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name or a model directory")
    ap.add_argument("--steps", type=int, default=3, help="GRPO steps a run (every step counted)")
    ap.add_argument("--pairs", type=int, default=1, help="before/after runs, in turn")
    ap.add_argument("--warm-steps", type=int, default=8, help="LoRA SFT steps of the warm start")
    ap.add_argument("--work", default=None, help="folder for the warm start, configs and runs (default: a new "
                    "temporary one)")
    ap.add_argument("--json", default=None, help="write every step's figures here")
    return ap


def arm(name: str, model: str, adapter: str, steps: int, out: Path, before: bool) -> dict[str, Any]:
    """The online config of one side (keys both commits read)."""
    experiment = {"game": "textarena", "game_args": {"env_id": "TicTacToe-v0"},
                  "dataset": {"name": "seeds", "split": "train", "args": {"n": 400}},
                  "agents": {"learner": {"role": "player", "model": "learner",
                                         "sampling": {"temperature": 1.0, "max_new_tokens": 16}},
                             "opponent": {"role": "player", "model": "textarena-random"}},
                  "tournament": {"type": "custom", "matchups": [["learner", "opponent"]]},
                  "run": {"seed": 0, "max_live": 32}}
    config = {"name": name, "algorithm": "grpo", "trainer": "sparring", "model": model, "adapter": adapter,
              "learner_agent": "learner", "seats": [0, 1], "num_generations": 4, "prompts_per_step": 2,
              "max_steps": steps, "learning_rate": 2e-4, "beta": 0.0, "format_penalty": 0.1, "train_rejected": True,
              "save_steps": 0, "seed": 0, "lr_scheduler_type": "constant", "output_dir": str(out)}
    if before:
        return {**config, "experiment": experiment, "micro_batch_size": 2}
    return {**config, "experiment": {**experiment, "view": "conversation"}}


def run_side(checkout: Path, config: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """One run of `scripts/run_grpo.py` in `checkout` (its own package first on the path); its steps."""
    import yaml

    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    log = path.with_suffix(".log")
    with log.open("w", encoding="utf-8") as sink:
        done = subprocess.run([sys.executable, "scripts/run_grpo.py", "--configuration", str(path)], cwd=checkout,
                              env=env, stdout=sink, stderr=subprocess.STDOUT, check=False)
    steps = Path(config["output_dir"]) / "grpo.jsonl"
    if done.returncode != 0 or not steps.exists():
        raise SystemExit(f"{config['name']} failed (exit {done.returncode}); its output: {log}")
    return [json.loads(line) for line in steps.read_text(encoding="utf-8").splitlines() if line.strip()]


def row(step: dict[str, Any]) -> dict[str, float]:
    found = {label: float(step.get(key) or 0.0) for label, key in FIGURES}
    turns = float(step.get("turns") or 0)
    return {**found, "learner moves": turns, "s a move": found["step s"] / turns if turns else float("nan")}


def warm_start(work: Path, model: str, steps: int) -> str:
    spec = importlib.util.spec_from_file_location("bench_step_cost", HERE / "bench_step_cost.py")
    assert spec is not None and spec.loader is not None
    cost = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cost)
    adapter = cost.warm_adapter("tictactoe", work, model, str(cost.write_models(work, model)), steps)
    assert adapter is not None
    return adapter


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    checkout = Path(args.before_checkout).resolve()
    if not (checkout / "scripts" / "run_grpo.py").exists():
        raise SystemExit(f"--before-checkout {checkout}: no scripts/run_grpo.py there")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-step-before-after-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    adapter = warm_start(work, args.model, args.warm_steps)
    rows: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for pair in range(args.pairs):
        for side, where in (("before", checkout), ("after", ROOT)):
            name = f"ttt-{side}-{pair}"
            steps = run_side(where, arm(name, args.model, adapter, args.steps, work / name, side == "before"),
                             work / f"{name}.yaml")
            for i, step in enumerate(steps, 1):
                rows[side].append(row(step))
                print(f"{side} (run {pair + 1}, step {i}): " + ", ".join(f"{k} {v:.2f}" for k, v in rows[side][-1].items()))
    medians = {side: {k: statistics.median(r[k] for r in found) for k in found[0]} for side, found in rows.items()}
    for side, m in medians.items():
        print(f"median {side}: " + ", ".join(f"{k} {v:.2f}" for k, v in m.items()))
    ratios = {k: medians["after"][k] / medians["before"][k] for k in ("step s", "s a move", "rollout s", "training s",
                                                                       "per trained token") if medians["before"][k]}
    print("after / before: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"steps": rows, "median": medians, "ratios": ratios}, indent=2),
                                   encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
