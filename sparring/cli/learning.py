"""`sparring learning --suite quick|full --output DIR`: the learning suite (does playing make the
model better on held-out instances?). Same as `python scripts/run_learning.py`; the logic lives in
`sparring.learning`. (`sparring bench` is the model benchmark, clemscore; `benchmarks/` holds the
speed benchmarks.)"""

from __future__ import annotations

from pathlib import Path

import typer

from sparring.learning.order import ORDER


def learning(
    suite: str = typer.Option("quick", "--suite", "-s", help="quick (tiny model, toy sizes, minutes) or full "
                              "(the bundled model at the issue's sizes, hours on a CPU)."),
    output: Path = typer.Option(..., "--output", "-o", help="Output directory: learning.json, learning.md, "
                                "curves/*.png, models.yaml with every trained adapter as MODEL@STAGE."),
    only: str | None = typer.Option(None, "--only", help="Comma-separated experiments (default: all): "
                                    + ", ".join(ORDER) + "."),
    dond_data: str | None = typer.Option(None, "--dond-data", help="The Deal or No Deal human dialogues (data.txt "
                                         "or a folder holding it); default: $SPARRING_DATA_DIR or `sparring data "
                                         "fetch dond-dialogues`."),
    dond_contexts: str | None = typer.Option(None, "--dond-contexts", help="lm-selfplay's Deal or No Deal scenarios "
                                             "(selfplay.txt or a folder holding it; dond-selfplay-rl's second held-out "
                                             "set). Default: beside --dond-data, $SPARRING_DATA_DIR or `sparring data "
                                             "fetch dond-contexts`."),
) -> None:
    """Train on some instances, measure held-out ones before and after, with 95% intervals."""
    from sparring.learning.suite import run_suite

    picked = [x.strip() for x in only.split(",") if x.strip()] if only else None
    data = {k: v for k, v in (("dond-dialogues", dond_data), ("dond-contexts", dond_contexts)) if v}
    paths = run_suite(suite, output, picked, data=data or None)
    typer.echo(f"wrote {paths['json']} and {paths['md']}")


def register(app: typer.Typer) -> None:
    """Add `learning` to the root `sparring` app (`bench-learning`, its former name, kept as a hidden alias)."""
    app.command("learning")(learning)
    app.command("bench-learning", hidden=True)(learning)
