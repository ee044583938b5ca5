"""What the web app holds for its lifetime (`WebState`), and how a route reaches it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse

from sparring import __version__
from sparring.numfmt import fmt_num
from sparring.records.index import IndexCache
from sparring.web.catalog import RunCatalog
from sparring.web.game_templates import GameTemplates
from sparring.web.play import ConfigChoice, WebStores, config_choices
from sparring.web.pools import SharedPools
from sparring.web.sessions import Session, Sessions

HERE = Path(__file__).parent
# The app's own pages load nothing but its static files.
CSP = ("default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'self'")
# A report (and any file next to it) is a document the app did not write: no script runs, it
# loads nothing from elsewhere, and `sandbox` gives it an origin of its own (no cookies, no
# same-origin requests to the app), even when opened in a tab of its own.
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'self'; sandbox allow-popups allow-top-navigation-by-user-activation")


class WebState:
    """Everything the app holds: its runs directory, indexes, sessions, stores and templates."""

    def __init__(self, runs_dir: Path, configs: list[Path]):
        self.runs_dir = runs_dir
        self.config_files = configs
        self.indexes = IndexCache()
        self.catalog = RunCatalog(runs_dir)
        self.sessions = Sessions()
        self.stores = WebStores()
        self.pools = SharedPools()
        self._choices: dict[str, ConfigChoice] | None = None
        loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(HERE / "templates")), GameTemplates()])
        self.env = jinja2.Environment(loader=loader,
                                      autoescape=True, undefined=jinja2.ChainableUndefined,
                                      trim_blocks=True, lstrip_blocks=True)
        self.env.filters["num"] = fmt_num
        self.env.filters["when"] = _when
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


def _when(ts: float) -> str:
    """A file time as local `YYYY-MM-DD HH:MM` ('' when unknown)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


def web_state(request: Request) -> WebState:
    return request.app.state.web  # type: ignore[no-any-return]
