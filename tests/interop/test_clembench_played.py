"""Runs sparring played, out in clembench's layout: taboo, wordle and wordle_withcritic export with
the scores clembench's own scorers give them (Main Score 0 for a lost game, NaN only for an aborted
one, clembench's key names), in clembench's rounds, each player's messages one growing history
(a rejected reply and its correction stay in it), and import back as the same games."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparring.cli.root import app
from sparring.gameapi.game import Outcome
from sparring.records.clembench.export import export_run
from sparring.records.clembench.reader import import_tree
from sparring.records.clembench.scores import played_scores
from sparring.records.reader import iter_records
from sparring.records.record import EpisodeRecord, SeatRecord

WORDLE_KEYS = ["Aborted", "Lose", "Success", "Request Count", "Parsed Request Count", "Violated Request Count",
               "Request Success Ratio", "Main Score", "Guess Repetitions"]
TABOO_KEYS = ["Violated Request Count", "Parsed Request Count", "Request Count", "Request Success Ratio", "Aborted",
              "Success", "Lose", "Main Score", "Repetition-Guesser", "Repetition-Describer"]


def play(tmp: Path, config: str, n: int | None) -> Path:
    limit = ["-n", str(n)] if n else []
    out = CliRunner().invoke(app, ["run", config, "-o", str(tmp / "runs"), "--run-name", config, *limit, "-q",
                                   "--no-report"])
    assert out.exit_code in (0, 3), out.output
    return tmp / "runs" / config


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("played")
    runs = {game: play(tmp, config, n) for game, config, n in
            [("wordle", "scripted-wordle", 10), ("wordle_withcritic", "scripted-wordle-withcritic", 3),
             ("taboo", "scripted-taboo", None)]}  # all 32 taboo words: wins, losses, a taboo word
    out = tmp / "clem"
    for run in runs.values():
        export_run(run, out)
    return runs, out


def exported(out: Path) -> dict[str, tuple[dict, dict | None, Path]]:
    """sparring episode id -> (interactions, scores, folder) of an export."""
    found = {}
    for f in out.rglob("interactions.json"):
        interactions = json.loads(f.read_text())
        scores = json.loads((f.parent / "scores.json").read_text()) if (f.parent / "scores.json").is_file() else None
        found[interactions["meta"]["sparring_episode"]] = (interactions, scores, f.parent)
    return found


def test_every_played_episode_exports_with_clembench_scores(played):
    runs, out = played
    files = exported(out)
    for game, run in runs.items():
        for record in iter_records(run):
            interactions, scores, folder = files[record.id]
            assert folder.parent.parent.name == game and (folder / "instance.json").is_file()
            assert (folder.parent / "experiment.json").is_file()
            assert scores is not None, (game, record.id)
            episode, end = scores["episode scores"], record.outcome.metrics["end"]
            keys = TABOO_KEYS if game == "taboo" else WORDLE_KEYS
            assert list(episode)[: len(keys)] == keys
            assert episode["Aborted"] + episode["Lose"] + episode["Success"] == 1
            rounds = len(interactions["turns"])
            if game == "taboo":
                assert episode["Request Count"] == rounds  # clembench's taboo scorer: one request a round
                main = {"success": 100 / rounds, "failure": 0}.get(end, 0 if record.outcome.metrics["abort_kind"]
                                                                    == "taboo_word" else math.nan)
            elif end == "aborted":
                main = math.nan
            elif end == "loss":
                main = 0  # a lost wordle scores 0, not NaN
            elif game == "wordle":
                main = {1: 100, 2: 100, 3: 100, 4: 50, 5: 30, 6: 20}[rounds]
            else:
                main = round(100 / rounds, 2)
            assert (math.isnan(main) and math.isnan(episode["Main Score"])) or episode["Main Score"] == main, \
                (game, end, rounds, episode)
            if game != "taboo":
                calls = [c for c in record.calls if c.op == "generate" and c.completions]
                assert episode["Request Count"] == len(calls)
                assert episode["Violated Request Count"] == sum(c.rejected for c in calls)
                assert rounds == max(1, len(record.outcome.metrics["guesses"]) + (end == "aborted"))


def test_the_scores_cover_wins_losses_and_aborts(played):
    _, out = played
    ends = {(i["meta"]["game_name"], s["episode scores"]["Aborted"], s["episode scores"]["Lose"])
            for i, s, _ in exported(out).values() if s}
    assert {("wordle", 0, 0), ("wordle", 0, 1), ("wordle", 1, 0), ("wordle_withcritic", 0, 0),
            ("taboo", 0, 0), ("taboo", 0, 1)} <= ends


def test_a_retry_stays_in_the_players_growing_history(played):
    """clembench's history keeps every reply and correction, and that is what the export writes;
    sparring's conversation view (the default) shows the guesser the same."""
    runs, out = played
    files = exported(out)
    record = next(r for r in iter_records(runs["wordle"]) if sum(c.rejected for c in r.calls) >= 2)
    interactions = files[record.id][0]
    said = [a["action"] for r in interactions["turns"] for a in r if a["from"] == "Player 1"]
    calls = [c for c in record.calls if c.op == "generate" and c.completions]
    assert [a["content"] for a in said] == [c.completions[0].text for c in calls]
    assert [a["label"] == "rejected" for a in said] == [c.rejected for c in calls]
    again = import_tree(out, out.parent / "back")
    back = next(r for r in iter_records(again.run_dir) if r.state["clembench"]["meta"]["sparring_episode"] == record.id)
    last = back.calls[-1].messages
    shown = [m.content for m in calls[-1].messages if m.role == "assistant"]
    assert shown == [c.completions[0].text for c in calls[:-1]]  # the earlier bad replies are still there
    assert last[-1].content == calls[-1].messages[-1].content  # and the newest correction comes last
    assert [m.content for m in last if m.role == "assistant"] == [c.completions[0].text for c in calls[:-1]]


