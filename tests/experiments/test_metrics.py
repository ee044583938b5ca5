"""Generic and debate metrics on hand-built records (flipped pairs, position bias, sides, quotes)."""

from __future__ import annotations

import math

import pytest

from sparring.analysis import metrics as M
from sparring.games.debate import report_stats as D
from sparring.records.reader import read_run

try:
    from .report_synth import debate_record, dond_record, quote_stats, write_run
except ImportError:
    from report_synth import debate_record, dond_record, quote_stats, write_run

AB = {"Debater_A": "alice", "Debater_B": "bob", "Judge": "judge"}


def pair(q: str, p_correct_unflipped: float, p_correct_flipped: float, seats=AB):
    """A flipped pair: unflipped, Debater_A argues the correct answer; flipped, Debater_B does."""
    return [debate_record(q, seats, p_correct_unflipped, "Debater_A", flip=False),
            debate_record(q, seats, 1.0 - p_correct_flipped, "Debater_B", flip=True)]


def test_flipped_pair_aggregated_accuracy():
    # q1: 0.9 + 0.2 = 1.1 > 1 -> correct; q2: 0.55 + 0.4 = 0.95 -> wrong; q3: 0.45 + 0.6 = 1.05 -> correct.
    recs = pair("q1", 0.9, 0.2) + pair("q2", 0.55, 0.4) + pair("q3", 0.45, 0.6)
    assert [D.p_correct(r) for r in recs] == pytest.approx([0.9, 0.2, 0.55, 0.4, 0.45, 0.6])
    pairs = D.flipped_pairs(recs)
    assert len(pairs) == 3 and all(a.flip is False and b.flip is True for a, b in pairs)
    acc = D.judge_accuracy(recs)["by_format"]["debate"]
    assert acc["n"] == 6 and acc["accuracy"] == pytest.approx(0.5)  # per-episode: 3 of 6
    assert acc["pairs"]["n"] == 2 + 1 and acc["pairs"]["accuracy"] == pytest.approx(2 / 3)
    assert acc["mean_p_correct"] == pytest.approx(3.1 / 6)
    lo, hi = acc["pairs"]["accuracy_ci"]
    assert lo < 2 / 3 < hi


def test_pair_at_exactly_one_counts_half_and_unpaired_left_out():
    recs = pair("q1", 0.7, 0.3) + [debate_record("q2", AB, 0.8, "Debater_A")]
    acc = D.judge_accuracy(recs)["overall"]
    assert acc["pairs"]["n"] == 1 and acc["pairs"]["correct"] == 0.5


def test_pairs_need_same_seats_and_repeat():
    other = {"Debater_A": "bob", "Debater_B": "alice", "Judge": "judge"}
    recs = [debate_record("q1", AB, 0.8, "Debater_A"), debate_record("q1", other, 0.8, "Debater_B", flip=True),
            debate_record("q1", AB, 0.8, "Debater_B", flip=True, repeat=1)]
    assert D.flipped_pairs(recs) == []


def test_position_bias_by_flip():
    recs = [debate_record("q1", AB, 0.8, "Debater_A"), debate_record("q2", AB, 0.7, "Debater_B"),
            debate_record("q3", AB, 0.6, "Debater_A", flip=True), debate_record("q4", AB, 0.2, "Debater_B", flip=True)]
    bias = D.position_bias(recs)["debate"]
    assert bias["first_side"] == "Debater_A"
    assert bias["p_pick_first"] == pytest.approx(0.75) and bias["n"] == 4
    assert bias["mean_prob_first"] == pytest.approx((0.8 + 0.7 + 0.6 + 0.2) / 4)
    assert bias["binomial_p"] == pytest.approx(0.625)  # 3 of 4 vs 0.5, two-sided
    assert bias["by_flip"]["False"]["p_pick_first"] == 1.0
    assert bias["by_flip"]["True"]["p_pick_first"] == 0.5


def test_judge_accuracy_per_format_judge_and_panel_votes():
    votes = {"j1": {"Debater_A": 0.9, "Debater_B": 0.1}, "j2": {"Debater_A": 0.3, "Debater_B": 0.7}}
    recs = [debate_record("q1", AB, 0.6, "Debater_A", votes=votes),
            debate_record("q1", {"Consultant": "alice", "Judge": "judge"}, 0.3, "Consultant", fmt="consultancy"),
            debate_record("q1", {"Judge": "judge"}, 0.4, "Answer_A", fmt="empty")]
    acc = D.judge_accuracy(recs)
    assert set(acc["by_format"]) == {"debate", "consultancy", "empty"}
    assert acc["by_format"]["empty"]["accuracy"] == 0.0 and acc["by_format"]["debate"]["accuracy"] == 1.0
    assert acc["by_panel_vote"]["j1"]["accuracy"] == 1.0 and acc["by_panel_vote"]["j2"]["accuracy"] == 0.0
    assert "judge · debate" in acc["by_judge"]
    fmts = D.paired_formats(recs)
    assert {(r["a"], r["b"]) for r in fmts} == {("consultancy", "debate"), ("consultancy", "empty"),
                                                ("debate", "empty")}


def test_side_split_and_paired_agents():
    recs = pair("q1", 0.8, 0.7) + pair("q2", 0.6, 0.9)  # the correct side always wins
    sides = D.side_split(recs, n_bootstrap=50)
    assert sides["agents"]["alice"]["correct"]["win_rate"] == 1.0
    assert sides["agents"]["alice"]["incorrect"]["win_rate"] == 0.0
    players = sides["ratings"]["players"]
    assert players["alice (correct)"]["rating"] > players["bob (incorrect)"]["rating"]
    (row,) = D.paired_agents(recs)
    # per question: mean over the pair of reward_alice - reward_bob
    q1 = ((0.8 - 0.2) + (0.3 - 0.7)) / 2
    q2 = ((0.6 - 0.4) + (0.1 - 0.9)) / 2
    assert (row["a"], row["b"], row["n"]) == ("alice", "bob", 2)
    assert row["mean_diff"] == pytest.approx((q1 + q2) / 2)


