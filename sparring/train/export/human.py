"""Human data as SFT rows, rendered by our own prompts: the human games are replayed through the
game (the replay backend plays each recorded utterance in its seat), so every row shows exactly
what our negotiator or debater would be shown, with the human's move as its reply — the warm
start of lm-selfplay (Deal or No Deal `data.txt`) and of the NYU debate work (debaters' speeches).

The sources come from the games (`Game.hooks.human_data`): a game folder that can replay human
games names its source there, and `--human NAME` finds it with no table here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.gameapi import GAMES
from sparring.gameapi.hooks import HumanReplay
from sparring.train.export.filters import ExportFilters
from sparring.train.export.sft import sft_rows

HumanSource = str  # the name of a game's human-data source (dond, nyu, ...)


def human_sources() -> dict[str, HumanReplay]:
    """Every registered game's human-data sources, by name."""
    return {h.name: h for _, cls in GAMES.items() for h in cls.hooks.human_data}


def human_source(source: str) -> HumanReplay:
    sources = human_sources()
    if source not in sources:
        raise SparringError(f"unknown human data source {source!r}; expected one of {', '.join(sorted(sources))}")
    return sources[source]


def human_records(source: HumanSource, path: str | Path, *, split: str = "all", limit: int | None = None,
                  rounds: int = 2) -> list[Any]:
    """Episode records of the human games in `path`, replayed through the game (NYU debates: the
    first `rounds` speeches of each debater; a debate with fewer is left out)."""
    from sparring.engine.play import Arena

    plan = human_source(source).plan(Path(path).expanduser(), split, limit, rounds)
    with Arena.from_config(plan.config, models=plan.models) as arena:
        jobs = [j for j in arena.jobs() if plan.keep is None or j.instance_id in plan.keep]
        records = arena.play(jobs)
    return [r for r in records if r.status != "failed"]


def human_sft_rows(source: HumanSource, path: str | Path, filters: ExportFilters | None = None, *,
                   split: str = "all", limit: int | None = None, rounds: int = 2) -> list[dict[str, Any]]:
    f = filters or ExportFilters(role=human_source(source).role)
    rows = sft_rows(human_records(source, path, split=split, limit=limit, rounds=rounds), f)
    for row in rows:
        row["meta"]["source"] = f"human:{source}"
    return rows
