"""`sparring run NAME`, `sparring merge DIRS --output D`, `sparring report RUN_DIR`, and the
shared body of `scripts/run_debate.py` / `scripts/run_negotiation.py`.

Everything heavy is imported inside the commands so `sparring --help` stays instant. User errors
print as one line and exit 2; an interrupted run exits 130 after saying how to resume.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from sparring.engine.plan import RunOptions

# Exit codes: 0 every scheduled episode is stored; 2 a user error (bad config, file, option);
# 3 the run ended incomplete (failed episodes, a lost worker, a server that went away); 130 Ctrl-C.
EXIT_USER_ERROR, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 2, 3, 130

NumIters = typer.Option(None, "--num-iters", "-n", min=1, help="Use at most this many instances (questions/scenarios).")
DryRun = typer.Option(False, "--dry-run", help="Validate, resolve models/datasets/prompts, print the schedule; load no weights.")
Resume = typer.Option(None, "--resume", help="Run directory to resume (skips every stored episode).")
RetryFailed = typer.Option(False, "--retry-failed", help="Also rerun episodes recorded as failed.")
ShardOpt = typer.Option(None, "--shard", help="Run shard I of N (0-based), e.g. 0/4, for N machines.")
OutputDir = typer.Option(None, "--output-dir", "-o", help="Parent directory of runs (default $SPARRING_RUNS_DIR or runs/).")
ModelsFile = typer.Option(None, "--models-file", "-f", help="Your models YAML (extends/overrides the shipped one).")
MaxLive = typer.Option(None, "--max-live", min=1, help="Episodes advanced side by side (batch width).")
Workers = typer.Option(None, "--workers", help="Engine processes: a number or 'auto' (one per CPU). For "
                       "scripted/replay/API models when the engine is the bottleneck; each loads its own models.")
Seed = typer.Option(None, "--seed", help="Run seed (per-episode seeds derive from it).")
RunName = typer.Option(None, "--run-name", help="Fixed run directory name; rerunning the same command resumes it.")
Quiet = typer.Option(False, "--quiet", "-q",
                     help="No progress bar (not even the model libraries' own) or summary table.")
NoReport = typer.Option(False, "--no-report", help="Do not write the report at the end.")


def _workers(value: str | None) -> int | str | None:
    """`--workers 4` or `--workers auto` (the config validates the value)."""
    if value is None or value.strip().lower() == "auto":
        return None if value is None else "auto"
    try:
        return int(value)
    except ValueError:
        from sparring.errors import ConfigError

        raise ConfigError(f"--workers expects a number or 'auto', got {value!r}") from None


def _run(opts: RunOptions, *, report: bool = True) -> None:
    """Play the run, then (unless --no-report) ask analysis for its report: the engine writes none."""
    from rich.console import Console

    from sparring.engine.run import run_experiment
    from sparring.models.progress_bars import no_progress_bars

    console = Console()
    with no_progress_bars(opts.quiet):  # -q: not even the model libraries' "Loading weights" bars
        result = run_experiment(opts, console=console)
    if report and result.status not in ("interrupted", "dry-run") and result.run_dir is not None:
        from sparring.analysis.report import report_run

        report_run(result.run_dir, console)
    if result.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.status == "incomplete":
        raise typer.Exit(EXIT_INCOMPLETE)


def run(
    name: str = typer.Argument(None, help="Configuration name (configs/experiments/NAME.yaml) or a YAML path."),
    num_iters: int | None = NumIters, dry_run: bool = DryRun, resume: str | None = Resume,
    retry_failed: bool = RetryFailed, shard: str | None = ShardOpt, output_dir: str | None = OutputDir,
    models_file: str | None = ModelsFile, max_live: int | None = MaxLive, workers: str | None = Workers,
    seed: int | None = Seed, run_name: str | None = RunName, quiet: bool = Quiet, no_report: bool = NoReport,
) -> None:
    """Run an experiment (debate, negotiation, any registered game); resumable."""
    from sparring.engine.plan import RunOptions

    _run(RunOptions(configuration=name, num_iters=num_iters, dry_run=dry_run, resume=resume,
                    retry_failed=retry_failed, shard=shard, output_dir=output_dir, models_file=models_file,
                    max_live=max_live, workers=_workers(workers), seed=seed, run_name=run_name, quiet=quiet),
         report=not no_report)


def merge(
    dirs: list[Path] = typer.Argument(..., help="Shard run directories of one experiment."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory of the merged run."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a non-empty output directory."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write the report of the merged run."),
) -> None:
    """Combine shard run directories into one run, each episode once."""
    from rich.console import Console

    from sparring.engine.shard import merge_runs

    manifest = merge_runs(list(dirs), output, overwrite=overwrite)
    c = manifest["counts"]
    Console(soft_wrap=True).print(f"merged {len(dirs)} run(s) into {output}: {c['done']} episodes, {c['failed']} failed "
                    f"({manifest['status']})")
    if report:
        from sparring.analysis.report import report_run

        report_run(Path(output), Console())


def report(run_dir: Path = typer.Argument(..., help="A run directory.")) -> None:
    """Write stats.json, episodes.csv, plots and report.html for a run."""
    from rich.console import Console

    from sparring.errors import SparringError

    if not (run_dir / "episodes.jsonl").is_file():
        raise SparringError(f"{run_dir} is not a run directory (no episodes.jsonl)")
    try:
        from sparring.analysis.report import write_report
    except ImportError as e:
        raise SparringError(f"the report module is unavailable: {e}") from None
    Console().print(f"report: {write_report(run_dir)}")


def register(app: typer.Typer) -> None:
    """Add `run`, `merge` and `report` to the root `sparring` app."""
    app.command("run")(run)
    app.command("merge")(merge)
    app.command("report")(report)


def script_app(family: str) -> typer.Typer:
    """The command line of scripts/run_debate.py and scripts/run_negotiation.py (`--configuration
    NAME`), built without running it (`script_main` runs it; tests/test_doc_commands.py parses the
    docs' command lines with it): the same as `sparring run`, for any game; `family` only names the
    script's usual game in --help."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command(help=f"Run a {family} experiment by configuration name; resumable with --resume.")
    def main(
        configuration: str = typer.Option(None, "--configuration", "-c", help="Configuration name or YAML path."),
        num_iters: int | None = NumIters, dry_run: bool = DryRun, resume: str | None = Resume,
        retry_failed: bool = RetryFailed, shard: str | None = ShardOpt, output_dir: str | None = OutputDir,
        models_file: str | None = ModelsFile, max_live: int | None = MaxLive, workers: str | None = Workers,
        seed: int | None = Seed, run_name: str | None = RunName, quiet: bool = Quiet, no_report: bool = NoReport,
    ) -> None:
        from sparring.engine.plan import RunOptions

        _run(RunOptions(configuration=configuration, num_iters=num_iters, dry_run=dry_run, resume=resume,
                        retry_failed=retry_failed, shard=shard, output_dir=output_dir, models_file=models_file,
                        max_live=max_live, workers=_workers(workers), seed=seed, run_name=run_name, quiet=quiet),
             report=not no_report)

    return app


def script_main(family: str, prog: str, argv: list[str] | None = None) -> None:
    """Body of scripts/run_debate.py and scripts/run_negotiation.py: runs `script_app(family)` as `prog`."""
    from pydantic import ValidationError

    from sparring.errors import SparringError

    app = script_app(family)
    debug = os.environ.get("SPARRING_DEBUG", "").strip().lower() not in ("", "0", "false", "no")
    try:
        app(args=argv, prog_name=prog, standalone_mode=True)
    except (SparringError, ValidationError) as err:
        if debug:
            raise
        from sparring.cli.common import print_error

        print_error(err)
        sys.exit(EXIT_USER_ERROR)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
