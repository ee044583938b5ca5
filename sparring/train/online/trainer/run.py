"""The run around `OnlineTrainer`: steps, their log lines (with the step-cost breakdown) and tracker
curves, the held-out evaluations with the best checkpoint kept, checkpoints and the time limit,
resuming from the last checkpoint, and the report with the run's cost summary."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.train.online.config import OnlineConfig
from sparring.train.online.steplog import read_step_log, trim_step_log
from sparring.train.online.trainer import checkpoint
from sparring.train.online.trainer.core import OnlineTrainer
from sparring.train.online.trainer.evaluation import evaluate
from sparring.train.step_cost import StepCost, line, total

EVAL_LOG = "eval.jsonl"
ROLLOUTS = "rollouts"  # every training game, a run directory (`keep_rollouts`)


def log_name(config: OnlineConfig) -> str:
    """The per-step log: `ppo.jsonl` (PPO) or `grpo.jsonl` (GRPO on sparring's trainer)."""
    return f"{config.algorithm}.jsonl"


def step_line(p: dict[str, Any], algorithm: str = "ppo") -> str:
    def f(key: str, fmt: str = ".3f") -> str:
        v = p.get(key)
        return "n/a" if v is None else format(v, fmt)

    text = (f"{algorithm.upper()} step {p['step']}: {p['episodes']} episodes ({p.get('failed', 0)} failed), "
            f"{p['turns']} learner turns, mean reward {f('reward')}, KL {f('kl', '.4f')}, policy loss "
            f"{f('pg_loss', '.4f')}, ")
    text += f"value loss {f('vf_loss', '.4f')}, " if algorithm == "ppo" else \
        f"zero-advantage groups {p.get('zero_advantage_groups', 'n/a')}, "
    text += (f"entropy {f('entropy', '.3f')}, clipped {f('clipfrac', '.2f')}, {p.get('trained_tokens', 0)} trained "
             f"tokens\n  {line(p)}")
    seats = {k.split('/', 1)[1]: v for k, v in p.items() if k.startswith("reward/")}
    if seats:
        text += "\n  reward by seat: " + ", ".join(f"{k} {v:.3f}" for k, v in seats.items())
    return text


def train_online(config: OnlineConfig, file: str, arena: Any, out: Path, console: Console | None = None) -> Path:
    """The whole run: steps, evaluations, checkpoints, the report; resumes from OUT/trainer."""
    from sparring.engine.config import open_store
    from sparring.engine.play import Arena
    from sparring.gameapi.splits import check_disjoint
    from sparring.models.scripted import ScriptedModel
    from sparring.train.checkpoints import TrainingStopped
    from sparring.train.online.rollout import LEARNER
    from sparring.train.step_cost import roof_tokens_per_s
    from sparring.train.tracking import MetricLog

    console = console or Console(stderr=True, soft_wrap=True)
    trainer = OnlineTrainer(config, file, arena, out, console)
    if config.keep_rollouts:
        trainer.rollout_store = open_store(out / ROLLOUTS, arena.exp.config, redact=arena.pool.redact)
        trainer.rollout_store.write_manifest(status="running")
    trainer.roof = roof_tokens_per_s(trainer.model)
    log = log_name(config)
    eval_arena = None
    if config.ppo.eval is not None:
        base_dir = Path(file).parent if Path(file).is_file() else Path.cwd()
        data = {"name": f"{config.name}-eval", **config.experiment, **config.ppo.eval.overrides,
                "dataset": config.ppo.eval.dataset}
        eval_arena = Arena.from_config(data, models={LEARNER: ScriptedModel(LEARNER)}, base_dir=base_dir)
        check_disjoint(config.name, list(arena.instances), list(eval_arena.instances))
    start_step = 0
    last = checkpoint.checkpoints(out)
    if last:
        start_step = checkpoint.resume(trainer, last[-1])
        for name in (log, EVAL_LOG):
            trim_step_log(out / name, start_step)
        console.print(f"{config.algorithm.upper()}: resumed from {last[-1]} (step {start_step})")
    elif config.opponents.mode == "league":  # the starting policy is the league's first member
        trainer.snapshot(trainer.opponents.next_slot(0))
    tracked = MetricLog(config.report_to, out, config.run_name or config.name)
    deadline = time.monotonic() + 60 * config.max_minutes if config.max_minutes else None
    prefix = config.algorithm
    finished = False
    try:
        for step in range(start_step, config.max_steps):
            point = trainer.train_step(step)
            with open(out / log, "a", encoding="utf-8") as f:
                f.write(json.dumps(point) + "\n")
            console.print(step_line(point, config.algorithm), markup=False)
            tracked.log({f"{prefix}/{k}": v for k, v in point.items() if k != "step" and isinstance(v, int | float)},
                        step + 1)
            done = step + 1
            ev = config.ppo.eval
            if eval_arena is not None and ev is not None and (done % ev.every == 0 or done == config.max_steps):
                result = evaluate(trainer, done, eval_arena)
                with open(out / EVAL_LOG, "a", encoding="utf-8") as f:
                    f.write(json.dumps(result) + "\n")
                tracked.log({f"heldout/{k}": v for k, v in result.items() if k != "step"}, done)
                console.print(f"{prefix.upper()} held-out after step {done}: {ev.metric} {result['value']:.4f} on "
                              f"{result['episodes']} episodes", markup=False)
                if trainer.best is None or result["value"] > trainer.best["value"]:
                    trainer.best = result
                    checkpoint.save(trainer, out / "best")
                    (out / "best" / "eval.json").write_text(json.dumps(result), encoding="utf-8")
            if (config.save_steps and done % config.save_steps == 0) or done == config.max_steps:
                checkpoint.write(trainer, done)
            if deadline is not None and time.monotonic() > deadline and done < config.max_steps:
                checkpoint.write(trainer, done)
                raise TrainingStopped(f"{prefix.upper()} stopped by the time limit after step {done} of "
                                      f"{config.max_steps}; rerun the same command to continue")
        finished = True
    finally:
        tracked.close()
        if eval_arena is not None:
            eval_arena.close()
        if trainer.rollout_store is not None:
            trainer.rollout_store.close(status="complete" if finished else "interrupted")
    checkpoint.save(trainer, out / "adapter")
    return online_report(out, config, trainer.best, trainer.roof)


def cost_summary(points: list[dict[str, Any]], roof: float | None = None) -> dict[str, Any]:
    """The run's step-cost breakdown: every logged step's parts and tokens added up."""
    steps = []
    for p in points:
        c = StepCost()
        for part in c.seconds:
            c.seconds[part] = float(p.get(f"cost/{part}_s") or 0.0)
        c.forward_tokens = int(p.get("cost/forward_tokens") or 0)
        c.padded_tokens = int(p.get("cost/padded_tokens") or 0)
        c.trained_tokens = int(p.get("cost/trained_tokens") or 0)
        c.training_tokens = int(p.get("cost/training_tokens") or 0)
        c.passes = {"scoring": int(p.get("cost/scoring_passes") or 0), "training": int(p.get("cost/training_passes") or 0)}
        steps.append(c)
    return total(steps).summary(roof) if steps else {}


def online_report(out: Path, config: OnlineConfig, best: dict[str, Any] | None, roof: float | None = None) -> Path:
    points = read_step_log(out / log_name(config))
    evals = read_step_log(out / EVAL_LOG)

    def f(x: Any, fmt: str = ".3f") -> str:
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)

    name = "PPO" if config.algorithm == "ppo" else "GRPO (sparring's trainer)"
    lines = [f"# Online {name}: {config.name}", "",
             f"{config.max_steps} steps, {config.prompts_per_step} x {config.num_generations} episodes per step "
             f"(opponents: {config.opponents.mode}); game `{config.experiment.get('game')}`; adapter in "
             f"`{out / 'adapter'}`"
             + (f"; best held-out checkpoint (step {best['step']}, {best['value']:.4f}) in `{out / 'best'}`"
                if best else "") + ".", "",
             "| step | mean reward | KL | policy loss | value loss | entropy | clip fraction | step s | rollout s |",
             "|---|---|---|---|---|---|---|---|---|",
             *[f"| {p['step']} | {f(p.get('reward'))} | {f(p.get('kl'), '.4f')} | {f(p.get('pg_loss'), '.4f')} | "
               f"{f(p.get('vf_loss'), '.4f')} | {f(p.get('entropy'), '.3f')} | {f(p.get('clipfrac'), '.2f')} | "
               f"{f(p.get('cost/total_s'), '.1f')} | {f(p.get('cost/rollout_s'), '.1f')} |" for p in points], ""]
    summary = cost_summary(points, roof)
    if summary:
        lines += ["Where the steps went (all steps): " + line(summary), ""]
    if evals:
        lines += ["| held-out after step | episodes | mean reward | metric |", "|---|---|---|---|",
                  *[f"| {e['step']} | {e['episodes']} | {f(e['reward'])} | {f(e['value'])} |" for e in evals], ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
