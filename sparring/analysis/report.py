"""`sparring report RUN_DIR`: stats.json, episodes.csv, PNG plots and one self-contained report.html.

Everything is written under RUN_DIR/report/ (plots in RUN_DIR/report/plots/) so a report can be
regenerated at any time without touching the append-only store, and the folder can be shared as
is; report.html embeds every figure as base64, so it is also shareable on its own.
Game families contribute sections through `report_sections`; this module knows no game.

stats.json keys: run, counts (episodes/complete/aborted/failed/rated, abandoned if any: episodes a
player left, stored aborted and never rated nor measured by game sections), agents and seats (games,
W/L/T, win_rate + Wilson CI, mean_reward + bootstrap CI), matchups, win_matrix, ratings
(Bradley–Terry, Elo scale, bootstrap CIs), failures (by type/reason, aborts by reason), usage,
sections.<game> (e.g. sections.debate, sections.dond), warnings, settings, plots.
NaN never appears: missing values are null.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import io
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from sparring.analysis import metrics as M
from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, section_for
from sparring.analysis.results import abandoned, run_results
from sparring.errors import SparringError
from sparring.numfmt import fmt_num, missing
from sparring.records.reader import RunData, read_run

REPORT_DIR = "report"


def jsonable(x: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def build_stats(run: RunData, ctx: ReportContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """All statistics of a run (JSON-able) and the section objects that produced them: the
    typed `run_results` written out, plus the tables only the report shows."""
    res = run_results(run, ctx)
    sections, rated, agents = res.sections, res.rated, res.agents
    match_rows = [m.to_dict() for m in res.matchups]
    status = {"complete": 0, "aborted": 0}
    n_left = sum(abandoned(r) for r in run.episodes)
    for r in run.episodes:
        status[r.status] = status.get(r.status, 0) + 1
    stats: dict[str, Any] = {
        "run": {"dir": str(run.run_dir), "name": run.run_dir.name,
                "experiments": sorted({r.experiment for r in run.episodes + run.failures}),
                "games": run.games, "config": run.config.get("name") or run.config.get("experiment"),
                "manifest": {k: v for k, v in run.manifest.items() if isinstance(v, (str, int, float, bool))}},
        "counts": {"episodes": len(run.episodes) + len(run.failures), **status, "failed": len(run.failures),
                   "rated": len(rated), **({"abandoned": n_left} if n_left else {})},
        "agents": M.agent_summary(rated, ctx.seed),
        "seats": M.seat_summary(rated, ctx.seed),
        "matchups": match_rows,
        "win_matrix": M.win_matrix(match_rows, agents),
        "ratings": M.ratings_dict(res.ratings, len(res.comparisons)),
        "failures": M.failure_summary(run),
        "usage": M.usage_summary(run.episodes + run.failures),
        "sections": {},
        "warnings": list(run.warnings),
        "settings": {"seed": ctx.seed, "n_bootstrap": ctx.n_bootstrap,
                     "calibration_bins": ctx.calibration_bins},
    }
    if len(sections) > 1:
        stats["warnings"].append(f"run mixes games {sorted(sections)}; agent tables pool them")
    used: dict[str, Any] = {}
    for game, (sec, recs) in sections.items():
        if sec is None:
            continue
        try:
            stats["sections"][game] = sec.compute(recs, run, ctx)
        except Exception as e:  # a broken section must not cost the user the rest of the report
            stats["warnings"].append(f"section {game!r} failed: {type(e).__name__}: {e}")
            continue
        used[game] = sec
    return jsonable(stats), used


def _episode_rows(run: RunData, sections: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for rec in sorted(run.episodes + run.failures, key=lambda r: (r.matchup, r.instance_id, r.repeat, r.flip, r.id)):
        out = rec.outcome
        row: dict[str, Any] = {
            "id": rec.id, "experiment": rec.experiment, "game": rec.game, "instance_id": rec.instance_id,
            "matchup": rec.matchup, "seed": rec.seed, "repeat": rec.repeat, "flip": rec.flip,
            "status": rec.status, "winner": out.winner if out else None,
            "reason": (out.reason if out else None) or rec.error,
        }
        for p, s in sorted(rec.seats.items()):
            row[f"agent_{p}"] = s.agent
        for p, v in sorted((out.rewards if out else {}).items()):
            row[f"reward_{p}"] = v
        sec = sections.get(rec.game)
        if sec is not None and out is not None:
            try:
                row.update(sec.csv_columns(rec))
            except Exception:  # noqa: BLE001 — a missing metric leaves the cells empty
                pass
        row["duration_s"] = round(rec.duration_s, 3)
        row["prompt_tokens"] = sum(u.prompt_tokens for u in rec.usage.values())
        row["completion_tokens"] = sum(u.completion_tokens for u in rec.usage.values())
        rows.append(row)
    return rows


_HEAD = ("id", "experiment", "game", "instance_id", "matchup", "seed", "repeat", "flip", "status", "winner",
         "reason")
_TAIL = ("duration_s", "prompt_tokens", "completion_tokens")


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """One row per episode. Columns: episode fields, agents, rewards, then game-specific ones in
    first-seen order, cost last — stable whatever order the games' rows come in."""
    seen: list[str] = []
    for r in rows:
        seen.extend(k for k in r if k not in seen)

    def rank(col: str) -> tuple[int, int, str]:
        if col in _HEAD:
            return (0, _HEAD.index(col), "")
        if col in _TAIL:
            return (4, _TAIL.index(col), "")
        if col.startswith(("agent_", "reward_")):
            return (1 if col.startswith("agent_") else 2, 0, col)
        return (3, seen.index(col), "")

    cols = sorted(seen, key=rank)
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols or ["id"], extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None or (isinstance(v, float) and not math.isfinite(v)) else v)
                    for k, v in r.items()})
    write_atomic(path, buf.getvalue().encode("utf-8"))


