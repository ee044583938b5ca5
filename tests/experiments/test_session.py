"""The run session: load, schedule, play, close as separate steps with explicit options; the
engine writes no report (the CLI asks analysis for it after the run)."""

from __future__ import annotations

from rich.console import Console
from typer.testing import CliRunner

from sparring.engine.run import RunOptions, RunSession, run_experiment
from sparring.records.reader import iter_records, read_manifest

QUIET = Console(quiet=True)


def test_the_four_steps_by_hand(make_config, runs_dir):
    opts = RunOptions(configuration=str(make_config()), output_dir=str(runs_dir), run_name="s", max_live=2,
                      num_iters=2, quiet=True)
    with RunSession(opts, console=QUIET) as session:
        plan = session.load()
        assert plan.exp.config.run.max_live == 2 and len(plan.instances) == 2  # explicit options applied
        total = session.schedule()
        assert read_manifest(plan.run_dir)["status"] == "running" and total["all"] == len(session.first) > 0
        assert session.play(total) == "complete"
    assert read_manifest(plan.run_dir)["status"] == "complete"  # closed by the context manager
    assert len(list(iter_records(plan.run_dir))) == total["all"]
    assert not (plan.run_dir / "report").exists()  # the engine writes no report


def test_run_experiment_writes_no_report_and_the_cli_asks_for_one(make_config, runs_dir):
    path = make_config()
    res = run_experiment(RunOptions(configuration=str(path), output_dir=str(runs_dir), run_name="a",
                                    num_iters=1, quiet=True), console=QUIET)
    assert res.status == "complete" and not (res.run_dir / "report").exists()
    from sparring.cli.root import app

    out = CliRunner().invoke(app, ["run", str(path), "-o", str(runs_dir), "--run-name", "b", "-n", "1", "--quiet"])
    assert out.exit_code == 0, out.output
    assert (runs_dir / "b" / "report" / "stats.json").is_file()
    out = CliRunner().invoke(app, ["run", str(path), "-o", str(runs_dir), "--run-name", "c", "-n", "1", "--quiet",
                                   "--no-report"])
    assert out.exit_code == 0 and not (runs_dir / "c" / "report").exists()
