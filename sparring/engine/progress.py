"""Console output of a run: the plan (--dry-run), a live progress bar, and the final summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table


class RunProgress:
    """Episodes done/total, failures and generated tokens/s; a no-op when disabled."""

    def __init__(self, total: int, *, console: Console, enabled: bool = True, description: str = "episodes"):
        self.enabled = enabled and total > 0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"), TextColumn("{task.fields[tps]:,.0f} tok/s"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            console=console, disable=not self.enabled, transient=False, refresh_per_second=4)
        self._task = self._progress.add_task(description, total=total, failed=0, tps=0.0)

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, done: int, failed: int, tokens_per_s: float) -> None:
        if self.enabled:
            self._progress.update(self._task, completed=done + failed, failed=failed, tps=tokens_per_s)

def print_plan(console: Console, plan: dict[str, Any]) -> None:
    """What --dry-run resolved: game, instances, models, agents, the schedule and the shard."""
    console.print(f"[bold]configuration[/bold] {plan['name']}  ({plan['file']})")
    console.print(f"game {plan['game']}; {plan['instances']} instance(s) from dataset {plan['dataset']}")
    models = Table(title="models (specs only; nothing loaded)", show_header=True)
    for col in ("model", "backend", "used by"):
        models.add_column(col)
    for name, info in plan["models"].items():
        models.add_row(name, info["backend"], ", ".join(info["agents"]))
    console.print(models)
    agents = Table(title="agents", show_header=True)
    for col in ("agent", "role", "model", "prompt set", "sampling"):
        agents.add_column(col)
    for name, info in plan["agents"].items():
        agents.add_row(name, info["role"], info["model"], info["prompts"], info["sampling"])
    console.print(agents)
    sched = plan["schedule"]
    table = Table(title=f"schedule: {plan['tournament']}", show_header=True)
    table.add_column("matchup")
    table.add_column("episodes", justify="right")
    for m, n in sched["matchups"].items():
        table.add_row(m, str(n))
    console.print(table)
    if sched.get("rounds", 1) > 1:
        console.print(f"swiss: {sched['rounds']} rounds; round 1 shown, later rounds are paired by results")
    line = f"[bold]{sched['episodes']}[/bold] episode(s) scheduled"
    if plan.get("shard"):
        line += f"; shard {plan['shard']}: {plan['in_shard']}"
    if plan.get("already_done") is not None:
        line += f"; already stored: {plan['already_done']}"
    console.print(line)
    for note in plan.get("notes", []):
        console.print(f"note: {note}")


def print_summary(console: Console, s: dict[str, Any]) -> None:
    table = Table(title=f"run {s['experiment']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("", justify="right")
    rows = [
        ("episodes done (this session)", f"{s['done']:,}"),
        ("  of which aborted by the game", f"{s['aborted']:,}"),
        ("failed (this session)", f"{s['failed']:,}"),
        ("skipped (already stored)", f"{s['skipped']:,}"),
        ("stored in run: done / failed", f"{s['stored_done']:,} / {s['stored_failed']:,}"),
        ("generated tokens", f"{s['tokens']:,}"),
        ("tokens/s", f"{s['tokens_per_s']:,.1f}"),
        ("episodes/s", f"{s['episodes_per_s']:,.1f}"),
        ("wall time (after loading models)", f"{s['wall_s']:.1f} s"),
        ("model loading", f"{s.get('load_s', 0.0):.1f} s"),
        ("status", s["status"]),
    ]
    methods = s.get("verdict_methods") or {}
    if methods:  # how verdicts were obtained: scored (by prefix or instruction) or parsed from text
        rows.insert(5, ("verdicts by method", ", ".join(f"{k} {v:,}" for k, v in methods.items())))
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    console.print(f"run directory: {s['run_dir']}")
