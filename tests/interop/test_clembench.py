"""clembench's recorded games in and out: a tree of taboo and wordle from two model pairs (both
`players` forms), wordle_withcritic and a game sparring does not implement imports without loss;
broken files are skipped with their reason, nothing is half-written; the imported run reports,
browses with each player's view, and exports Playpen's SFT rows (both perspectives, with the meta
fields); the export in clembench's layout imports back to the same run, message for message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparring.cli.root import app
from sparring.errors import SparringError
from sparring.records.clembench.export import export_run
from sparring.records.clembench.reader import import_tree
from sparring.records.reader import iter_records

from .clembench_tree import TABOO_1, TABOO_2, build


@pytest.fixture()
def imported(tmp_path):
    tree = build(tmp_path / "clembench-runs")
    result = import_tree(tree, tmp_path / "runs" / "clem")
    return tree, result


def by_path(run_dir: Path) -> dict[str, object]:
    return {r.instance["source"]["path"]: r for r in iter_records(run_dir)}


def test_a_tree_imports_every_game_and_skips_broken_files_with_their_reason(imported):
    tree, result = imported
    assert result.imported == 6
    assert result.games == {"taboo": 3, "wordle": 1, "wordle_withcritic": 1, "clembench": 1}
    reasons = dict(result.skipped)
    base = "modelA-t0.0--modelA-t0.0/taboo/0_high_en"
    assert "not valid JSON" in reasons[f"{base}/episode_2"]
    assert "scores.json: not valid JSON" in reasons[f"{base}/episode_3"]
    assert "`turns` is not a list of rounds" in reasons[f"{base}/episode_4"]
    assert "not UTF-8" in reasons[f"{base}/episode_5"]
    failures = list(iter_records(result.run_dir, failures=True))
    assert sorted(f.error.split(":")[0] for f in failures) == sorted(reasons)  # the run keeps every reason


def test_a_taboo_episode_keeps_what_each_player_saw_its_models_and_its_scores(imported):
    _, result = imported
    records = by_path(result.run_dir)
    won = records["modelA-t0.0--modelA-t0.0/taboo/0_high_en/episode_0"]
    assert won.game == "taboo" and set(won.seats) == {"Describer", "Guesser"}
    assert won.seats["Describer"].model == "modelA" and won.seats["Guesser"].role == "guesser"
    describer = [c for c in won.calls if c.player == "Describer"]
    assert [m.content for m in describer[1].messages] == [TABOO_1, "CLUE: Time of year with the shortest days.",
                                                          "GUESS: autumn"]
    assert [m.role for m in describer[1].messages] == ["user", "assistant", "user"]
    assert describer[1].completions[0].text == "CLUE: It comes after autumn."
    guesser = [c for c in won.calls if c.player == "Guesser"]
    assert guesser[0].messages[0].content == TABOO_2 and guesser[1].completions[0].text == "GUESS: winter"
    assert won.outcome.metrics["quality_score"] == 50.0 and won.outcome.metrics["success"] is True
    assert won.state["clembench"]["turn_scores"]["1"]["Request Count"] == 2
    assert len(won.events) == 11 and won.events[2].tag == "valid response" and won.events[2].visible_to == []
    lost = records["modelA-t0.0--modelA-t0.0/taboo/0_high_en/episode_1"]
    assert lost.status == "aborted" and lost.outcome.metrics["aborted"] is True
    assert lost.outcome.metrics["quality_score"] is None  # clembench's NaN Main Score of an aborted game
    pair = records["modelB-t0.0--modelC-t0.0/taboo/1_medium_en/episode_0"]  # the newer `players` form
    assert (pair.seats["Describer"].model, pair.seats["Guesser"].model) == ("modelB", "modelC")
    other = records["modelA-t0.0--modelA-t0.0/referencegame/0_line_grids_rows/episode_0"]
    assert other.game == "clembench" and set(other.seats) == {"Player 1", "Player 2"}
    assert other.seats["Player 1"].role == "instruction giver"
    assert other.instance["source"]["game"] == "referencegame"


def test_nothing_is_half_written(tmp_path, monkeypatch):
    from sparring.records.clembench import reader as clembench

    tree = build(tmp_path / "tree", broken=False)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    with pytest.raises(SparringError, match="exists and is not empty"):
        import_tree(tree, tmp_path / "taken")
    calls = {"n": 0}
    real = clembench.episode_record

    def crash(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(clembench, "episode_record", crash)
    with pytest.raises(RuntimeError):
        import_tree(tree, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.import-*"))
    with pytest.raises(SparringError, match="no clembench episodes"):
        import_tree(tmp_path / "taken", tmp_path / "empty")


def test_the_imported_run_reports_browses_and_exports_playpens_rows(imported, tmp_path):
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    _, result = imported
    runner = CliRunner()
    report = runner.invoke(app, ["report", str(result.run_dir)])
    assert report.exit_code == 0, report.output
    assert (result.run_dir / "report" / "report.html").is_file()
    client = TestClient(create_app(result.run_dir.parent), base_url="http://127.0.0.1")
    assert client.get("/runs/clem").status_code == 200
    records = by_path(result.run_dir)
    for path, seats in [("modelA-t0.0--modelA-t0.0/taboo/0_high_en/episode_0", ("Describer", "Guesser")),
                        ("modelA-t0.0--modelA-t0.0/referencegame/0_line_grids_rows/episode_0", ("Player 1", "Player 2"))]:
        eid = records[path].id
        for seat in seats:
            page = client.get(f"/runs/clem/episodes/{eid}", params={"view": seat})
            assert page.status_code == 200, page.text[:500]
        describer_view = client.get(f"/runs/clem/episodes/{eid}", params={"view": seats[0]}).text
        assert ("winter" in describer_view) == ("taboo" in path)  # the describer's own prompt
    out = runner.invoke(app, ["export", "sft", str(result.run_dir), "-o", str(tmp_path / "sft")])
    assert out.exit_code == 0, out.output
    rows = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    taboo_rows = [r for r in rows if r["meta"]["game"] == "taboo"]
    assert {r["meta"]["seat"] for r in taboo_rows} == {"Describer", "Guesser"}  # both perspectives
    row = next(r for r in taboo_rows if r["meta"]["seat"] == "Describer" and r["meta"]["model"] == "modelB")
    for key in ("game", "experiment", "episode_id", "seat", "role", "model", "outcome", "reward", "quality_score",
                "source"):
        assert key in row["meta"], key
    assert row["meta"]["source"]["experiment"] == "medium_en" and row["meta"]["source"]["episode"] == "episode_0"
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "user", "assistant"]


def test_the_export_imports_back_to_the_same_run_message_for_message(imported, tmp_path):
    tree, result = imported
    counts = export_run(result.run_dir, tmp_path / "export")
    assert sum(counts.values()) == 6
    for rel in ("modelA-t0.0--modelA-t0.0/taboo/0_high_en/episode_0",
                "modelB-t0.0--modelC-t0.0/taboo/1_medium_en/episode_0",
                "modelA-t0.0--modelA-t0.0/referencegame/0_line_grids_rows/episode_0"):
        for name in ("interactions.json", "scores.json"):
            original = json.loads((tree / rel / name).read_text())
            written = json.loads((tmp_path / "export" / rel / name).read_text())
            assert json.dumps(written, sort_keys=True) == json.dumps(original, sort_keys=True), (rel, name)
    again = import_tree(tmp_path / "export", tmp_path / "runs" / "again", name="clem")
    first, second = by_path(result.run_dir), by_path(again.run_dir)
    assert set(first) == set(second)
    for path, rec in first.items():
        other = second[path]
        assert rec.model_dump(exclude={"instance"}) == other.model_dump(exclude={"instance"}), path


@pytest.mark.slow
def test_a_run_sparring_played_exports_to_clembench_and_back(tmp_path):
    """A scripted taboo run: its calls (rules, prompts, replies, rejected replies) survive the
    round trip through clembench's layout."""
    out = CliRunner().invoke(app, ["run", "scripted-taboo", "-o", str(tmp_path / "runs"), "--run-name", "tb",
                                   "-n", "3", "-q"])
    assert out.exit_code == 0, out.output
    export_run(tmp_path / "runs" / "tb", tmp_path / "clem")
    again = import_tree(tmp_path / "clem", tmp_path / "back")
    played = sorted(iter_records(tmp_path / "runs" / "tb"), key=lambda r: r.instance_id)
    back = {r.instance_id: r for r in iter_records(again.run_dir)}
    assert len(back) == len(played)
    for rec, other in zip(played, sorted(back.values(), key=lambda r: r.instance_id), strict=True):
        mine = [(c.player, [m.model_dump() for m in c.messages], c.completions[c.chosen or 0].text, c.rejected)
                for c in rec.calls if c.op == "generate" and c.completions]
        theirs = [(c.player, [m.model_dump() for m in c.messages], c.completions[0].text, c.rejected)
                  for c in other.calls]
        assert mine == theirs
        assert other.outcome.metrics["success"] == bool(rec.outcome.metrics.get("success"))