def test_the_export_imports_back_as_the_same_games(played):
    runs, out = played
    again = import_tree(out, out.parent / "again")
    assert again.skipped == []
    back = {r.state["clembench"]["meta"]["sparring_episode"]: r for r in iter_records(again.run_dir)}
    for game, run in runs.items():
        for record in iter_records(run):
            other = back[record.id]
            assert other.game == game and set(other.seats) == set(record.seats)
            mine = [(c.player, c.completions[0].text, c.rejected) for c in record.calls
                    if c.op == "generate" and c.completions]
            assert mine == [(c.player, c.completions[0].text, c.rejected) for c in other.calls]
            if not any(c.rejected for c in record.calls):  # one growing history: message for message
                assert [c.messages for c in record.calls if c.completions] == [c.messages for c in other.calls]


def _taboo_record(end: str, abort_kind: str | None, guesses: list[str]) -> EpisodeRecord:
    seats = {s: SeatRecord(agent="m", model="m", role=s.lower()) for s in ("Describer", "Guesser")}
    return EpisodeRecord(id="x", experiment="e", game="taboo", instance_id="i", seats=seats, seed=0,
                         status="aborted" if end == "aborted" else "complete",
                         outcome=Outcome(metrics={"end": end, "abort_kind": abort_kind, "guesses": guesses,
                                                  "clues": ["a", "b"]}))


def test_taboo_scores_a_malformed_reply_as_aborted_and_a_taboo_word_as_lost():
    rounds = {"turns": [[], []]}
    malformed = played_scores(_taboo_record("aborted", "malformed_guess", ["tree"]), rounds)
    assert malformed is not None
    episode, turn = malformed["episode scores"], malformed["turn scores"]
    assert (episode["Aborted"], episode["Lose"], episode["Success"]) == (1, 0, 0) and math.isnan(episode["Main Score"])
    assert turn["1"]["Violated Request Count"] == 1 and turn["0"]["Violated Request Count"] == 0
    assert episode["Request Success Ratio"] == 0.5
    lost = played_scores(_taboo_record("aborted", "taboo_word", []), rounds)
    assert lost is not None and (lost["episode scores"]["Lose"], lost["episode scores"]["Main Score"]) == (1, 0)
    repeated = played_scores(_taboo_record("failure", None, ["tree", "tree", "bush"]), {"turns": [[], [], []]})
    assert repeated is not None and repeated["episode scores"]["Repetition-Guesser"] == 1
    assert played_scores(_taboo_record("unfinished", None, []), rounds) is None  # clembench gives it no score
