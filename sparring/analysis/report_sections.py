"""Registry of game-specific report sections: a game family adds its part of the report by
decorating one class (`@register_report_section("debate")`), with no edit to the report itself.

A section computes JSON-able statistics from the run's records of its game, draws figures from
those statistics, adds columns to episodes.csv and names the Jinja2 template that renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.registry import Registry
from sparring.stats.ratings import Comparison


def rated_records(records: list[EpisodeRecord], *, aborted: bool) -> list[EpisodeRecord]:
    """Episodes with an outcome that count: complete ones, and aborted ones if `aborted`."""
    ok = ("complete", "aborted") if aborted else ("complete",)
    return [r for r in records if r.outcome is not None and r.status in ok]


@dataclass(frozen=True)
class ReportContext:
    """Knobs shared by every section (deterministic per `seed`)."""

    seed: int = 0
    n_bootstrap: int = 1000
    calibration_bins: int = 5


class ReportSection:
    """Base class: override what the game family needs. One instance per report."""

    name: ClassVar[str] = "section"
    title: ClassVar[str] = "Section"
    # Jinja2 template under the `templates/` folder next to the section's module (the game's
    # folder); "" = the section adds statistics and plots but no HTML.
    template: ClassVar[str] = ""
    # True if compute/csv_columns read records' `calls` or `events`. Reports otherwise load
    # records without them (`record.without_transcript`), which is most of their size.
    needs_transcripts: ClassVar[bool] = False
    # True if episodes the game aborted (invalid outputs, a broken rule) count too: for games
    # whose aborts are part of the play (an abort rate is a result), not engine failures.
    counts_aborted: ClassVar[bool] = False

    def rated(self, records: list[EpisodeRecord]) -> list[EpisodeRecord]:
        """Records that count for win rates / ratings: complete episodes (and aborted ones with
        `counts_aborted`)."""
        return rated_records(records, aborted=self.counts_aborted)

    def comparisons(self, records: list[EpisodeRecord]) -> list[Comparison] | None:
        """Pairwise results for the Bradley–Terry table; None = the generic reward comparison."""
        return None

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        """Statistics of this section (goes to stats.json under sections.<name>)."""
        return {}

    def plots(self, stats: dict[str, Any]) -> dict[str, bytes]:
        """PNG figures by name (file plots/<section>_<name>.png, embedded in report.html)."""
        return {}

    def csv_columns(self, record: EpisodeRecord) -> dict[str, Any]:
        """Extra episodes.csv columns for one record of this game."""
        return {}


SECTIONS: Registry[type[ReportSection]] = Registry(
    "report section", scan=["sparring.games"], marker="@register_report_section(",
    entry_points="sparring.report_sections")


def register_report_section(*games: str):
    """Class decorator: the section is used for records whose `game` is one of `games`."""
    return SECTIONS.register(*games)


def section_for(game: str) -> ReportSection | None:
    """The report section of `game` (an alias resolves through the game registry, the one place
    that knows them, so a section registers under the game's canonical name only)."""
    from sparring.gameapi import GAMES

    name = GAMES.canonical(game)
    return SECTIONS.get(name)() if name in SECTIONS else None
