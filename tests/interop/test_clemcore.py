"""clemcore's own `clem eval` (clemcore 3.7.2, in its own virtual environment: it pins datasets<5,
which sparring cannot share) is the outside check of clembench interop:

(a) it scores a recorded clembench sample (real v2.0 records and the test tree);
(b) the export of the import of that sample gives the identical results.csv (no model pair gains
    a row, no episode gains or loses a score);
(c) runs sparring played (taboo, wordle, wordle_withcritic) export with scores in clembench's
    ranges, and `clem transcribe` reads every exported interactions.json.

The virtual environment: $SPARRING_CLEMCORE_VENV, else `.ci-clemcore-venv` at the repository root
(`.ci/run` creates it and sets the variable). Without one the test skips, saying how to create it;
with the variable set but no `clem` in it the test fails, so CI cannot skip it silently.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparring.cli.root import app
from sparring.records.clembench.export import export_run
from sparring.records.clembench.reader import import_tree
from sparring.records.reader import iter_records

from .clembench_tree import build

pytestmark = pytest.mark.slow

ENV = "SPARRING_CLEMCORE_VENV"
VERSION = "3.7.2"
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).parent / "data" / "clembench-v2.0"


@pytest.fixture(scope="module")
def clem() -> Path:
    given = os.environ.get(ENV)
    venv = Path(given) if given else ROOT / ".ci-clemcore-venv"
    exe = venv / "bin" / "clem"
    if not exe.is_file():
        if given:
            pytest.fail(f"{ENV}={given}: no bin/clem there; create it with `python3 -m venv {given} && "
                        f"{given}/bin/pip install clemcore=={VERSION}`")
        pytest.skip(f"clemcore {VERSION} is not installed in its own virtual environment: run `python3 -m venv "
                    f".ci-clemcore-venv && .ci-clemcore-venv/bin/pip install clemcore=={VERSION}` or set {ENV} "
                    "(.ci/run does both)")
    installed = sorted(p.name for p in venv.glob("lib/python*/site-packages/clemcore-*.dist-info"))
    assert installed == [f"clemcore-{VERSION}.dist-info"], f"{venv} holds {installed or 'no clemcore'}, not {VERSION}"
    return exe


def run_clem(clem: Path, *jobs: tuple[str, Path]) -> None:
    """`clem COMMAND -r RESULTS` for each job, side by side (each one spends seconds importing clemcore)."""
    procs = [(results, subprocess.Popen([str(clem), command, "-r", str(results)], cwd=results.parent,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for command, results in jobs]
    for results, proc in procs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"clem on {results}: {output[-3000:]}"


def results(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_clem_eval_gives_the_same_results_on_a_sample_and_on_the_export_of_its_import(clem, tmp_path):
    original, export = tmp_path / "a" / "original", tmp_path / "b" / "export"  # clem writes its log beside
    shutil.copytree(SAMPLE, original, ignore=shutil.ignore_patterns("*.md"))
    build(original, broken=False)
    export_run(import_tree(original, tmp_path / "run").run_dir, export)
    run_clem(clem, ("eval", original), ("eval", export))
    assert (export / "results.csv").read_text() == (original / "results.csv").read_text()
    rows = {r[""]: r for r in results(original)}
    assert set(rows) == {"Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0", "modelA-t0.0--modelA-t0.0",
                         "modelB-t0.0--modelC-t0.0"}  # phi-4's episode has no scores.json: no row
    assert rows["Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0"]["wordle, Quality Score"] == "0.0"
    assert rows["modelA-t0.0--modelA-t0.0"]["-, clemscore"] == "54.69"


def test_clem_eval_scores_runs_sparring_played_within_clembenchs_ranges(clem, tmp_path):
    out = tmp_path / "clem" / "results"
    played = {}
    for config, n in [("scripted-taboo", None), ("scripted-wordle", 10), ("scripted-wordle-withcritic", 3)]:
        limit = ["-n", str(n)] if n else []
        done = CliRunner().invoke(app, ["run", config, "-o", str(tmp_path / "runs"), "--run-name", config, *limit,
                                        "-q", "--no-report"])
        assert done.exit_code in (0, 3), done.output
        export_run(tmp_path / "runs" / config, out)
        played[config] = list(iter_records(tmp_path / "runs" / config))
    run_clem(clem, ("eval", out), ("transcribe", out))
    rows = results(out)
    for game in ("taboo", "wordle", "wordle_withcritic"):
        scored = [r for r in rows if r[f"{game}, % Played"]]
        assert scored, f"clem eval gave {game} no row"
        for row in scored:
            assert 0 <= float(row[f"{game}, % Played"]) <= 100
            assert 0 <= float(row[f"{game}, Quality Score"]) <= 100
            assert 0 <= float(row["-, clemscore"]) <= 100
    # the fraction played is clembench's: every episode not aborted (a taboo word loses, it does not abort)
    taboo = next(r for r in rows if r["taboo, % Played"])
    aborted = sum(1 for r in played["scripted-taboo"]
                  if r.outcome.metrics["end"] == "aborted" and r.outcome.metrics["abort_kind"] != "taboo_word")
    assert float(taboo["taboo, % Played"]) == round(100 * (1 - aborted / len(played["scripted-taboo"])), 2)
    with (out / "raw.csv").open(newline="") as f:
        raw = list(csv.DictReader(f))
    episodes = {(r["model"], r["game"], r["experiment"], r["episode"]) for r in raw}
    assert len(episodes) == sum(len(v) for v in played.values())  # every played episode has its scores
    for r in raw:
        if r["metric"] in ("Aborted", "Success", "Lose", "Played"):
            assert float(r["value"]) in (0, 1), r
        if r["metric"] == "Request Success Ratio" and r["value"]:
            assert 0 <= float(r["value"]) <= 1, r
    assert len(list(out.rglob("transcript.html"))) == len(list(out.rglob("interactions.json")))
