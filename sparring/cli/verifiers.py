"""`sparring verifiers package EXPERIMENT -o DIR`: a game as an installable verifiers environment."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="sparring's games as verifiers environments (prime-rl trains on them; "
                                             "pip install 'sparring\\[verifiers]').")  # `\\[`: not Rich markup


@app.command("package")
def package(
    experiment: str = typer.Argument(..., help="An experiment: a shipped name (dond-quickstart, quickstart, "
                                               "textarena-kuhnpoker, ...) or a YAML file."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for the package (pip install it)."),
    name: str | None = typer.Option(None, "--name", help="Package and taskset id (default sparring-EXPERIMENT)."),
    seat: list[str] = typer.Option([], "--seat", help="An agent whose seats verifiers plays (repeat it; default: "
                                                      "every agent). The others keep their own models."),
    force: bool = typer.Option(False, "--force", help="Write into a non-empty directory."),
) -> None:
    """Write a pip-installable verifiers environment package for any game's experiment."""
    from rich.console import Console

    from sparring.integrations.verifiers.package import write_package

    pkg = write_package(experiment, output, name=name, seats=seat or None, force=force)
    console = Console(soft_wrap=True)
    console.print(f"wrote the verifiers environment [bold]{pkg.name}[/bold] to {pkg.path}: agents "
                  f"{', '.join(pkg.agents)} played by verifiers, seats {', '.join(pkg.seats)}")
    console.print(f"  pip install -e {pkg.path}\n  vf-eval {pkg.name} -m MODEL --client.base-url URL -n 4 "
                  "--env.taskset.split test --no-push")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="verifiers")
