"""The FastAPI application: `create_app(runs_dir)` browses the runs under `runs_dir` and lets
people play games against the models of an experiment (`sparring serve`).

No authentication: bind it to localhost (the CLI warns otherwise). Sessions are cookies with
server-side state; every form POST carries a CSRF token; every text is escaped by Jinja's
autoescape. Routes live in `routes_browse` (runs, reports, episodes) and `routes_play` (games).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparring import __version__
from sparring.web import routes_browse, routes_play
from sparring.web.sessions import COOKIE
from sparring.web.state import HERE, WebState


def create_app(runs_dir: str | Path = "runs", *, configs: list[str | Path] | None = None) -> FastAPI:
    """The web app over `runs_dir` (created if missing; web games are stored there too).
    `configs`: extra experiment YAML files offered on the play page, besides the shipped ones."""
    state = WebState(Path(runs_dir).expanduser(), [Path(c).expanduser() for c in configs or []])
    state.runs_dir.mkdir(parents=True, exist_ok=True)
    state.choices()  # a bad --config fails at start, not on the first visit

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        state.close()

    app = FastAPI(title="sparring", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.web = state

    @app.middleware("http")
    async def session_cookie(request: Request, call_next: Callable[[Request], Any]) -> Response:
        session = state.sessions.get(request.cookies.get(COOKIE))
        fresh = session is None
        if session is None:
            session = state.sessions.new()
        request.state.session = session
        response: Response = await call_next(request)
        if fresh:
            response.set_cookie(COOKIE, session.id, httponly=True, samesite="lax", path="/")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if not hasattr(request.state, "session"):
            request.state.session = state.sessions.new()
        return state.render(request, "error.html.jinja", status_code=exc.status_code, title=f"Error {exc.status_code}",
                            message=str(exc.detail))

    app.include_router(routes_browse.router)
    app.include_router(routes_play.router)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    return app
