#!/usr/bin/env python
"""Does the bundled model learn by playing? Self-play SFT (lm-selfplay) on Deal or No Deal, then
one online GRPO run, on this machine.

    python benchmarks/bench_learning.py                      # 3 iterations, then GRPO (long on a CPU)
    python benchmarks/bench_learning.py --iterations 1 --no-grpo --eval-scenarios 8   # a quick look

Runs the shipped `selfplay-sft-quickstart` loop with `--iterations` iterations (its held-out
evaluation plays every new policy against itself, the base model and the previous policy on test
scenarios, never training ones) and prints, per iteration, the policy's self-play valid-action
rate, agreement rate with its 95% Wilson interval and mean reward; iteration 0 is the base
model's own self-play on the same held-out scenarios. Target:
agreement at least 25 points above the base model after three iterations. Then `grpo-quickstart`
and its per-step reward curve. Prints the minutes each part took.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _v(row: dict, name: str) -> float:
    """A typed metric's value from a loop state row (`sparring.analysis.measures`)."""
    value = (row["metrics"].get(name) or {}).get("value")
    return float("nan") if value is None else value


def _rate(row: dict) -> str:
    ci = row["metrics"]["agreement_rate"].get("ci") or [float("nan"), float("nan")]
    return (f"valid actions {1 - _v(row, 'invalid_output_rate'):.2f}  agreement "
            f"{_v(row, 'agreement_rate'):.2f} [{ci[0]:.2f}, {ci[1]:.2f}]  "
            f"turns {_v(row, 'dialogue_turns'):.1f}  games {row.get('episodes')}")


def selfplay(out: Path, iterations: int, eval_scenarios: int) -> None:
    from sparring.engine.run import RunOptions, run_experiment
    from sparring.train.loop import Loop, load_loop

    config, file = load_loop("selfplay-sft-quickstart")
    ev = dict(config.evaluation.dataset, limit=eval_scenarios)
    config = config.model_copy(update={"iterations": iterations, "output_dir": str(out / "selfplay"),
                                       "evaluation": config.evaluation.model_copy(update={"dataset": ev})})
    start = time.time()
    # the base model's own self-play on the held-out scenarios: iteration 0
    base_cfg = {**config.selfplay, "name": "bench-base", "dataset": ev}
    base_path = out / "base.yaml"
    import yaml

    base_path.write_text(yaml.safe_dump(base_cfg))
    base_run = run_experiment(RunOptions(configuration=str(base_path), output_dir=str(out), run_name="base",
                                         quiet=True))
    from sparring.train.loop import game_metrics

    rows = {0: next(iter(game_metrics(Path(base_run.run_dir or ""), "dond").values()))}
    Loop(config, file).run()
    state = json.loads((Path(config.output_dir or "") / "state.json").read_text())
    for k in range(1, iterations + 1):
        games = state["iterations"][str(k)]["evaluate"]["games"]
        rows[k] = games[f"{config.alias}@{k} vs {config.alias}@{k}"]
    minutes = (time.time() - start) / 60
    print(f"self-play SFT on Deal or No Deal, held-out scenarios ({eval_scenarios}), bundled SmolLM2-135M:")
    for k, row in rows.items():
        rewards = row.get("reward_by_agent") or {}
        mean = sum(rewards.values()) / len(rewards) if rewards else float("nan")
        print(f"  iteration {k} ({'base' if k == 0 else config.alias + '@' + str(k)}): {_rate(row)}  "
              f"mean reward {mean:.2f}")
    gain = (_v(rows[iterations], "agreement_rate") or 0) - (_v(rows[0], "agreement_rate") or 0)
    print(f"  agreement gain after {iterations} iteration(s): {100 * gain:+.1f} points "
          f"(target >= +25 after 3); {minutes:.1f} minutes")


def grpo(out: Path) -> None:
    from sparring.train.grpo.trainer import load_grpo, run_grpo

    config, file = load_grpo("grpo-quickstart")
    config = config.model_copy(update={"output_dir": str(out / "grpo")})
    start = time.time()
    run_grpo(config, file)
    curve = [json.loads(line) for line in (out / "grpo" / "rewards.jsonl").read_text().splitlines() if line.strip()]
    print(f"online GRPO ({config.max_steps} steps, {config.num_generations} games per step): reward per step "
          + ", ".join(f"{p['reward']:.2f}" for p in curve) + f"; {(time.time() - start) / 60:.1f} minutes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--eval-scenarios", type=int, default=16)
    ap.add_argument("--no-grpo", action="store_true")
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args()
    out = args.output or Path(tempfile.mkdtemp(prefix="bench-learning-"))
    selfplay(out, args.iterations, args.eval_scenarios)
    if not args.no_grpo:
        grpo(out)


if __name__ == "__main__":
    main()
