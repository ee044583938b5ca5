"""Run directories written before the restructuring (sparring at e7793db) still resume and report.

The fixtures are the first episodes of two interrupted runs made by that version (scripted DoND and
scripted debate). Resuming them with today's code must keep their lines untouched and play the
missing episodes exactly as that version played them (scripted models are deterministic).
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparring.cli import app
from sparring.records.reader import iter_records, read_manifest

FIXTURES = Path(__file__).parent.parent / "data" / "old_runs"


@pytest.mark.parametrize("name", ["old-dond", "old-debate"])
def test_an_old_interrupted_run_resumes_and_reports(tmp_path, name):
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    models = Path(str(resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"))
    config = run / "config.yaml"
    config.write_text(config.read_text().replace("MODELS_FILE", str(models)))
    expected = json.loads((run / "expected.json").read_text())
    kept = (run / "episodes.jsonl").read_text()

    result = CliRunner().invoke(app, ["run", "--resume", str(run), "--quiet", "--no-report"])
    assert result.exit_code == 0, result.output
    assert (run / "episodes.jsonl").read_text().startswith(kept)  # stored lines are never rewritten
    records = {r.id: r for r in iter_records(run)}
    assert set(records) == set(expected)
    for rid, want in expected.items():
        rec = records[rid]
        assert rec.status == want["status"]
        assert (rec.outcome.rewards if rec.outcome else None) == want["rewards"]
        assert [e.content for e in rec.events] == want["events"]
    assert read_manifest(run)["status"] == "complete"

    report = CliRunner().invoke(app, ["report", str(run)])
    assert report.exit_code == 0, report.output
    assert (run / "report" / "report.html").is_file()
