"""Driving an iterative loop (`sparring.train.loop.driver.Loop`) inside a learning experiment, shared by
the DoND self-play and the debate DPO experiments: each iteration's stages timed one by one, its
adapter registered as `LABEL@PREFIX-k`, measured on the held-out set, compared (paired) with the
base model; and the tokens its training runs processed, for the training-speed ratio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.results import Estimate, Experiment, Stage, paired

# alias, stage name -> (metrics, per-instance primary value, the held-out run)
Evaluate = Callable[[str, str], tuple[dict[str, Estimate], dict[str, float], Played]]
LOOP_STAGES = ("play", "export", "train", "register", "check")


@dataclass
class Iterations:
    final: str                                               # the last iteration's alias
    train_s: float = 0.0                                     # its training stages' wall time, summed
    train_tokens: float = 0.0                                # tokens those training runs processed
    walls: list[dict[str, float]] = field(default_factory=list)
    per: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> instance -> primary value


def drive(loop: Any, k: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Iteration k's play / export / train / register / check stages (the check does nothing unless
    the loop config asks for it); (seconds per stage, their results)."""
    walls: dict[str, float] = {}
    results: dict[str, Any] = {}
    for stage in LOOP_STAGES:
        t = time.perf_counter()
        results[stage] = loop.stage(k, stage)
        walls[stage] = time.perf_counter() - t
    return walls, results


def run_iterations(ctx: Context, exp: Experiment, loop: Any, prefix: str, evaluate: Evaluate,
                   base_per: dict[str, float], metric: str, info: Callable[[dict, dict], dict[str, Any]],
                   suffix: str = "") -> Iterations:
    """Every iteration of `loop`: train, register, evaluate; a Stage and a paired comparison
    (`METRIC PREFIX-k - base SUFFIX`) each; the training instances re-checked disjoint each time."""
    from sparring.train.trainers import read_rows

    training = set(exp.training_ids)
    done = Iterations(final=ctx.label)
    settings = loop.config.train
    for k in range(1, loop.config.iterations + 1):
        walls, results = drive(loop, k)
        training |= set(results["export"]["instances"])
        train = loop.state["iterations"][str(k)]["train"]
        name = f"{prefix}-{k}"
        done.final = ctx.register(name, train["adapter"])
        metrics, per, played = evaluate(done.final, name)
        done.per[name] = per
        walls.update(played.walls("heldout"))
        exp.stages.append(Stage(name, k, metrics, walls, info={**info(results["export"], train),
                                                               **check_info(results["check"])}))
        exp.paired[f"{metric} {name} - base{suffix}"] = paired(base_per, per)
        exp.training_ids = sorted(training)
        exp.__post_init__()
        ctx.progress(exp)
        done.walls.append(walls)
        done.train_s += walls["train"]
        done.train_tokens += trained_tokens(ctx, read_rows(results["export"]["path"]), train["steps"], settings)
    return done


def check_info(check: dict[str, Any] | None) -> dict[str, Any]:
    """The loop's greedy check on training prompts as stage info: each measure before and after
    this iteration's training, and the paired difference with its interval."""
    return {f"check/{name}": [d["before"], d["after"], d["diff"], d["ci_low"], d["ci_high"]]
            for name, d in ((check or {}).get("diff") or {}).items()}


def trained_tokens(ctx: Context, rows: list[dict[str, Any]], steps: int, settings: Any) -> float:
    """Tokens a loop's training run (TrainSettings `settings`, `steps` steps) put through the model."""
    from sparring.learning.speed import run_tokens

    return run_tokens(ctx.model, rows, steps, settings.batch_size * settings.gradient_accumulation,
                      settings.epochs)


def speed(ctx: Context, base: Played, max_live: int, train_tokens: float, train_s: float) -> dict[str, Any]:
    """Both ratios: the base model's held-out run `base` (engine ÷ raw generate, at the batch the
    engine could form: at most `max_live` games in flight, and no more than the run's games) and
    the training."""
    from sparring.learning.speed import count_params, rollout_ratio, training_ratio

    batch = ctx.batch_size(max(1, min(max_live, len(base.records))))
    return {**training_ratio(train_tokens, train_s, count_params(ctx.model), ctx.flops),
            **rollout_ratio(ctx.model, base, ctx.label, batch)}
