"""Browsing: the runs list, a run page (report + episode table + live progress), an episode."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response

from sparring.records.index import read_at
from sparring.web.runs import PAGE_SIZES, SORTS, episode_table, list_runs, outcome_text, progress, run_path
from sparring.web.state import web_state
from sparring.web.views import EVERYTHING, PUBLIC, pretty, public_events, steps, view_names

router = APIRouter()
REPORT = "report"


def _run(request: Request, name: str) -> Path:
    path = run_path(web_state(request).runs_dir, name)
    if path is None:
        raise HTTPException(404, f"no run named {name!r}")
    return path


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default  # type: ignore[arg-type]
    except ValueError:
        return default


@router.get("/")
def home() -> Response:
    return RedirectResponse("/runs", status_code=307)


@router.get("/runs")
def runs(request: Request) -> Response:
    state = web_state(request)
    return state.render(request, "runs.html.jinja", title="Runs", runs=list_runs(state.runs_dir),
                        runs_dir=str(state.runs_dir))


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
    has_report = (path / REPORT / "report.html").is_file()
    return state.render(request, "run.html.jinja", title=name, name=name, table=table, live=live,
                        has_report=has_report, sorts=SORTS, page_sizes=PAGE_SIZES, outcome_text=outcome_text)


@router.get("/runs/{name}/progress.json")
def run_progress(request: Request, name: str) -> Response:
    path = _run(request, name)
    return JSONResponse(progress(path, web_state(request).indexes.get(path)))


@router.get("/runs/{name}/report/")
@router.get("/runs/{name}/report/{file:path}")
def report_file(request: Request, name: str, file: str = "report.html") -> Response:
    root = (_run(request, name) / REPORT).resolve()
    target = (root / (file or "report.html")).resolve()
    if root not in target.parents or not target.is_file():
        raise HTTPException(404, "no such report file")
    return FileResponse(target)


@router.get("/runs/{name}/episodes/{episode_id}")
def episode(request: Request, name: str, episode_id: str) -> Response:
    state = web_state(request)
    path = _run(request, name)
    entry = state.indexes.get(path).get(episode_id)
    if entry is None:
        raise HTTPException(404, f"no episode {episode_id!r} in run {name!r}")
    rec = read_at(path / entry.file, entry.offset, entry.length)
    views = view_names(rec)
    view = request.query_params.get("view", PUBLIC)
    if view not in views:
        raise HTTPException(404, f"no view {view!r}; views: {', '.join(views)}")
    player = view if view in rec.seats else None
    return state.render(
        request, "episode.html.jinja", title=f"{name} / {episode_id}", name=name, rec=rec, view=view, views=views,
        PUBLIC=PUBLIC, EVERYTHING=EVERYTHING, player=player,
        events=public_events(rec) if view == PUBLIC else rec.events,
        steps=steps(rec, player) if view != PUBLIC else [], pretty=pretty,
        outcome=rec.outcome.model_dump(mode="json") if rec.outcome else None)