def test_quotes_and_lengths_by_group():
    qs = {"Debater_A": quote_stats(4, 3, 20, repaired=1), "Debater_B": quote_stats(2, 0, 0)}
    words = {"Debater_A": [100, 50], "Debater_B": [30, 10]}
    rec = debate_record("q1", AB, 0.9, "Debater_A", quotes=qs, words=words)
    out = D.quotes_and_lengths([rec])
    g = out["by_group"]
    assert g["correct"]["valid_frac"] == 0.75 and g["correct"]["quoted_words_per_speech"] == 10.0
    assert g["winner"]["mean_speech_words"] == 75.0 and g["loser"]["valid_frac"] == 0.0
    assert g["all"]["quotes"] == 6 and g["all"]["repaired_frac"] == pytest.approx(1 / 6)
    assert out["by_agent"]["bob"]["max_speech_words"] == 30
    assert out["words_by_round"] == {"1": 65.0, "2": 30.0}


def test_missing_keys_and_aborted_records_tolerated():
    rec = debate_record("q1", AB, 0.9, "Debater_A")
    for k in ("probs", "quote_stats", "speech_words", "positions", "correct_side"):
        rec.outcome.metrics.pop(k)
    failed = debate_record("q2", AB, 0.5, "Debater_A", status="failed")
    assert D.position_bias([rec, failed])["debate"]["n"] == 0
    assert D.quotes_and_lengths([rec])["by_group"] == {}
    assert D.side_split([rec])["ratings"] is None
    assert D.judge_accuracy([rec, failed])["overall"]["n"] == 1


def test_generic_scores_matchups_and_self_play():
    recs = [debate_record("q1", AB, 0.8, "Debater_A"), debate_record("q2", AB, 0.5, "Debater_A"),
            debate_record("q3", {"Debater_A": "alice", "Debater_B": "alice", "Judge": "j"}, 0.3, "Debater_A")]
    assert M.competitors(recs[0]) == ["Debater_A", "Debater_B"]  # the judge is not a competitor
    assert M.player_scores(recs[1]) == {"Debater_A": 0.5, "Debater_B": 0.5}
    agents = M.agent_summary(recs)
    assert agents["alice"]["games"] == 4 and agents["alice"]["ties"] == 1
    rows = {(r["agent_a"], r["agent_b"]): r for r in M.matchups(recs)}
    assert rows[("alice", "bob")]["a_win_rate"] == 0.75 and rows[("alice", "alice")]["self_play"]
    assert [c.a for c in M.comparisons(recs)] == ["alice", "alice"]  # self-play gives no comparison
    mat = M.win_matrix(list(rows.values()), ["alice", "bob"])
    assert mat["win_rate"] == [[None, 0.75], [0.25, None]]
    consult = debate_record("q4", {"Consultant": "c", "Judge": "j"}, 0.3, None, fmt="consultancy")
    assert M.player_scores(consult) == {"Consultant": 0.0}


def test_negotiation_rewards_give_pairwise_results():
    rec = dond_record("s1", "x", "y", take=(0, 2, 2))  # X = 8, Y = 4
    assert M.player_scores(rec) == {"Player_1": 1.0, "Player_2": 0.0}
    assert M.comparisons([rec])[0].score == 1.0


def test_load_run_skips_torn_line_and_superseded_failures(tmp_path):
    ok = debate_record("q1", AB, 0.8, "Debater_A")
    failed_then_ok = debate_record("q1", AB, 0.5, "Debater_A", status="failed")
    still_failed = debate_record("q2", AB, 0.5, "Debater_A", status="failed")
    write_run(tmp_path, [ok], [failed_then_ok, still_failed])
    with (tmp_path / "episodes.jsonl").open("a") as f:
        f.write('{"schema_version": 1, "id": "trunc')  # a torn last line after kill -9
    run = read_run(tmp_path)
    assert len(run.episodes) == 1 and [r.id for r in run.failures] == [still_failed.id]
    assert any("episodes.jsonl:2" in w for w in run.warnings)
    summary = M.failure_summary(run)
    assert summary["failed"] == 1 and summary["failed_by_type"] == {"BackendError": 1}
    assert list(summary["failed_by_reason"]) == ["BackendError: server said '…' (N)"]


def test_failure_reason_masks_values():
    assert M.failure_reason("EpisodeAbort: judge 'j1': unparseable verdict after 3 attempts") == \
        "EpisodeAbort: judge '…': unparseable verdict after N attempts"
    assert M.failure_reason(None) == "unknown"
    assert math.isnan(M.usage_summary([])["mean_duration_s"])


def test_the_game_decides_who_competes_and_whether_outcomes_rank(make_config, runs_dir, monkeypatch):
    """Evaluator seats (the toy game's judge) never count as competitors, and a game that declares
    `ranking = "none"` (cooperative) gets no win/loss comparisons."""
    from toy_game import ToyGame

    from sparring.engine.run import RunOptions, run_experiment
    from sparring.records.reader import iter_records

    res = run_experiment(RunOptions(configuration=str(make_config()), output_dir=str(runs_dir), quiet=True))
    records = [r for r in iter_records(res.run_dir) if r.outcome]
    assert all("judge" not in M.competitors(r) for r in records) and M.comparisons(records)
    monkeypatch.setattr(ToyGame, "ranking", "none")
    assert M.comparisons(records) == [] and M.matchups(records) == []
