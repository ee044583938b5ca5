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

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from sparring import __version__
from sparring.records.index import IndexCache
from sparring.web.play import ConfigChoice, WebStores, config_choices
from sparring.web.pools import SharedPools
from sparring.web.sessions import COOKIE, Session, Sessions

HERE = Path(__file__).parent
# The app's own pages load nothing but its static files (reports, served as files, keep theirs).
CSP = ("default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'self'")


class WebState:
    """Everything the app holds: its runs directory, indexes, sessions, stores and templates."""

    def __init__(self, runs_dir: Path, configs: list[Path]):
        self.runs_dir = runs_dir
        self.config_files = configs
        self.indexes = IndexCache()
        self.sessions = Sessions()
        self.stores = WebStores()
        self.pools = SharedPools()
        self._choices: dict[str, ConfigChoice] | None = None
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")),
                                      autoescape=True, undefined=jinja2.ChainableUndefined,
                                      trim_blocks=True, lstrip_blocks=True)
        self.env.filters["num"] = _num
        self.env.globals["version"] = __version__
        for name in self.env.list_templates():  # compiled now, not on a first (timed) visit
            self.env.get_template(name)

    def choices(self) -> dict[str, ConfigChoice]:
        if self._choices is None:
            self._choices = config_choices(self.config_files)
        return self._choices

    def render(self, request: Request, template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        session: Session = request.state.session
        html = self.env.get_template(template).render(request=request, csrf=session.csrf, **ctx)
        return HTMLResponse(html, status_code=status_code, headers={"Content-Security-Policy": CSP})

    def close(self) -> None:
        for s in self.sessions.all():
            for game in list(s.games.values()):
                game.human.abandon("the server stopped")
        for s in self.sessions.all():
            for game in list(s.games.values()):
                game.done.wait(timeout=5)
        self.stores.close()
        self.pools.close()


def _num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


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

    from sparring.web import routes_browse, routes_play

    app.include_router(routes_browse.router)
    app.include_router(routes_play.router)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    return app


def web_state(request: Request) -> WebState:
    return request.app.state.web  # type: ignore[no-any-return]
