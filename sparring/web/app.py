"""The FastAPI application: `create_app(runs_dir)` browses the runs under `runs_dir` and lets
people play games against the models of an experiment (`sparring serve`).

No authentication: bind it to localhost (the CLI warns otherwise). Every request's Host header
must name a host the app is served as (loopback names plus `allow_hosts`), so a page on another
site cannot reach it through DNS rebinding. Sessions are cookies with server-side state; every
form POST carries a CSRF token; every text is escaped by Jinja's autoescape. Routes live in
`routes_browse` (runs, reports, episodes, downloads) and `routes_play` (games).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparring import __version__
from sparring.web import routes_browse, routes_play
from sparring.web.sessions import COOKIE
from sparring.web.state import HERE, WebState

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def host_name(header: str) -> str:
    """The host of a Host header, without its port (`[::1]:8000` -> `::1`), lower-cased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def create_app(runs_dir: str | Path = "runs", *, configs: list[str | Path] | None = None,
               allow_hosts: list[str] | None = None) -> FastAPI:
    """The web app over `runs_dir` (created if missing; web games are stored there too).
    `configs`: extra experiment YAML files offered on the play page, besides the shipped ones.
    `allow_hosts`: host names accepted in the Host header besides the loopback ones ("*": any)."""
    allowed = {*LOOPBACK_HOSTS, *(h.strip().lower().strip("[]") for h in allow_hosts or [])}
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

    @app.middleware("http")  # added last: runs first, before any session is made
    async def host_check(request: Request, call_next: Callable[[Request], Any]) -> Response:
        host = host_name(request.headers.get("host", ""))
        if "*" not in allowed and host not in allowed:
            return PlainTextResponse(f"421 Misdirected Request: this server does not answer for host {host[:100]!r}; "
                                     "start it with --allow-host NAME to accept that name", status_code=421,
                                     headers={"X-Content-Type-Options": "nosniff"})
        response: Response = await call_next(request)
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
