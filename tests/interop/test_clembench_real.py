"""Real clembench v2.0 records (tests/interop/data/clembench-v2.0, copied from clembench-runs):
every wordle-family episode maps to sparring's own game although its `players` name a programmatic
or idle Player 2, the models come from v2.0's "Role (model)" form, and the export writes back
exactly the files each episode had (no scores.json where there was none)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparring.records.clembench.export import export_run
from sparring.records.clembench.reader import import_tree
from sparring.records.reader import iter_records

SAMPLE = Path(__file__).parent / "data" / "clembench-v2.0"
LLAMA = "Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0"


@pytest.fixture()
def imported(tmp_path):
    return import_tree(SAMPLE, tmp_path / "runs" / "v2")


def by_path(run_dir: Path) -> dict[str, object]:
    return {r.instance["source"]["path"]: r for r in iter_records(run_dir)}


def test_every_wordle_game_of_v2_maps_to_sparrings_own_game(imported):
    assert imported.skipped == []
    assert imported.games == {"wordle": 3, "wordle_withcritic": 1, "taboo": 1}
    records = by_path(imported.run_dir)
    lost = records[f"{LLAMA}/wordle/0_high_frequency_words_no_clue_no_critic/episode_1"]
    assert lost.game == "wordle" and set(lost.seats) == {"Guesser"}  # "Player B ... (Programmatic)" is no seat
    assert lost.seats["Guesser"].model == "Llama-3.3-70B-Instruct"  # from "Word Guesser (Llama-3.3-70B-Instruct)"
    assert lost.outcome.metrics["quality_score"] == 0.0 and lost.outcome.metrics["lose"] is True
    assert [c.player for c in lost.calls] == ["Guesser"] * 6
    assert [m.role for m in lost.calls[1].messages] == ["user", "assistant", "user"]
    clue = records[f"{LLAMA}/wordle_withclue/1_medium_frequency_words_clue_no_critic/episode_5"]
    assert clue.game == "wordle" and set(clue.seats) == {"Guesser"}  # its named critic never plays
    assert clue.instance["source"]["game"] == "wordle_withclue"
    assert clue.status == "aborted" and clue.outcome.metrics["quality_score"] is None
    critic = records[f"{LLAMA}/wordle_withcritic/0_high_frequency_words_clue_with_critic/episode_2"]
    assert critic.game == "wordle_withcritic" and set(critic.seats) == {"Guesser", "Critic"}
    assert critic.outcome.metrics == {}  # no scores.json: no scores
    phi = records["phi-4-t0.0--phi-4-t0.0/wordle/0_high_frequency_words_no_clue_no_critic/episode_2"]
    assert phi.seats["Guesser"].model == "phi-4"
    taboo = records[f"{LLAMA}/taboo/0_high_en/episode_14"]
    assert taboo.game == "taboo" and taboo.seats["Describer"].model == "Llama-3.3-70B-Instruct"
    assert taboo.instance["clembench_instance"]["target_word"] == "council"


def test_a_player_outside_the_mapped_seats_who_plays_keeps_the_transcript_game(tmp_path):
    """A wordle variant whose Player 2 sends and receives messages is no sparring wordle."""
    folder = tmp_path / "tree" / "m--m" / "wordle" / "0_x" / "episode_0"
    folder.mkdir(parents=True)
    turns = [[{"from": "GM", "to": "Player 1", "action": {"type": "send message", "content": "guess"}},
              {"from": "Player 1", "to": "GM", "action": {"type": "get message", "content": "guess: crane"}},
              {"from": "GM", "to": "Player 2", "action": {"type": "send message", "content": "crane?"}},
              {"from": "Player 2", "to": "GM", "action": {"type": "get message", "content": "agree"}}]]
    players = {"GM": "Game master for wordle", "Player 1": "Word Guesser (m)", "Player 2": "Word Guesser Critic (m)"}
    (folder / "interactions.json").write_text(json.dumps({"players": players, "turns": turns}))
    result = import_tree(tmp_path / "tree", tmp_path / "run")
    assert result.games == {"clembench": 1}
    record = next(iter_records(result.run_dir))
    assert set(record.seats) == {"Player 1", "Player 2"} and record.seats["Player 2"].model == "m"


def test_the_export_writes_back_exactly_the_files_each_episode_had(imported, tmp_path):
    out = tmp_path / "export"
    export_run(imported.run_dir, out)
    originals = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*.json"))
    written = sorted(p.relative_to(out) for p in out.rglob("*.json"))
    assert written == originals  # no scores.json where the episode had none, instance.json where it had one
    for rel in originals:
        a = json.loads((SAMPLE / rel).read_text(encoding="utf-8"))
        b = json.loads((out / rel).read_text(encoding="utf-8"))
        assert json.dumps(b, sort_keys=True) == json.dumps(a, sort_keys=True), rel  # NaN Main Scores too
    again = import_tree(out, tmp_path / "runs" / "again", name="v2")
    first, second = by_path(imported.run_dir), by_path(again.run_dir)
    assert set(first) == set(second)
    for path, rec in first.items():
        assert rec.model_dump(exclude={"instance"}) == second[path].model_dump(exclude={"instance"}), path


def test_a_run_imported_before_the_players_entry_was_kept_still_exports(imported, tmp_path):
    """Runs imported by an earlier version hold no `players_raw` / `has_scores`: the export
    rebuilds `players` and leaves out scores.json where the importer noted there was none."""
    run = tmp_path / "old"
    shutil.copytree(imported.run_dir, run)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    old = []
    for line in lines:
        rec = json.loads(line)
        rec["state"]["clembench"].pop("players_raw")
        rec["state"]["clembench"].pop("has_scores")
        old.append(json.dumps(rec))
    (run / "episodes.jsonl").write_text("\n".join(old) + "\n")
    out = tmp_path / "export"
    export_run(run, out)
    assert not (out / f"{LLAMA}/taboo/0_high_en/episode_14/scores.json").exists()
    assert (out / f"{LLAMA}/wordle/0_high_frequency_words_no_clue_no_critic/episode_1/scores.json").is_file()
    players = json.loads((out / f"{LLAMA}/taboo/0_high_en/episode_14/interactions.json").read_text())["players"]
    assert players["Player 1"] == "WordDescriber, Llama-3.3-70B-Instruct"


def test_the_imported_sample_reports_and_browses_with_each_players_view(imported):
    from fastapi.testclient import TestClient

    from sparring.analysis.report import write_report
    from sparring.web.app import create_app

    assert write_report(imported.run_dir).is_file()
    client = TestClient(create_app(imported.run_dir.parent), base_url="http://127.0.0.1")
    for record in iter_records(imported.run_dir):
        for seat in record.seats:
            page = client.get(f"/runs/v2/episodes/{record.id}", params={"view": seat})
            assert page.status_code == 200, (record.instance_id, seat, page.text[:300])
