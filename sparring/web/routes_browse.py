"""Browsing: the runs list, a run page (report + episode table + live progress + downloads), an
episode (its views, a turn-by-turn replay, the previous and next episode).

Every file served comes from inside its run's directory once symlinks are resolved (`inside`);
the report is served with its own strict, sandboxing CSP. A bad line, manifest or config never
fails a page: the line is left out and named, the bad manifest field shown blank and named.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response

from sparring.records.files import EPISODES, FAILURES
from sparring.records.index import RunIndex
from sparring.records.lines import read_at
from sparring.web.runs import (
    PAGE_SIZES,
    RUN_SORTS,
    SORTS,
    episode_table,
    inside,
    metrics_rows,
    outcome_text,
    progress,
    run_path,
    summarize,
)
from sparring.web.state import REPORT_CSP, web_state
from sparring.web.views import EVERYTHING, PUBLIC, REPLAY, pretty, public_events, steps, view_names

router = APIRouter()
REPORT = "report"
DOWNLOADS = {"episodes.jsonl": EPISODES, "failures.jsonl": FAILURES}


def _run(request: Request, name: str) -> Path:
    path = run_path(web_state(request).runs_dir, name)
    if path is None:
        raise HTTPException(404, f"no run named {name!r}")
    return path


def _int(value: str | None, default: int) -> int:
    if value is None or value == "" or len(value) > 9 or not value.lstrip("-").isdigit():
        return default
    return int(value)


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename, safe='')}"}


@router.get("/")
def home() -> Response:
    return RedirectResponse("/runs", status_code=307)


@router.get("/favicon.ico")
def favicon() -> Response:
    return RedirectResponse("/static/favicon.svg", status_code=301)


@router.get("/runs")
def runs(request: Request) -> Response:
    state = web_state(request)
    qp = request.query_params
    desc = qp.get("desc")
    listing = state.catalog.page(q=qp.get("q", "")[:200], sort=qp.get("sort", "updated"),
                                 desc=None if desc is None else desc in ("1", "true"),
                                 page=_int(qp.get("page"), 1), per=_int(qp.get("per"), 50))
    return state.render(request, "runs.html.jinja", title="Runs", listing=listing, sorts=RUN_SORTS,
                        page_sizes=PAGE_SIZES)


@router.get("/runs/{name}")
def run_page(request: Request, name: str) -> Response:
    state = web_state(request)
    path = _run(request, name)
    index = state.indexes.get(path)
    qp = request.query_params
    table = episode_table(index, q=qp.get("q", ""), agent=qp.get("agent", ""), instance=qp.get("instance", ""),
                          status=qp.get("status", ""), matchup=qp.get("matchup", ""),
                          sort=qp.get("sort", "order"), desc=qp.get("desc", "") in ("1", "true"),
                          page=_int(qp.get("page"), 1), per=_int(qp.get("per"), 50))
    live = progress(path, index)
    has_report = inside(path, f"{REPORT}/report.html") is not None
    downloads = [f for f, stored in DOWNLOADS.items() if inside(path, stored) is not None]
    return state.render(request, "run.html.jinja", title=name, name=name, table=table, live=live,
                        has_report=has_report, sorts=SORTS, page_sizes=PAGE_SIZES, outcome_text=outcome_text,
                        problems=summarize(path).problems + index.problems, downloads=downloads)


@router.get("/runs/{name}/progress.json")
def run_progress(request: Request, name: str) -> Response:
    path = _run(request, name)
    return JSONResponse(progress(path, web_state(request).indexes.get(path)))


@router.get("/runs/{name}/report/")
@router.get("/runs/{name}/report/{file:path}")
def report_file(request: Request, name: str, file: str = "report.html") -> Response:
    target = inside(_run(request, name), f"{REPORT}/{file or 'report.html'}", under=REPORT)
    if target is None:
        raise HTTPException(404, "no such report file")
    return FileResponse(target, headers={"Content-Security-Policy": REPORT_CSP})


@router.get("/runs/{name}/download/{file}")
def download(request: Request, name: str, file: str) -> Response:
    """The run's episodes or failures (the JSONL files as stored), or its metrics as CSV."""
    path = _run(request, name)
    if file == "metrics.csv":
        columns, rows = metrics_rows(web_state(request).indexes.get(path))
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns or ["id"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
        return Response(buf.getvalue(), media_type="text/csv; charset=utf-8",
                        headers=_attachment(f"{name}-metrics.csv"))
    target = inside(path, DOWNLOADS[file]) if file in DOWNLOADS else None
    if target is None:
        raise HTTPException(404, f"no file {file!r} in run {name!r}")
    return FileResponse(target, media_type="application/x-ndjson", headers=_attachment(f"{name}-{file}"))


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text, never runs as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _neighbours(index: RunIndex, episode_id: str) -> tuple[str | None, str | None]:
    i = index.positions.get(episode_id)
    entries = index.entries
    if i is None or i >= len(entries) or entries[i].id != episode_id:
        return None, None
    return (entries[i - 1].id if i > 0 else None), (entries[i + 1].id if i + 1 < len(entries) else None)


@router.get("/runs/{name}/episodes/{episode_id}")
def episode(request: Request, name: str, episode_id: str) -> Response:
    state = web_state(request)
    path = _run(request, name)
    index = state.indexes.get(path)
    entry = index.get(episode_id)
    if entry is None:
        bad = index.bad_entry(episode_id)
        if bad is not None:
            raise HTTPException(422, f"episode {episode_id!r} is not shown: {bad.problem}")
        raise HTTPException(404, f"no episode {episode_id!r} in run {name!r}")
    try:
        rec = read_at(path / entry.file, entry.offset, entry.length)
    except (OSError, ValueError) as e:  # pydantic's ValidationError is a ValueError: the reader skips it too
        problem = f"{entry.file}:{entry.line_no}: skipped unreadable record ({type(e).__name__})"
        index.flag(entry, problem)
        raise HTTPException(422, f"episode {episode_id!r} is not shown: {problem}") from None
    views = view_names(rec)
    view = request.query_params.get("view", PUBLIC)
    if view not in views:
        raise HTTPException(404, f"no view {view!r}; views: {', '.join(views)}")
    player = view if view in rec.seats else None
    events = public_events(rec) if view in (PUBLIC, REPLAY) else rec.events
    step = min(max(0, _int(request.query_params.get("step"), 1)), len(events)) if view == REPLAY else 0
    previous, following = _neighbours(index, episode_id)
    return state.render(
        request, "episode.html.jinja", title=f"{name} / {episode_id}", name=name, rec=rec, view=view, views=views,
        PUBLIC=PUBLIC, EVERYTHING=EVERYTHING, REPLAY=REPLAY, player=player, events=events, step=step,
        steps=steps(rec, player) if view not in (PUBLIC, REPLAY) else [], pretty=pretty,
        outcome=rec.outcome.model_dump(mode="json") if rec.outcome else None, previous=previous,
        following=following)
