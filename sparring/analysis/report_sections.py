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

    def rated(self, records: list[EpisodeRecord]) -> list[EpisodeRecord]:
        """Records that count for win rates / ratings (default: complete episodes)."""
        return [r for r in records if r.status == "complete" and r.outcome is not None]

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
    return SECTIONS.get(game)() if game in SECTIONS else None
