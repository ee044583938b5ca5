"""write_report end to end on synthetic runs: files, stats.json values, csv rows, embedded PNGs,
and the awkward runs (no episodes, only failures, self-play, no judge, mixed formats)."""

from __future__ import annotations

import csv
import json
import random
import re

import pytest

from sparring.analysis.report import write_report
from sparring.analysis.report_sections import ReportSection, register_report_section
from sparring.games.debate.report_stats import USED_KEYS
from sparring.records.reader import read_run
from sparring.records.record import EpisodeRecord, SeatRecord

try:
    from .report_synth import debate_record, dond_record, write_run
except ImportError:
    from report_synth import debate_record, dond_record, write_run

AGENTS = ["alice", "bob", "carol"]


def tournament(seed: int = 0) -> list[EpisodeRecord]:
    """Round robin with flips; alice is the strongest debater, the judge favours Debater_A."""
    rng = random.Random(seed)
    strength = {"alice": 0.25, "bob": 0.0, "carol": -0.1}
    recs = []
    for q in range(6):
        for a, b in [("alice", "bob"), ("bob", "carol"), ("alice", "carol")]:
            for flip in (False, True):
                correct = "Debater_B" if flip else "Debater_A"
                p = 0.5 + strength[a] - strength[b] + 0.05 + rng.uniform(-0.3, 0.3)
                recs.append(debate_record(f"q{q}", {"Debater_A": a, "Debater_B": b, "Judge": "judge"},
                                          min(0.99, max(0.01, p)), correct, flip=flip))
    return recs


