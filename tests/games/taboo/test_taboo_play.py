"""Taboo on the engine with scripted models: play API, shipped scripted config, leak check on what
the guesser's model was shown, SFT rows and the report section."""

from __future__ import annotations

from sparring.engine.play import play
from sparring.games.taboo.stems import tokens
from sparring.models.scripted import ScriptedModel
from sparring.prompts import prompt_set
from sparring.train.export import ExportFilters, sft_rows


def _models():
    return {"describer": ScriptedModel("describer", mode="callable", function="sparring.games.taboo.scripted:describer"),
            "guesser": ScriptedModel("guesser", mode="callable", function="sparring.games.taboo.scripted:guesser")}


TABOO = {
    "name": "inline-taboo",
    "game": "taboo",
    "dataset": {"name": "taboo_words", "split": "test"},
    "agents": {"d": {"role": "describer", "model": "describer"}, "g": {"role": "guesser", "model": "guesser"}},
    "tournament": {"type": "custom", "matchups": [["d", "g"]]},
}


def test_scripted_taboo_plays_and_the_guesser_model_never_sees_the_secret():
    records = play(TABOO, models=_models())
    static = set(tokens(prompt_set("taboo").render("guesser_system", 0, max_rounds=3)))
    assert len(records) >= 20 and all(r.game == "taboo" for r in records)
    ends = {r.outcome.metrics["end"] for r in records}
    assert "success" in ends  # the hint-reading guesser finds some words
    for r in records:
        m = r.outcome.metrics
        assert r.outcome.rewards["Describer"] == r.outcome.rewards["Guesser"] == m["quality_score"] / 100
        if m["success"]:
            assert m["quality_score"] == 100 / m["rounds"]
        # secret words that the guesser's fixed prompt happens to contain (e.g. "game") prove nothing
        secret = [w for w in [m["target"], *r.instance["taboo"]] if w.lower() not in static]
        for call in r.calls:
            if call.player == "Guesser":
                shown = tokens(" ".join(msg.content for msg in call.messages if msg.role != "assistant"))
                assert not any(w.lower() in shown for w in secret), (r.instance_id, secret)


def test_self_play_one_agent_in_both_seats():
    cfg = {**TABOO, "dataset": {"name": "taboo_words", "split": "val", "limit": 3},
           "agents": {"p": {"role": "describer", "model": "both"}},
           "tournament": {"type": "self_play", "participants": ["p"]}}
    both = ScriptedModel("both", mode="cycle", cycle_by="turn", texts=["CLUE: a thing", "CLUE: another thing"])
    records = play(cfg, models={"both": both})
    assert len(records) == 3 and all(r.seats["Describer"].agent == r.seats["Guesser"].agent == "p" for r in records)
    # the guesser's reply "CLUE: ..." has no GUESS: line: aborted as malformed
    assert all(r.outcome.metrics["abort_kind"] == "malformed_guess" for r in records)


def test_sft_rows_for_both_roles_with_quality():
    records = play(TABOO, models=_models())
    rows = sft_rows(records, ExportFilters())
    assert rows and {row["meta"]["role"] for row in rows} == {"describer", "guesser"}
    assert all("quality_score" in row["meta"] and row["meta"]["game"] == "taboo" for row in rows)
    won = [row for row in rows if row["meta"]["quality_score"] > 0]
    assert won and all(row["meta"]["reward"] == row["meta"]["quality_score"] / 100 for row in won)


def test_shipped_scripted_config_and_report_section():
    from sparring.analysis.report_sections import ReportContext, section_for

    records = play("scripted-taboo")
    assert records and all(r.status in ("complete", "aborted") for r in records)
    section = section_for("taboo")
    assert section is not None
    stats = section.compute(records, None, ReportContext(n_bootstrap=50))  # type: ignore[arg-type]
    o = stats["overall"]
    assert o["episodes"] == len(records) and 0 <= o["played_rate"] <= 1 and o["success_ci"][0] <= o["success_rate"]
    assert set(stats["by_band"]) <= {"high", "medium", "low"}
    assert section.csv_columns(records[0])["target"] == records[0].outcome.metrics["target"]
    section.plots(stats)
