"""`sparring textarena list [--all]`: which TextArena environments play here (probed offline)."""

from __future__ import annotations

import typer

# `\\[`: Rich would read `[textarena]` as markup and drop it from --help
app = typer.Typer(no_args_is_help=True, help="TextArena's games on sparring (pip install 'sparring\\[textarena]').")


@app.command("list")
def list_envs(everything: bool = typer.Option(False, "--all", help="Probe every base environment (-v0), "
                                              "not only the shipped ones.")) -> None:
    """Each environment: available (and for how many players) or why not (a download, an API key, ...)."""
    from rich.console import Console
    from rich.table import Table

    from sparring.gameapi import GAMES

    rows = GAMES.get("textarena").catalog(everything)  # type: ignore[attr-defined]
    table = Table(show_header=True)
    for col in ("env_id", "players", "available here"):
        table.add_column(col)
    for env_id, players, why in rows:
        table.add_row(env_id, str(players or "-"), "yes" if why is None else f"no: {why}")
    console = Console()
    console.print(table)
    console.print(f"{sum(w is None for _, _, w in rows)} of {len(rows)} available; play one with "
                  "`game: textarena, game_args: {env_id: ID, num_players: N}`")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="textarena")