def write_atomic(path: Path, data: bytes) -> None:
    """Write a temporary file beside `path`, then rename it over `path`: a reader (a browser, the
    web app, a sync job) never sees a half-written report, and a crash leaves the old one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _generic_plots(stats: dict[str, Any]) -> dict[str, bytes]:
    out: dict[str, bytes | None] = {
        "ratings": P.ratings_plot(stats["ratings"]["players"], anchor=stats["ratings"]["anchor"]),
        "win_matrix": P.heatmap(stats["win_matrix"]["agents"], stats["win_matrix"]["win_rate"],
                                stats["win_matrix"]["games"]),
    }
    return {k: v for k, v in out.items() if v}


def _env(sections: dict[str, ReportSection] | None = None) -> jinja2.Environment:
    """The report's templates, plus each section's from the `templates/` folder beside its module
    (the game's folder), under the prefix `<game>/`."""
    own: dict[str, jinja2.BaseLoader] = {}
    for game, sec in (sections or {}).items():
        if sec.template:
            module = sys.modules[type(sec).__module__]
            own[game] = jinja2.FileSystemLoader(str(Path(str(module.__file__)).parent / "templates"))
    loader = jinja2.ChoiceLoader([jinja2.PackageLoader("sparring.analysis", "templates"),
                                  jinja2.PrefixLoader(own)])
    env = jinja2.Environment(loader=loader,
                             autoescape=jinja2.select_autoescape(["html", "jinja"]),
                             undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = fmt_num
    env.filters["pct"] = lambda v, d=1: "–" if missing(v) else f"{100 * float(v):.{d}f}%"
    env.filters["ci"] = _fmt_ci
    return env


def _fmt_ci(v: Any, digits: int = 3, pct: bool = False) -> str:
    if missing(v) or not isinstance(v, (list, tuple)) or len(v) != 2 or any(missing(x) for x in v):
        return "–"
    if pct:
        return f"[{100 * v[0]:.1f}, {100 * v[1]:.1f}]%"
    return f"[{v[0]:.{digits}f}, {v[1]:.{digits}f}]"


def report_run(run_dir: str | Path, console: Any) -> Path | None:
    """The report of a finished run, asked for after it (the CLI, bench, loops): a failing report
    never loses the run, it says how to redo it. `console`: a rich Console for the messages."""
    try:
        path = write_report(run_dir)
    except Exception as e:  # noqa: BLE001 — the run is stored; the report can be redone
        console.print(f"[yellow]report failed ({type(e).__name__}: {e}); retry with `sparring report {run_dir}`[/yellow]")
        return None
    console.print(f"report: {path}")
    return path


def write_report(run_dir: str | Path, out_dir: str | Path | None = None, *, seed: int = 0,
                 n_bootstrap: int = 1000, calibration_bins: int = 5, plots: bool = True) -> Path:
    """Build the report of a run directory; returns the path of report.html.

    Works on any run: failures, ties, self-play, missing judges and zero complete episodes
    (then the report says so). stats.json is deterministic per `seed`; report.html differs only
    by its timestamp. `plots=False` skips the figures (about 0.2 s each on a laptop core).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise SparringError(f"report: run directory {run_dir} does not exist")
    out = Path(out_dir) if out_dir is not None else run_dir / REPORT_DIR
    plot_dir = out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    for old in plot_dir.glob("*.png"):  # figures of an earlier report of this run
        old.unlink()
    ctx = ReportContext(seed=seed, n_bootstrap=n_bootstrap, calibration_bins=calibration_bins)
    run = read_run(run_dir, transcripts=False)
    if any(getattr(section_for(g), "needs_transcripts", False) for g in run.games):
        run = read_run(run_dir)
    stats, sections = build_stats(run, ctx)

    figures: dict[str, dict[str, str]] = {"generic": {}}
    for name, png in (_generic_plots(stats) if plots else {}).items():
        figures["generic"][name] = _save(png, plot_dir / f"{name}.png")
    for game, sec in (sections.items() if plots else ()):
        figures[game] = {}
        try:
            pngs = sec.plots(stats["sections"][game])
        except Exception as e:  # noqa: BLE001 — keep the report; say what is missing
            stats["warnings"].append(f"plots of section {game!r} failed: {type(e).__name__}: {e}")
            pngs = {}
        for name, png in pngs.items():
            figures[game][name] = _save(png, plot_dir / f"{game}_{name}.png")
    stats["plots"] = sorted(str(p.relative_to(out)) for p in plot_dir.glob("*.png"))

    write_atomic(out / "stats.json", (json.dumps(stats, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    write_csv(_episode_rows(run, sections), out / "episodes.csv")

    env = _env(sections)
    html = env.get_template("report.html.jinja").render(
        stats=stats, figures=figures,
        sections=[{"game": g, "title": s.title, "template": f"{g}/{s.template}", "stats": stats["sections"][g],
                   "figures": figures.get(g, {})} for g, s in sections.items() if s.template],
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path = out / "report.html"
    write_atomic(path, html.encode("utf-8"))
    return path


def _save(png: bytes, path: Path) -> str:
    """Write the PNG next to the report and return it as a data URI for embedding."""
    write_atomic(path, png)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
