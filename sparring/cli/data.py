"""`sparring data list|fetch|path`: the public data files sparring does not ship (`datafiles.py`)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="Public data sparring does not ship: list, fetch once (with a "
                  "checksum), show where it is.")


@app.command("list")
def list_files() -> None:
    """Every data file: where it comes from, its license, and whether it is here."""
    from rich.console import Console
    from rich.table import Table

    from sparring.datafiles import CATALOG, find

    table = Table(show_header=True)
    for col in ("name", "what", "license", "here"):
        table.add_column(col)
    for f in CATALOG.values():
        found = find(f.name)
        table.add_row(f.name, f"{f.description}\n{f.url}", f.license, str(found) if found else "no")
    Console().print(table)


@app.command("fetch")
def fetch(name: str = typer.Argument(..., help="A name from `sparring data list`."),
          url: str | None = typer.Option(None, "--url", help="A mirror of the same file (checked against the "
                                         "same checksum)."),
          sha256: str | None = typer.Option(None, "--sha256", help="Expected SHA-256 (overrides the pinned one)."),
          force: bool = typer.Option(False, "--force", help="Download again although it is cached.")) -> None:
    """Download a data file into sparring's cache once, checking its SHA-256."""
    from sparring.datafiles import fetch as fetch_file

    typer.echo(str(fetch_file(name, url=url, sha256=sha256, force=force)))


@app.command("path")
def path(name: str = typer.Argument(..., help="A name from `sparring data list`.")) -> None:
    """Where a data file is ($SPARRING_DATA_DIR or the cache); exit 2 with how to get it if nowhere."""
    from sparring.datafiles import resolve

    typer.echo(str(resolve(name)))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="data")
