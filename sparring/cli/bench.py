"""`sparring bench MODEL [MODEL...]`: play the versioned benchmark suite with each model and score
it clembench-style (% played, quality, clemscore with bootstrap CIs), and the suite's static tasks
through lm-eval (the statscore, as Playpen reports beside the clemscore). The logic lives in
`sparring.evaluation.bench`; the suites in `sparring/configs/bench/`.

Exit codes as `sparring run`: 0 every scheduled episode is stored (skipped games, which this
installation does not have, are reported but do not fail the command); 2 a user error (unknown
model, game or suite); 3 a run failed or is incomplete; 130 interrupted.
"""

from __future__ import annotations

import typer

from sparring.cli.run import EXIT_INCOMPLETE, EXIT_INTERRUPTED, DryRun, ModelsFile, NoReport, Quiet


def bench(
    models: list[str] = typer.Argument(..., help="Models to benchmark (names from models.yaml or --models-file)."),
    suite: str = typer.Option("suite", "--suite", "-s", help="Suite name (sparring/configs/bench/NAME.yaml: "
                              "suite, bench-quickstart) or a YAML path."),
    games: str | None = typer.Option(None, "--games", "-g", help="Comma-separated suite entries to play "
                                     "(default: all), e.g. taboo,wordle,dond."),
    instances: int | None = typer.Option(None, "--instances", "-n", min=1, help="Play at most N instances of "
                                         "each game (a quick run; scores are then not the suite's)."),
    partner: str | None = typer.Option(None, "--partner", help="Partner model in two-player games and the judge "
                                       "of debates (default: the model itself, self-play)."),
    output_dir: str | None = typer.Option(None, "--output-dir", "-o", help="Output directory (default "
                                          "runs/bench-SUITE); rerunning the same command resumes it."),
    models_file: str | None = ModelsFile, dry_run: bool = DryRun, quiet: bool = Quiet, no_report: bool = NoReport,
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap confidence intervals."),
    adapter: str | None = typer.Option(None, "--adapter", help="A LoRA adapter directory (e.g. from `sparring "
                                       "train`): every model plays the games and the static tasks with it."),
    statscore: bool = typer.Option(True, "--statscore/--no-statscore", help="Run the suite's static tasks "
                                   "(lm-eval) for the statscore, when it has them (pip install 'sparring[statscore]')."),
    static_limit: int | None = typer.Option(None, "--static-limit", min=1, help="At most N documents per static "
                                            "task (a quick statscore; then not the suite's)."),
) -> None:
    """Benchmark models on a fixed suite of games (clemscore) and static tasks (statscore, via lm-eval)."""
    from rich.console import Console

    from sparring.evaluation.bench import BenchOptions, run_bench

    picked = [g.strip() for g in games.split(",") if g.strip()] if games else None
    result = run_bench(BenchOptions(models=list(dict.fromkeys(models)), suite=suite, games=picked, instances=instances,
                                    partner=partner, output_dir=output_dir, models_file=models_file,
                                    quiet=quiet, report=not no_report, seed=seed, dry_run=dry_run, adapter=adapter,
                                    statscore=statscore, static_limit=static_limit), Console(soft_wrap=True))
    if result.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.status == "incomplete":
        raise typer.Exit(EXIT_INCOMPLETE)


def register(app: typer.Typer) -> None:
    """Add `bench` to the root `sparring` app."""
    app.command("bench")(bench)
