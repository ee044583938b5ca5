"""`sparring import clembench PATH -o RUN_DIR`: recorded games of other tools as sparring runs."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="Import recorded games of other tools as sparring runs.")


@app.command("clembench")
def clembench(path: Path = typer.Argument(..., help="A clembench results folder (any depth of <model pair>/"
                                          "<game>/<experiment>/episode_N/)."),
              output: Path = typer.Option(..., "--output", "-o", help="The new run directory."),
              name: str | None = typer.Option(None, "--name", help="The run's experiment name (default: the "
                                              "output folder's name).")) -> None:
    """clembench episodes (interactions.json, scores.json) as one sparring run: report, serve and export it."""
    from rich.console import Console

    from sparring.records.clembench.reader import import_tree

    console = Console()
    result = import_tree(path, output, name)
    console.print(f"imported {result.imported} episode(s) into {result.run_dir}: "
                  + ", ".join(f"{g} {n}" for g, n in sorted(result.games.items())))
    for file, reason in result.skipped[:20]:
        console.print(f"[yellow]skipped[/yellow] {file}: {reason}", markup=True, highlight=False)
    if len(result.skipped) > 20:
        console.print(f"... and {len(result.skipped) - 20} more skipped (failures.jsonl of the run lists all)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="import")
