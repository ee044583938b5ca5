"""TextWorld cooking end to end through the engine: the gold policy's demonstrations, a lost
player, storing, the report section and the SFT export of gold episodes."""

from __future__ import annotations

import pytest
from tw_helpers import GOLD_MODEL, lost_player, require_simulator

from sparring.engine.config import open_store
from sparring.engine.play import Arena
from sparring.records.reader import iter_records
from sparring.train.export import ExportFilters, sft_rows

CONFIG = {
    "name": "tw-test",
    "game": "textworld_cooking",
    "game_args": {"max_steps": 20, "history": 3},
    "dataset": {"name": "cookingworld", "split": "train", "limit": 3},
    "agents": {"gold": {"role": "player", "model": "gold"},
               "lost": {"role": "player", "model": "lost"}},
    "tournament": {"type": "self_play", "participants": ["gold", "lost"]},
    "run": {"seed": 0, "max_live": 2},  # one simulator (a JVM) per live episode
}


@pytest.fixture(scope="module")
def arena(tw_instances):
    """The rules tests' instances (listing seeds needs no second simulator)."""
    require_simulator()
    from sparring.models.scripted import ScriptedModel

    lost = ScriptedModel("lost", mode="callable", function=lost_player)
    gold = ScriptedModel("gold", **GOLD_MODEL["args"])
    with Arena.from_config(CONFIG, models={"gold": gold, "lost": lost}, instances=tw_instances[:3]) as a:
        yield a
        a.exp.game.close()


@pytest.fixture(scope="module")
def records(arena):
    return arena.play(arena.jobs())


def _by_agent(records, agent):
    return [r for r in records if r.seats["player"].agent == agent]


def test_gold_episodes_reach_success_with_full_score(records):
    gold = _by_agent(records, "gold")
    assert len(gold) == 3 and all(r.status == "complete" for r in gold)
    for r in gold:
        assert r.outcome.rewards == {"player": 1.0} and r.outcome.metrics["success"]
        replies = [c.completions[0].text for c in r.calls]
        assert replies == r.state["gold_path"]
        # the expert action went to the model as a private label, never into what it was shown
        for c in r.calls:
            assert all(", ".join(r.state["gold_path"]) not in m.content for m in c.messages)


def test_a_lost_player_runs_out_of_steps_with_its_invalid_commands_counted(records):
    lost = _by_agent(records, "lost")
    assert len(lost) == 3
    for r in lost:
        m = r.outcome.metrics
        assert m["end"] == "max_steps" and m["steps"] == 20 and not m["success"]
        assert m["n_invalid"] == 13 and m["invalid_rate"] == pytest.approx(0.65)  # 7 x "dance", 6 x ""
        # taken (a step spent) but the world as it was: per-state credit keys the next command at the same state
        assert sum(bool(c.meta.get("unchanged")) for c in r.calls) == 13 and not any(c.rejected for c in r.calls)


def test_sft_export_of_gold_episodes_gives_one_row_per_command(records):
    gold = _by_agent(records, "gold")
    rows = sft_rows(records, ExportFilters(agent="gold"))
    assert len(rows) == sum(len(r.state["gold_path"]) for r in gold)
    for row in rows:  # earlier commands are shown re-rendered: context (prompt), one trained completion
        assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
        assert [m["role"] for m in row["completion"]] == ["assistant"]
        assert row["meta"]["agent"] == "gold" and row["meta"]["reward"] == 1.0
        assert row["meta"]["split"] == "train"
    assert {row["completion"][0]["content"] for row in rows} >= {"prepare meal", "eat meal"}


def test_records_store_and_report(arena, records, tmp_path):
    from sparring.analysis.report_sections import ReportContext, section_for

    with open_store(tmp_path / "run", arena.exp.config) as store:
        arena.play(arena.jobs(limit=1), store=store)
    assert len(list(iter_records(tmp_path / "run"))) == 1
    section = section_for("textworld_cooking")
    stats = section.compute(records, None, ReportContext())
    assert stats["agents"]["gold"]["success_rate"] == 1.0 and stats["agents"]["lost"]["success_rate"] == 0.0
    assert stats["agents"]["lost"]["invalid_rate"] == pytest.approx(0.65)
    assert section.csv_columns(records[0])["gold_steps"] > 0
    assert set(section.plots(stats)) == {"success", "quality"}
