"""Templates that games bring in their own folder (a play panel's move form), named
`game/<game>/<file>` and read from `<game folder>/templates/<file>`: the web app renders a
game's form with no copy of it in the app's own templates."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import jinja2

from sparring.gameapi import GAMES


def game_template(game: str, file: str) -> str:
    """The loader name of `file` in `game`'s templates folder."""
    return f"game/{game}/{file}"


class GameTemplates(jinja2.BaseLoader):
    """Loads `game/<game>/<file>` from the folder of the module that defines the game's class."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        parts = template.split("/")
        if len(parts) != 3 or parts[0] != "game" or parts[1] not in GAMES or parts[2] in ("", ".", ".."):
            raise jinja2.TemplateNotFound(template)
        folder = Path(inspect.getfile(GAMES.get(parts[1]))).parent / "templates"
        path = folder / parts[2]
        if not path.is_file():
            raise jinja2.TemplateNotFound(template)
        mtime = path.stat().st_mtime
        return path.read_text(encoding="utf-8"), str(path), lambda: path.stat().st_mtime == mtime

    def list_templates(self) -> list[str]:
        return []  # found on demand: the app does not precompile games' templates
