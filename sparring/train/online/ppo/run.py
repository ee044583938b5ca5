"""The PPO run around `PPOTrainer`: steps, their log lines and tracker curves, the held-out
evaluations with the best checkpoint kept, checkpoints and the time limit, resuming from the last
checkpoint, and the report."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.train.online.grpo.config import GRPOConfig
from sparring.train.online.ppo.trainer import PPOTrainer, checkpoints
from sparring.train.online.steplog import read_step_log, trim_step_log

LOG, EVAL_LOG = "ppo.jsonl", "eval.jsonl"


def step_line(p: dict[str, Any]) -> str:
    def f(key: str, fmt: str = ".3f") -> str:
        v = p.get(key)
        return "n/a" if v is None else format(v, fmt)

    return (f"PPO step {p['step']}: {p['episodes']} episodes ({p.get('failed', 0)} failed), {p['turns']} learner "
            f"turns, mean reward {f('reward')}, KL {f('kl', '.4f')}, policy loss {f('pg_loss', '.4f')}, value loss "
            f"{f('vf_loss', '.4f')}, clipped {f('clipfrac', '.2f')}, {p.get('trained_tokens', 0)} trained tokens, "
            f"rollout {p['rollout_s']} s, train {p.get('train_s', 0)} s")


def train_ppo(config: GRPOConfig, file: str, arena: Any, out: Path, console: Console | None = None) -> Path:
    """The whole run: steps, evaluations, checkpoints, the report; resumes from OUT/trainer."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.checkpoints import TrainingStopped
    from sparring.train.learning.results import check_disjoint
    from sparring.train.online.grpo.rollout import LEARNER
    from sparring.train.tracking import MetricLog

    console = console or Console(stderr=True, soft_wrap=True)
    trainer = PPOTrainer(config, file, arena, out, console)
    eval_arena = None
    if config.ppo.eval is not None:
        base_dir = Path(file).parent if Path(file).is_file() else Path.cwd()
        data = {"name": f"{config.name}-eval", **config.experiment, "dataset": config.ppo.eval.dataset}
        eval_arena = Arena.from_config(data, models={LEARNER: ScriptedModel(LEARNER)}, base_dir=base_dir)
        check_disjoint(config.name, list(arena.instances), list(eval_arena.instances))
    start_step = 0
    last = checkpoints(out)
    if last:
        start_step = trainer.resume(last[-1])
        for name in (LOG, EVAL_LOG):
            trim_step_log(out / name, start_step)
        console.print(f"PPO: resumed from {last[-1]} (step {start_step})")
    tracked = MetricLog(config.report_to, out, config.run_name or config.name)
    deadline = time.monotonic() + 60 * config.max_minutes if config.max_minutes else None
    try:
        for step in range(start_step, config.max_steps):
            point = trainer.train_step(step)
            with open(out / LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps(point) + "\n")
            console.print(step_line(point), markup=False)
            tracked.log({f"ppo/{k}": v for k, v in point.items() if k != "step" and isinstance(v, int | float)},
                        step + 1)
            done = step + 1
            ev = config.ppo.eval
            if eval_arena is not None and ev is not None and (done % ev.every == 0 or done == config.max_steps):
                result = trainer.evaluate(done, eval_arena)
                with open(out / EVAL_LOG, "a", encoding="utf-8") as f:
                    f.write(json.dumps(result) + "\n")
                tracked.log({f"heldout/{k}": v for k, v in result.items() if k != "step"}, done)
                console.print(f"PPO held-out after step {done}: {ev.metric} {result['value']:.4f} on "
                              f"{result['episodes']} episodes", markup=False)
                if trainer.best is None or result["value"] > trainer.best["value"]:
                    trainer.best = result
                    trainer.save(out / "best")
                    (out / "best" / "eval.json").write_text(json.dumps(result), encoding="utf-8")
            if (config.save_steps and done % config.save_steps == 0) or done == config.max_steps:
                trainer.checkpoint(done)
            if deadline is not None and time.monotonic() > deadline and done < config.max_steps:
                trainer.checkpoint(done)
                raise TrainingStopped(f"PPO stopped by the time limit after step {done} of {config.max_steps}; "
                                      "rerun the same command to continue")
    finally:
        tracked.close()
        if eval_arena is not None:
            eval_arena.close()
    trainer.save(out / "adapter")
    return ppo_report(out, config, trainer.best)


def ppo_report(out: Path, config: GRPOConfig, best: dict[str, Any] | None) -> Path:
    points = read_step_log(out / LOG)
    evals = read_step_log(out / EVAL_LOG)

    def f(x: Any, fmt: str = ".3f") -> str:
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)

    lines = [f"# Online PPO: {config.name}", "",
             f"{config.max_steps} steps, {config.prompts_per_step} x {config.num_generations} episodes per step; game "
             f"`{config.experiment.get('game')}`; adapter and value head in `{out / 'adapter'}`"
             + (f"; best held-out checkpoint (step {best['step']}, {best['value']:.4f}) in `{out / 'best'}`"
                if best else "") + ".", "",
             "| step | mean reward | KL | policy loss | value loss | clip fraction | entropy |", "|---|---|---|---|---|---|---|",
             *[f"| {p['step']} | {f(p.get('reward'))} | {f(p.get('kl'), '.4f')} | {f(p.get('pg_loss'), '.4f')} | "
               f"{f(p.get('vf_loss'), '.4f')} | {f(p.get('clipfrac'), '.2f')} | {f(p.get('entropy'), '.3f')} |"
               for p in points], ""]
    if evals:
        lines += ["| held-out after step | episodes | mean reward | metric |", "|---|---|---|---|",
                  *[f"| {e['step']} | {e['episodes']} | {f(e['reward'])} | {f(e['value'])} |" for e in evals], ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