def read_csv(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_report_end_to_end(tmp_path):
    eps = tournament()
    fail = debate_record("q9", {"Debater_A": "alice", "Debater_B": "bob", "Judge": "judge"}, 0.5, "Debater_A",
                         status="failed")
    run = write_run(tmp_path / "run", eps, [fail])
    html_path = write_report(run, n_bootstrap=200)
    out = run / "report"
    assert html_path == out / "report.html"
    stats = json.loads((out / "stats.json").read_text())
    assert {"run", "counts", "agents", "seats", "matchups", "win_matrix", "ratings", "failures", "usage",
            "sections", "warnings", "plots"} <= set(stats)
    assert stats["counts"] == {"episodes": 37, "complete": 36, "aborted": 0, "failed": 1, "rated": 36}
    assert stats["failures"]["failed_by_type"] == {"BackendError": 1}
    assert set(stats["agents"]) == set(AGENTS) and stats["agents"]["alice"]["games"] == 24
    players = stats["ratings"]["players"]
    assert list(players)[0] == "alice" and players["alice"]["ci_low"] <= players["alice"]["rating"]
    assert stats["ratings"]["n_bootstrap"] == 200
    deb = stats["sections"]["debate"]
    acc = deb["judge_accuracy"]["by_format"]["debate"]
    assert acc["n"] == 36 and acc["pairs"]["n"] == 18
    assert deb["position_bias"]["debate"]["n"] == 36
    assert deb["calibration"]["overall"]["n"] == 36 and deb["calibration"]["overall"]["ece"] is not None
    assert {r["a"] for r in deb["paired_agents"]} == {"alice", "bob"}
    assert "alice (correct)" in deb["sides"]["ratings"]["players"]

    rows = read_csv(out / "episodes.csv")
    assert len(rows) == 37
    assert {"id", "status", "agent_Debater_A", "reward_Debater_A", "p_correct", "judge_correct", "format",
            "prob_Debater_A", "quotes_Debater_A"} <= set(rows[0])
    assert sum(r["status"] == "failed" for r in rows) == 1

    html = html_path.read_text()
    assert html.count("data:image/png;base64,") >= 6
    assert not re.search(r'src="(?!data:)', html)  # self-contained: no external assets
    assert not re.search(r'href="(?!data:|\.\./\?)', html)  # links: only to the run's episodes (sparring serve)
    assert "Judge accuracy" in html and "Position bias" in html and "No complete episodes" not in html
    for name in ("ratings", "win_matrix", "debate_calibration", "debate_position_bias", "debate_quotes"):
        png = out / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_is_deterministic_per_seed(tmp_path):
    run = write_run(tmp_path / "run", tournament())
    write_report(run, n_bootstrap=100, seed=3, plots=False)
    first = (run / "report" / "stats.json").read_text()
    write_report(run, n_bootstrap=100, seed=3, plots=False)
    assert (run / "report" / "stats.json").read_text() == first


@pytest.mark.parametrize("failures", [0, 2])
def test_report_with_zero_complete_episodes(tmp_path, failures):
    fails = [debate_record(f"q{i}", {"Debater_A": "a", "Debater_B": "b", "Judge": "j"}, 0.5, "Debater_A",
                           status="failed") for i in range(failures)]
    run = write_run(tmp_path / "run", [], fails)
    html = write_report(run, n_bootstrap=50).read_text()
    assert "No complete episodes" in html
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["counts"]["complete"] == 0 and stats["counts"]["failed"] == failures
    assert stats["agents"] == {} and len(read_csv(run / "report" / "episodes.csv")) == failures


def test_report_on_empty_directory(tmp_path):
    (tmp_path / "run").mkdir()
    html = write_report(tmp_path / "run").read_text()
    assert "No complete episodes" in html and "no episode records yet" in html


def test_report_self_play_single_agent_and_ties(tmp_path):
    seats = {"Debater_A": "solo", "Debater_B": "solo", "Judge": "judge"}
    eps = [debate_record(f"q{i}", seats, p, "Debater_A", flip=False) for i, p in enumerate([0.5, 0.7, 0.2])]
    run = write_run(tmp_path / "run", eps)
    write_report(run, n_bootstrap=50, plots=False)
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["ratings"]["note"].startswith("ratings need games")
    assert stats["agents"]["solo"]["ties"] == 2  # the 0.5 verdict, seen from both seats
    assert stats["matchups"][0]["self_play"] is True
    assert stats["sections"]["debate"]["paired_agents"] == []


def test_report_without_judge_or_debate_metrics(tmp_path):
    """A game with no report section and no judge: generic tables only, no crash."""
    rec = dond_record("s1", "x", "y", take=(0, 2, 2))
    bare = rec.model_copy(update={"game": "mystery", "seats": {p: SeatRecord(agent=s.agent, model="m", role="player")
                                                               for p, s in rec.seats.items()}})
    run = write_run(tmp_path / "run", [bare])
    write_report(run, n_bootstrap=20)
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["sections"] == {} and stats["agents"]["x"]["wins"] == 1


def test_report_mixed_formats_and_panel(tmp_path):
    votes = {"j1": {"Debater_A": 0.8, "Debater_B": 0.2}, "j2": {"Debater_A": 0.6, "Debater_B": 0.4}}
    eps = [debate_record("q1", {"Debater_A": "a", "Debater_B": "b", "Judge": "panel"}, 0.7, "Debater_A", votes=votes),
           debate_record("q1", {"Consultant": "a", "Judge": "j"}, 0.4, None, fmt="consultancy"),
           debate_record("q1", {"Judge": "j"}, 0.6, "Answer_A", fmt="empty")]
    run = write_run(tmp_path / "run", eps)
    html = write_report(run, n_bootstrap=20, plots=False).read_text()
    deb = json.loads((run / "report" / "stats.json").read_text())["sections"]["debate"]
    assert deb["formats"] == ["consultancy", "debate", "empty"]
    assert deb["judge_accuracy"]["by_panel_vote"]["j2"]["n"] == 1
    assert "panel member" in html


def test_report_negotiation_section(tmp_path):
    eps = [dond_record("s1", "x", "y", take=(1, 1, 2)),  # (7, 4): dominated by (8, 4)
           dond_record("s2", "x", "y", take=(0, 2, 2)),  # (8, 4): Pareto-optimal, welfare 12 = max
           dond_record("s3", "y", "x", take=(1, 1, 1), deal=False),
           dond_record("s4", "x", "y", end="aborted"),
           dond_record("s5", "y", "x", take=(2, 2, 2), first="Player_2")]  # (10, 0)
    run = write_run(tmp_path / "run", eps)
    html = write_report(run, n_bootstrap=50).read_text()
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["counts"]["aborted"] == 1
    assert stats["counts"]["rated"] == 5  # aborted games count (both players get 0)
    assert stats["agents"]["x"]["games"] == 5
    neg = stats["sections"]["dond"]
    assert neg["available"] and neg["episodes"] == 5
    o = neg["overall"]
    assert o["agreement_rate"] == pytest.approx(3 / 5) and o["abort_rate"] == pytest.approx(1 / 5)
    assert o["pareto_rate"] == pytest.approx(2 / 5) and o["welfare_optimal_rate"] == pytest.approx(1 / 5)
    assert set(neg["matchups"]) == {"x vs y"}
    # x: 7 (s1), 8 (s2), 0, 0, 0 (s5: x is Player_2 and gets nothing) -> 3.0
    assert neg["matchups"]["x vs y"]["reward_by_agent"]["x"] == pytest.approx(3.0)
    seat = neg["reward_by_agent_seat"]
    assert seat["y · first_mover"] == 0.0  # s3 only (no deal)
    assert seat["y · second_mover"] == pytest.approx((4 + 4 + 0 + 10) / 4)  # s1, s2, s4, s5
    assert "Pareto-optimal" in html and "Negotiation" in html
    rows = read_csv(run / "report" / "episodes.csv")
    assert {"points_Player_1", "deal", "pareto_optimal"} <= set(rows[0])


def test_synthetic_keys_match_real_debate_game(tmp_path):
    """The synthetic records above must carry the keys the real game produces and the metrics read;
    and a report over records with real outcomes works."""
    from sparring.gameapi.game import Action, Seat
    from sparring.games.debate.config import DebateConfig
    from sparring.games.debate.game import DebateGame
    from sparring.games.debate.instance import DebateInstance
    from sparring.prompts import prompt_set

    inst = DebateInstance(id="q1", question="What colour was the ball?", answers=["red", "blue"], correct=0,
                          background="The ball was red. It rolled away.")
    real = []
    for fmt, debaters in [("debate", ["Debater_A", "Debater_B"]), ("consultancy", ["Consultant"]), ("empty", [])]:
        game = DebateGame(DebateConfig(format=fmt, rounds=1))
        prompts = {"debate": "debate", "consultancy": "consultancy", "empty": "empty"}[fmt]
        seats = {d: Seat(player=d, agent="alice", prompts=prompt_set(prompts)) for d in debaters}
        seats["Judge"] = Seat(player="Judge", agent="judge", prompts=prompt_set("empty" if fmt == "empty" else "judge"))
        for flip in (False, True):
            st = game.reset(inst, seats, random.Random(0), flip=flip)
            while not game.is_over(st):
                for p in game.to_act(st):
                    spec = game.action_spec(st, p)
                    action = (Action(probs={spec.options[0]: 0.7, spec.options[1]: 0.3}) if spec.kind == "choice"
                              else Action(text="Look: <quote>The ball was red</quote>."))
                    assert game.act(st, p, action).accepted
            outcome = game.outcome(st)
            keys = set(outcome.metrics)
            assert USED_KEYS <= keys, f"{fmt}: debate metrics lost {USED_KEYS - keys}"
            synth = debate_record("q1", {**{d: "alice" for d in debaters}, "Judge": "judge"}, 0.7,
                                  {"debate": "Debater_A", "consultancy": "Consultant", "empty": "Answer_A"}[fmt],
                                  fmt=fmt)
            assert USED_KEYS <= set(synth.outcome.metrics)
            rec = synth.model_copy(update={"outcome": outcome, "flip": flip,
                                           "id": f"{synth.id}{int(flip)}"})
            real.append(rec)
    run = write_run(tmp_path / "run", real)
    write_report(run, n_bootstrap=20, plots=False)
    deb = json.loads((run / "report" / "stats.json").read_text())["sections"]["debate"]
    assert deb["judge_accuracy"]["by_format"]["debate"]["pairs"]["n"] == 1
    assert deb["quotes"]["by_group"]["all"]["valid_frac"] == 1.0


@register_report_section("boom")
class _BrokenSection(ReportSection):
    title = "Broken"
    template = "sections/debate.html.jinja"

    def compute(self, records, run, ctx):
        raise KeyError("p_correct")


def test_broken_section_becomes_a_warning(tmp_path):
    rec = dond_record("s1", "x", "y").model_copy(update={"game": "boom"})
    run = write_run(tmp_path / "run", [rec])
    html = write_report(run, n_bootstrap=20, plots=False).read_text()
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert any("section 'boom' failed: KeyError" in w for w in stats["warnings"])
    assert "boom" not in stats["sections"] and "Broken" not in html


def test_negotiation_section_without_analysis_module(tmp_path, monkeypatch):
    import sparring.games.negotiation.report as RN

    monkeypatch.setattr(RN, "_analysis", lambda: None)
    run = write_run(tmp_path / "run", [dond_record("s1", "x", "y")])
    html = write_report(run, n_bootstrap=20).read_text()
    neg = json.loads((run / "report" / "stats.json").read_text())["sections"]["dond"]
    assert neg["available"] is False and "analysis is not installed" in html


def test_report_missing_directory_and_custom_output(tmp_path):
    from sparring.errors import SparringError

    with pytest.raises(SparringError, match="does not exist"):
        write_report(tmp_path / "nope")
    run = write_run(tmp_path / "run", tournament()[:4])
    path = write_report(run, tmp_path / "elsewhere", n_bootstrap=20, plots=False)
    assert path == tmp_path / "elsewhere" / "report.html" and (tmp_path / "elsewhere" / "stats.json").exists()


_SEEN_CALLS: list[int] = []


@register_report_section("needs_calls")
class _TranscriptSection(ReportSection):
    needs_transcripts = True

    def compute(self, records, run, ctx):
        _SEEN_CALLS.extend(len(r.calls) for r in records)
        return {"calls": sum(len(r.calls) for r in records)}


@pytest.mark.parametrize("config", ["scripted-debate", "scripted-dond"])
def test_reports_read_records_without_transcripts(tmp_path, config):
    """Reports load records without calls/events (most of a record's size); every statistic is
    the same as from full records, and a section that asks for transcripts still gets them."""
    from rich.console import Console

    from sparring.analysis.report import build_stats
    from sparring.analysis.report_sections import ReportContext
    from sparring.engine.run import RunOptions, run_experiment
    from sparring.records.reader import read_run

    res = run_experiment(RunOptions(configuration=config, output_dir=str(tmp_path), num_iters=3, quiet=True),
                         console=Console(quiet=True))
    full, light = read_run(res.run_dir), read_run(res.run_dir, transcripts=False)
    assert len(light.episodes) == len(full.episodes) > 0
    assert all(r.calls and r.events for r in full.episodes)
    assert not any(r.calls or r.events for r in light.episodes)
    assert [r.model_dump(exclude={"calls", "events"}) for r in light.episodes] == \
        [r.model_dump(exclude={"calls", "events"}) for r in full.episodes]
    ctx = ReportContext(n_bootstrap=50)
    assert build_stats(light, ctx)[0] == build_stats(full, ctx)[0]

    recs = [r.model_copy(update={"game": "needs_calls"}) for r in full.episodes]
    run = write_run(tmp_path / "custom", recs)
    _SEEN_CALLS.clear()
    write_report(run, n_bootstrap=20, plots=False)
    stats = json.loads((run / "report" / "stats.json").read_text())
    assert stats["sections"]["needs_calls"]["calls"] == sum(len(r.calls) for r in recs) > 0
    assert _SEEN_CALLS and all(_SEEN_CALLS)


def test_light_loading_skips_torn_and_foreign_lines(tmp_path):

    ok = debate_record("q1", {"Debater_A": "a", "Debater_B": "b", "Judge": "j"}, 0.8, "Debater_A")
    run = write_run(tmp_path / "run", [ok])
    with (run / "episodes.jsonl").open("a") as f:
        f.write('[1, 2]\n{"schema_version": 1, "id": "trunc')
    light = read_run(run, transcripts=False)
    assert [r.id for r in light.episodes] == [ok.id]
    assert any("episodes.jsonl:2" in w for w in light.warnings) and any("episodes.jsonl:3" in w for w in light.warnings)
