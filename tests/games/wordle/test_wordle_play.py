"""Wordle on the engine with scripted models: the in-memory play API, shipped scripted configs,
what each model was shown (no answer), SFT rows and the report section."""

from __future__ import annotations

from sparring.engine.play import Arena, play
from sparring.models.scripted import ScriptedModel
from sparring.train.export import ExportFilters, sft_rows

WORDLE = {
    "name": "inline-wordle",
    "game": "wordle",
    "dataset": {"name": "words", "split": "test", "limit": 6},
    "agents": {"solver": {"role": "guesser", "model": "solver"}},
    "tournament": {"type": "self_play", "participants": ["solver"]},
}


def _solver() -> ScriptedModel:
    return ScriptedModel("solver", mode="callable", function="sparring.games.wordle.scripted:solver")


def _shown(record) -> list[str]:
    return [m.content for c in record.calls for m in c.messages]


def test_a_single_player_game_plays_through_the_engine_and_never_shows_the_answer():
    # answers that occur nowhere in the prompts, so any occurrence in what was shown is a leak
    targets = ["crane", "spoon", "abbey", "speed", "plant", "sweet"]
    cfg = {**WORDLE, "dataset": {"name": "list", "args": {"targets": targets}}}
    records = play(cfg, models={"solver": _solver()})
    assert len(records) == 6 and all(r.game == "wordle" and r.status == "complete" for r in records)
    assert all(list(r.seats) == ["Guesser"] for r in records)
    for r in records:
        m = r.outcome.metrics
        assert m["success"] and 1 <= m["n_guesses"] <= 6 and m["quality_score"] == 100 / m["n_guesses"]
        assert r.outcome.rewards["Guesser"] == m["quality_score"] / 100
        # the answer appears only in the model's own final guess, never in what it was shown
        assert not any(m["target"] in text.lower() for text in _shown(r))
        assert r.instance["metadata"]["split"] in ("train", "val", "test")


def test_sft_rows_carry_the_quality_score():
    records = play(WORDLE, models={"solver": _solver()})
    rows = sft_rows(records, ExportFilters())
    assert len(rows) == len(records)
    for row in rows:
        assert row["meta"]["game"] == "wordle" and row["meta"]["role"] == "guesser"
        assert row["meta"]["quality_score"] > 0 and row["meta"]["reward"] == row["meta"]["quality_score"] / 100
        assert row["messages"][0]["role"] == "system" and row["messages"][-1]["role"] == "assistant"


def test_invalid_replies_are_corrected_then_abort():
    sloppy = ScriptedModel("sloppy", mode="cycle", texts=["GUESS: zzzzz", "no idea", "GUESS: qqqqq"])
    cfg = {**WORDLE, "dataset": {"name": "list", "args": {"targets": ["crane", "spoon"]}},
           "agents": {"solver": {"role": "guesser", "model": "sloppy"}}}
    records = play(cfg, models={"sloppy": sloppy})
    assert all(r.status == "aborted" and r.outcome.metrics["aborted"] for r in records)
    assert all(sum(c.rejected for c in r.calls) == 3 for r in records)
    assert sft_rows(records, ExportFilters()) == []  # aborted games are not exported by default


def test_with_critic_both_seats_play_and_export():
    cfg = {**WORDLE, "name": "inline-wordle-critic", "game": "wordle_withcritic",
           "agents": {"solver": {"role": "guesser", "model": "solver"},
                      "critic": {"role": "critic", "model": "critic"}},
           "tournament": {"type": "custom", "matchups": [["solver", "critic"]]}}
    critic = ScriptedModel("critic", mode="callable", function="sparring.games.wordle.scripted:critic")
    records = play(cfg, models={"solver": _solver(), "critic": critic})
    assert records and all(r.status == "complete" and r.outcome.metrics["success"] for r in records)
    for r in records:
        assert r.outcome.metrics["critic_keep"] == r.outcome.metrics["n_guesses"]
        critic_calls = [c for c in r.calls if c.player == "Critic"]
        assert critic_calls and r.seats["Critic"].role == "critic"
    rows = sft_rows(records, ExportFilters())
    assert {row["meta"]["role"] for row in rows} == {"guesser", "critic"}
    assert all("quality_score" in row["meta"] for row in rows)


def test_shipped_scripted_configs_run():
    with Arena.from_config("scripted-wordle") as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 40 and {r.seats["Guesser"].agent for r in records} == {"solver", "sloppy"}
    by = {a: [r for r in records if r.seats["Guesser"].agent == a] for a in ("solver", "sloppy")}
    assert all(r.outcome.metrics["success"] for r in by["solver"])
    records = play("scripted-wordle-withcritic")
    assert len(records) == 10 and all(r.status == "complete" for r in records)


def test_report_section_summarises_quality_and_information_gain():
    from sparring.analysis.report_sections import ReportContext, section_for

    records = play(WORDLE, models={"solver": _solver()})
    section = section_for("wordle")
    assert section is not None and section_for("wordle_withcritic") is not None
    stats = section.compute(records, None, ReportContext(n_bootstrap=50))  # type: ignore[arg-type]
    o = stats["overall"]
    assert o["episodes"] == 6 and o["played_rate"] == 1.0 and o["success_rate"] == 1.0
    assert 0 < o["quality"] <= 100 and o["mean_info_gain"] > 0 and o["mean_guesses_won"] >= 1
    assert section.plots(stats)
    assert section.csv_columns(records[0])["quality_score"] == records[0].outcome.metrics["quality_score"]
