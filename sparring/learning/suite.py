"""The learning suite: run the experiments, write learning.json / learning.md / curves.

`quick` plays every experiment end to end at toy size on a tiny randomly initialised model with
the bundled tokenizer (minutes, for CI: it checks that everything runs and that the held-out sets
are disjoint, not a gain); `full` uses the bundled SmolLM2-135M at the sizes the issue asks for.
"""

from __future__ import annotations

import platform
import time
import traceback
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.learning.context import Context
from sparring.learning.order import ORDER
from sparring.learning.registry import EXPERIMENTS, load_experiments
from sparring.learning.results import Experiment

# The quick suite's tokenizer: the bundled one cut to its first ids (`sparring.models.tiny`). A random
# model's output is noise at any vocabulary, and with the full 49,152 ids the output layer is ~95% of
# every forward pass of the tiny model: the cut vocabulary runs the same pipeline in about half the time.
QUICK_VOCAB = 1024


def quick_model(out: Path) -> str:
    """A tiny random Llama on the bundled tokenizer cut to QUICK_VOCAB ids, saved once under OUT (the
    quick suite's model)."""
    from sparring.models.tiny import save_tiny_model

    path = out / "tiny-model"
    if not (path / "config.json").is_file():
        save_tiny_model(path, seed=0, vocab=QUICK_VOCAB)
    return str(path)


def run_suite(suite: str, out: Path, only: list[str] | None = None, console: Any = None,
              data: dict[str, str] | None = None) -> dict[str, Path]:
    """Run the experiments (`only`: some of them) into `out`. `data`: paths of the data files
    that are not shipped (`datafiles.CATALOG` name -> path, e.g. the DoND dialogues)."""
    from rich.console import Console

    from sparring.learning.report import previous_experiments, write_suite
    from sparring.train.step_cost import matmul_flops

    if suite not in ("quick", "full"):
        raise SparringError(f"unknown suite {suite!r}: quick or full")
    load_experiments()
    names = list(only or ORDER)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise SparringError(f"unknown experiment(s) {unknown}; known: {list(ORDER)}")
    console = console or Console()
    out.mkdir(parents=True, exist_ok=True)
    model = quick_model(out) if suite == "quick" else "smollm2-135m"
    ctx = Context(out=out, size=suite, model=model, label="tiny" if suite == "quick" else "smollm2-135m",
                  flops=matmul_flops(), console=console, data=dict(data or {}))
    ctx.load_adapters()  # a rerun (`--only`) keeps the adapters earlier experiments registered
    ctx.write_models()
    done: list[Experiment] = []
    failures: dict[str, str] = {}
    extra = {"machine": f"{platform.machine()}, {_cores()} cores, fp32 matmul {ctx.flops / 1e9:.0f} GFLOP/s",
             "model": ctx.label, "failures": failures}
    kept = previous_experiments(out, suite, names)
    ctx.on_progress = lambda exp: write_suite(out, suite, [*done, exp], {**extra, "partial": exp.name}, kept)
    for name in names:
        console.print(f"[bold]learning suite ({suite}): {name}[/bold]")
        start, cpu = time.perf_counter(), _cpu_seconds()
        try:
            exp = EXPERIMENTS[name](ctx)
        except SparringError as e:
            if "disjoint" in str(e) or "held-out" in str(e):
                raise
            failures[name] = f"{e}"
            console.print(f"[red]{name} failed: {e}[/red]")
            continue
        except Exception as e:  # one experiment's crash must not lose the others' numbers
            failures[name] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
            console.print(f"[red]{name} failed: {type(e).__name__}: {e}[/red]")
            continue
        exp.wall_s = exp.wall_s or time.perf_counter() - start
        # CPU seconds of this process and its children (simulators): under other load the wall time
        # says little; CPU seconds / 2 is the wall time this experiment needs alone on 2 busy cores
        exp.speed["cpu_s"] = round(_cpu_seconds() - cpu, 1)
        done.append(exp)
        _print(console, exp)
        write_suite(out, suite, done, extra, kept)  # after every experiment: a killed suite keeps what finished
    return write_suite(out, suite, done, extra, kept)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def _print(console: Any, exp: Experiment) -> None:
    cpu = exp.speed.get("cpu_s")
    console.print(f"{exp.name}: {len(exp.training_ids)} training / {len(exp.heldout_ids)} held-out instances "
                  f"(disjoint), {exp.wall_s / 60:.1f} min" + (f", {cpu / 60:.1f} CPU-min" if cpu else ""))
    for s in exp.stages:
        walls = ", ".join(f"{k} {v:.0f}s" for k, v in s.wall_s.items())
        console.print(f"  {s.name} (step {s.step}, seed {s.seed}): "
                      + "; ".join(f"{k} {m.fmt()}" for k, m in s.metrics.items()) + f"  ({walls})")
    for k, p in exp.paired.items():
        if p.get("n"):
            console.print(f"  paired {k}: {p['mean_diff']:+.3f} [{p['mean_diff_ci_low']:+.3f}, "
                          f"{p['mean_diff_ci_high']:+.3f}] n={p['n']}")
    speed = {k: v for k, v in exp.speed.items() if "ratio" in k or "per_s" in k}
    if speed:
        console.print("  speed: " + ", ".join(f"{k} {v:.3g}" for k, v in speed.items()))
