"""Console output of a run: the plan (--dry-run), a live progress bar, and the final summary."""

from __future__ import annotations

import os
import time
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
    """Episodes done/total, failures, turns, tokens/s (prompt + generated) and an ETA.

    On a terminal: a live progress bar. Otherwise (output to a log file, a pipe, a notebook
    capturing it) a line every `log_every` seconds, so a long run never looks dead; the default
    is 30 s, or $SPARRING_PROGRESS_EVERY. A no-op when disabled."""

    def __init__(self, total: int, *, console: Console, enabled: bool = True, description: str = "episodes",
                 log_every: float | None = None):
        self.enabled = enabled and total > 0
        self.total, self.description, self.console = total, description, console
        self.lines = self.enabled and not console.is_terminal
        if log_every is None:
            log_every = float(os.environ.get("SPARRING_PROGRESS_EVERY") or 30.0)
        self.log_every = log_every
        self._started = time.monotonic()
        self._last_line = self._started
        self._last: tuple[int, int, Any, int] | None = None
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"), TextColumn("{task.fields[turns]:,} turns"),
            TextColumn("{task.fields[tps]:,.0f} tok/s in+out"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            console=console, disable=not self.enabled or self.lines, transient=False, refresh_per_second=4)
        self._task = self._progress.add_task(description, total=total, failed=0, tps=0.0, turns=0)

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
        if self.lines and self._last is not None:
            self.console.print(self.line(*self._last))

    def update(self, done: int, failed: int, stats: Any = None, skipped: int = 0) -> None:
        """`done` includes `skipped` (already stored); `stats`: the runner's RunStats."""
        if not self.enabled:
            return
        self._last = (done, failed, stats, skipped)
        if self.lines:
            now = time.monotonic()
            if now - self._last_line >= self.log_every:
                self._last_line = now
                self.console.print(self.line(done, failed, stats, skipped))
            return
        self._progress.update(self._task, completed=done + failed, failed=failed,
                              tps=stats.tokens_per_s if stats is not None else 0.0,
                              turns=stats.turns if stats is not None else 0)

    def line(self, done: int, failed: int, stats: Any, skipped: int = 0) -> str:
        """One progress line: counts, turns, tokens/s (prompt + generated), elapsed and ETA."""
        elapsed = time.monotonic() - self._started
        finished = done + failed
        parts = [f"{self.description}: {finished}/{self.total} episodes"]
        if failed:
            parts[0] += f" ({failed} failed)"
        if stats is not None:
            parts.append(f"{stats.turns:,} turns")
            parts.append(f"{stats.tokens_per_s:,.1f} tokens/s (prompt + generated; {stats.generated_per_s:,.1f} "
                         "generated/s)")
        parts.append(f"elapsed {clock(elapsed)}")
        parts.append(self._eta(elapsed, finished - skipped, self.total - finished, stats))
        return ", ".join(parts)

    @staticmethod
    def _eta(elapsed: float, played: int, left: int, stats: Any) -> str:
        """Episodes left × time per finished episode; but when every episode left is already in
        flight, nothing is known from the finished ones: games played in lockstep end together,
        and the early finishers (a win, a loss) would predict hours for the last minute."""
        if left <= 0:
            return "done"
        live = stats.live if stats is not None else 0
        if live and left <= live:
            return f"ETA: the last {left} episode(s) are in flight, each ends when its game does"
        return "ETA " + (clock(elapsed / played * left) if played > 0 else "unknown until an episode ends")

def clock(seconds: float) -> str:
    """12s, 5m03s, 2h07m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


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
        ("model calls (turns)", f"{s.get('turns', 0):,}"),
        ("prompt tokens", f"{s.get('prompt_tokens', 0):,}"),
        ("generated tokens", f"{s['tokens']:,}"),
        ("tokens/s (prompt + generated)", f"{s['tokens_per_s']:,.1f}"),
        ("generated tokens/s", f"{s.get('generated_tokens_per_s', 0.0):,.1f}"),
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
