"""The bench's statscore stage: after a suite's games, its static tasks (`statscore:` block) on each
model through lm-eval, and their tables. Apart from `bench.py` because the games and the static
tasks share nothing but the model name and the output folder.

Runs after every game pool is closed, so the model is loaded once more by lm-eval and never held
twice. Per-document values go to `OUTPUT/statscore/MODEL.items.json` (paired comparisons, e.g. a
trained adapter against its base: `sparring.learning.experiments.transfer`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparring.errors import SparringError, one_line
from sparring.evaluation.clemscore import fmt
from sparring.evaluation.suite import Suite, slug

STATIC_DIR = "statscore"


def items_path(out: Path, model: str) -> Path:
    return out / STATIC_DIR / f"{slug(model)}.items.json"


def run_static(suite: Suite, suite_path: Path, models: list[str], specs: Any, out: Path, *, enabled: bool = True,
               limit: int | None = None, seed: int = 0, console: Console | None = None) -> dict[str, Any] | None:
    """bench.json's `statscore` section: the task set and, per model, its task figures and mean."""
    from sparring.evaluation.statscore import lm_eval_missing, run_statscore, write_items
    from sparring.models.registry import resolve_name

    block = suite.statscore
    if block is None:
        return None
    console = console or Console()
    data: dict[str, Any] = {
        "source": block.source, "description": block.description, "limit": limit or block.limit,
        "tasks": {k: {"task": t.task, "metric": t.metric, "filter": t.filter, "scale": t.scale,
                      "description": t.description} for k, t in block.tasks.items()},
        "models": {}, "status": "ok", "note": ""}
    why = "statscore skipped: --no-statscore" if not enabled else lm_eval_missing()
    if why:
        console.print(f"[yellow]{escape(why)}[/yellow]")
        data.update(status="skipped", note=why)
        return data
    for model in models:
        console.rule(f"{model} · statscore ({', '.join(block.tasks)})")
        try:
            res = run_statscore(specs[resolve_name(model, specs)], block, suite_path.parent, limit=limit,
                                seed=seed, console=console)
        except SparringError as e:
            console.print(f"[red]{escape(f'{model} · statscore: {e}')}[/red]")
            data["models"][model] = {"status": "error", "error": one_line(e)}
            data["status"] = "incomplete"
            continue
        items = res.pop("items")
        if items:
            res["items_file"] = str(write_items(items_path(out, model), items))
        if res["status"] == "skipped":
            console.print(f"[yellow]{escape(f'{model}: ' + res['note'])}[/yellow]")
        elif res["status"] != "ok":
            data["status"] = "incomplete"
        data["models"][model] = res
    return data


STAT_COLUMNS = ["model", "statscore", "tasks"]
TASK_COLUMNS = ["model", "score (0-100)", "n", "metric", "lm-eval value"]


def stat_rows(static: dict[str, Any]) -> list[list[str]]:
    n = len(static["tasks"])
    rows = []
    for model, r in static["models"].items():
        if r.get("status") in ("error", "skipped"):
            rows.append([model, "-", r.get("error") or r.get("note", "")])
            continue
        missing = f" (missing: {', '.join(r['missing'])})" if r.get("missing") else ""
        rows.append([model, fmt(r["statscore"], r["ci"]), f"{len(r['scored'])}/{n}{missing}"])
    return rows


def task_rows(static: dict[str, Any], key: str) -> list[list[str]]:
    rows = []
    for model, r in static["models"].items():
        t = (r.get("tasks") or {}).get(key)
        if t is None:
            continue
        if t.get("status") != "ok":
            rows.append([model, "-", "-", "-", f"error: {t.get('error', '')}"])
            continue
        value = "-" if t["value"] is None or math.isnan(t["value"]) else f"{t['value']:.4f}"
        metric = t["metric"] + (f" ({t['filter']})" if t["filter"] != "none" else "")
        rows.append([model, fmt(t["score"], t["ci"]), str(t["n"]), metric, value])
    return rows


def print_static(console: Console, static: dict[str, Any] | None, suite_label: str) -> None:
    """A table per static task and the statscore table."""
    if not static:
        return
    if static["status"] == "skipped":
        console.print(f"[yellow]{escape(static['note'])}[/yellow]")
        return
    for key, spec in static["tasks"].items():
        table = Table(title=f"static task {key} (lm-eval {spec['task']}; 95% CIs)", title_justify="left")
        for col in TASK_COLUMNS:
            table.add_column(col)
        for row in task_rows(static, key):
            table.add_row(*map(escape, row))
        console.print(table)
    table = Table(title=f"statscore — {suite_label} (lm-eval; 95% CI)", title_justify="left")
    for col in STAT_COLUMNS:
        table.add_column(col)
    for row in stat_rows(static):
        table.add_row(*map(escape, row))
    console.print(table)


def static_markdown(static: dict[str, Any] | None, md_table: Any) -> list[str]:
    """bench.md's statscore sections (`md_table(columns, rows)` is bench's table writer)."""
    if not static:
        return []
    lines = ["## statscore", "",
             "statscore = mean over the static tasks of each task's own metric scaled to 0-100, run by EleutherAI's "
             "lm-evaluation-harness; 95% bootstrap CIs resample documents within each task."
             + (f" Task set: {static['source']}." if static.get("source") else ""), ""]
    if static["status"] == "skipped":
        return [*lines, static["note"], ""]
    lines += [*md_table(STAT_COLUMNS, stat_rows(static)), ""]
    for key, spec in static["tasks"].items():
        lines += [f"### static task {key} (lm-eval {spec['task']})", "", *md_table(TASK_COLUMNS, task_rows(static, key)), ""]
    return lines


__all__ = ["items_path", "print_static", "run_static", "static_markdown"]
