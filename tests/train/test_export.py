"""Exporters: rows are exactly what each player was shown, filters select the right seats, DPO
pairs share one prompt with the right soft targets, files load with `datasets`."""

from __future__ import annotations

import json
import math

import pytest

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.train.export import ExportFilters, dpo_rows, kto_rows, sft_rows, soft_target, write_rows

SIMULTANEOUS = {
    "game": "debate", "game_args": {"format": "debate", "rounds": 2, "order": "simultaneous"},
    "dataset": {"name": "generated", "split": "all", "limit": 3},
    "agents": {"d": {"role": "debater", "model": "speaker", "best_of_n": {"n": 3}},
               "j": {"role": "judge", "model": "judge"}},
    "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]},
}


def speaker(request) -> str:
    """Each speech names its speaker and round, so a leaked speech is easy to spot."""
    player = request.context["player"]
    return f"{player} speaks in round {request.context['index']} (seed {request.sampling.seed % 7})"


@pytest.fixture(scope="module")
def debate_records():
    models = {"speaker": ScriptedModel("speaker", mode="callable", function=speaker),
              "judge": ScriptedModel("judge", score_mode="random", seed=3)}
    with Arena.from_config(SIMULTANEOUS, models=models) as arena:
        return arena.play(arena.jobs())


def test_sft_rows_hold_exactly_what_each_debater_saw_and_never_a_same_round_speech(debate_records):
    rows = sft_rows(debate_records, ExportFilters(role="debater"))
    assert len(rows) == 2 * len(debate_records)  # one multi-turn conversation per debater and episode
    for row in rows:
        me = row["meta"]["seat"]
        other = "Debater_B" if me == "Debater_A" else "Debater_A"
        msgs = row["messages"]
        assistant = [m["content"] for m in msgs if m["role"] == "assistant"]
        assert len(assistant) == 2 and all(a.startswith(f"{me} speaks") for a in assistant)
        assert msgs[-1]["role"] == "assistant" and row["meta"]["turns"] == 2
        # simultaneous rounds: before my round-k speech I may see the opponent's speeches of rounds < k only
        before_second = json.dumps(msgs[: msgs.index(next(m for m in msgs[::-1] if m["role"] == "assistant"))])
        assert f"{other} speaks in round 1" not in before_second
        assert row["meta"]["role"] == "debater" and row["meta"]["agent"] == "d"


def test_filters_select_seats_and_outcomes(debate_records):
    all_rows = sft_rows(debate_records, ExportFilters(role="debater"))
    winners = sft_rows(debate_records, ExportFilters(role="debater", keep="winners"))
    correct = sft_rows(debate_records, ExportFilters(role="debater", keep="correct"))
    top = sft_rows(debate_records, ExportFilters(role="debater", keep="top_k", k=2))
    assert 0 < len(winners) < len(all_rows) and len(correct) == len(all_rows) // 2 and len(top) == 2
    assert all(r["meta"]["argued_correct"] for r in correct)
    mean = sum(r["meta"]["reward"] for r in all_rows) / len(all_rows)
    above = sft_rows(debate_records, ExportFilters(role="debater", keep="above_avg"))
    assert above and all(r["meta"]["reward"] > mean for r in above)
    judges = sft_rows(debate_records, ExportFilters(role="judge", judge_target="correct"))
    assert judges and all(r["messages"][-1]["content"] == f"Answer: {r['meta']['correct_side'][-1]}"
                          for r in judges)


def test_dpo_pairs_share_one_prompt_and_carry_soft_targets(debate_records):
    rows = dpo_rows(debate_records, ExportFilters(role="debater"), target="prob", gamma=2.0)
    assert rows
    for row in rows:
        assert row["chosen"][0]["content"] != row["rejected"][0]["content"]
        assert row["margin"] >= 0 and row["preference"] == pytest.approx(1 / (1 + math.exp(-2.0 * row["margin"])))
        assert row["prompt"][-1]["role"] == "user"
    assert soft_target(0.8, 0.2, "binary") == 1.0
    assert soft_target(0.8, 0.2, "log_prob", 1.0) == pytest.approx(1 / (1 + math.exp(-math.log(4))))
    assert soft_target(0.8, 0.2, "logit", 1.0) == pytest.approx(1 / (1 + math.exp(-2 * math.log(4))))
    gapped = dpo_rows(debate_records, ExportFilters(role="debater"), min_gap=0.2)
    assert all(r["margin"] >= 0.2 for r in gapped) and len(gapped) < len(rows)


def test_kto_rows_label_replies_by_outcome(debate_records):
    rows = kto_rows(debate_records, ExportFilters(role="debater", keep="winners"))
    assert {r["label"] for r in rows} == {True, False}
    assert all(r["completion"][0]["role"] == "assistant" for r in rows)


SLOPPY_DOND = {"game": "dond", "game_args": {"max_turns": 6}, "view": "rendered",
               "dataset": {"name": "dond_generated", "args": {"n": 2, "seed": 0}},
               "agents": {"a": {"role": "negotiator", "model": "sloppy"}, "b": {"role": "negotiator", "model": "ok"}},
               "tournament": {"type": "custom", "matchups": [["a", "b"]]}}


@pytest.fixture(scope="module")
def sloppy_records():
    """`a` proposes too early (rejected), then repeats the very same text later, when it is
    accepted: a rejected reply and an accepted one with identical text."""
    proposal = "[propose] (1 books, 0 hats, 0 balls)"
    models = {"sloppy": ScriptedModel("sloppy", mode="cycle", texts=[proposal, "no tag here", "[message] hi", proposal]),
              "ok": ScriptedModel("ok", mode="cycle", texts=["[message] fine", "[propose] (0 books, 1 hats, 1 balls)"])}
    with Arena.from_config(SLOPPY_DOND, models=models) as arena:
        return arena.play(arena.jobs())


def accepted_before(rec, player, index):
    return sum(1 for c in rec.calls[:index] if c.player == player and c.op == "generate" and not c.rejected)


def test_rejected_replies_are_found_by_position_not_by_text(sloppy_records):
    records = sloppy_records
    proposal = "[propose] (1 books, 0 hats, 0 balls)"
    a_calls = [c for r in records for c in r.calls if r.seats[c.player].agent == "a"]
    assert any(c.rejected and c.completions[0].text == proposal for c in a_calls)
    assert any(not c.rejected and c.completions[0].text == proposal for c in a_calls)
    rows = sft_rows(records, ExportFilters(agent="a", include_aborted=True))
    assert rows and all("prompt" in r and "completion" in r for r in rows)  # DoND: earlier turns are context
    by_id = {r.id: r for r in records}
    for row in rows:
        rec, (i,) = by_id[row["meta"]["episode_id"]], row["meta"]["calls"]
        roles = [m["role"] for m in row["prompt"]]
        assert all(x != y for x, y in zip(roles[1:], roles[2:], strict=False))  # never two user messages in a row
        # each accepted reply of this player before the call shown exactly once, no rejected one
        assert roles.count("assistant") == accepted_before(rec, row["meta"]["seat"], i)
    # every accepted reply is trained exactly once, the repeated proposal included
    accepted = {(r.id, i) for r in records for i, c in enumerate(r.calls)
                if r.seats[c.player].agent == "a" and c.op == "generate" and not c.rejected}
    assert sorted((r["meta"]["episode_id"], r["meta"]["calls"][0]) for r in rows) == sorted(accepted)
    assert any(r["completion"][0]["content"] == proposal for r in rows)


def test_after_a_rejected_reply_the_prompt_holds_the_correction_or_nothing(sloppy_records):
    by_id = {r.id: r for r in sloppy_records}
    retries = 0
    for rule in ("correction", "clean"):
        for _kind, rows in (("sft", sft_rows(sloppy_records, ExportFilters(agent="a", after_rejection=rule, include_aborted=True))),
                           ("kto", kto_rows(sloppy_records, ExportFilters(agent="a", after_rejection=rule, include_aborted=True)))):
            for row in rows:
                rec, (i,) = by_id[row["meta"]["episode_id"]], row["meta"]["calls"]
                own = [c for c in rec.calls[:i] if c.player == row["meta"]["seat"]]
                if not (own and own[-1].rejected):
                    continue
                retries += 1
                last = row["prompt"][-1]
                assert last["role"] == "user" and own[-1].completions[0].text not in last["content"]
                assert (own[-1].meta["correction"] in last["content"]) is (rule == "correction")
                assert all(own[-1].meta["correction"] not in m["content"] for m in row["prompt"][:-1])
    assert retries > 0


def test_every_export_of_the_shipped_scripted_experiments_is_well_formed(tmp_path):
    """Shipped `scripted-dond` and `scripted-debate`, run with their scripted models: every
    chat alternates, each accepted reply is trained exactly once, no rejected reply is an
    assistant turn (the rows' prompts show as many assistant turns as accepted replies before)."""
    from typer.testing import CliRunner

    from sparring.cli import app
    from sparring.records.reader import iter_records
    from sparring.train.export import rows_for

    runner = CliRunner()
    for name in ("scripted-dond", "scripted-debate"):
        result = runner.invoke(app, ["run", name, "-o", str(tmp_path), "--run-name", name, "--quiet", "--no-report"])
        assert result.exit_code == 0, result.output
        records = list(iter_records(tmp_path / name))
        rejected = sum(1 for r in records for c in r.calls if c.rejected)
        by_id = {r.id: r for r in records}
        for kind in ("sft", "kto"):
            rows = rows_for(kind, [tmp_path / name], ExportFilters(keep="all"))
            trained = []
            for row in rows:
                chat = row.get("messages") or row["prompt"] + row["completion"]
                roles = [m["role"] for m in chat if m["role"] != "system"]
                assert roles[0] == "user" and roles[-1] == "assistant"
                assert all(x != y for x, y in zip(roles, roles[1:], strict=False))
                calls = row["meta"].get("calls")
                if calls is None:
                    continue  # a judge verdict row
                rec = by_id[row["meta"]["episode_id"]]
                assert not any(rec.calls[i].rejected for i in calls)
                trained += [(rec.id, i) for i in calls]
                if "prompt" in row:
                    assert [m["role"] for m in row["prompt"]].count("assistant") == \
                        accepted_before(rec, row["meta"]["seat"], calls[0]) or name == "scripted-debate"
            accepted = [(r.id, i) for r in records if r.status == "complete" for i, c in enumerate(r.calls)
                        if c.op == "generate" and not c.rejected and not c.error]
            assert sorted(trained) == sorted(accepted), (name, kind)
        if name == "scripted-dond":
            assert rejected > 0  # the haggler's untagged replies: rejections were exercised


def test_exported_files_load_with_datasets(tmp_path, debate_records):
    import datasets

    for kind, rows in (("sft", sft_rows(debate_records)), ("dpo", dpo_rows(debate_records)),
                       ("kto", kto_rows(debate_records))):
        path = write_rows(rows, tmp_path / kind)
        ds = datasets.load_dataset("json", data_files=str(path), split="train")
        assert len(ds) == len(rows)
        expected = {"sft": {"messages"}, "dpo": {"prompt", "chosen", "rejected", "preference"},
                    "kto": {"prompt", "completion", "label"}}[kind]
        assert expected <= set(ds.column_names)
    parquet = write_rows(sft_rows(debate_records), tmp_path / "pq", "parquet")
    assert len(datasets.load_dataset("parquet", data_files=str(parquet), split="train")) > 0


def test_the_export_cli_writes_rows_and_a_card_or_says_why_not(tmp_path):
    from typer.testing import CliRunner

    from sparring.cli import app

    runner = CliRunner()
    run = runner.invoke(app, ["run", "scripted-debate", "-n", "2", "-o", str(tmp_path), "--run-name", "r", "--quiet",
                              "--no-report"])
    assert run.exit_code == 0, run.output
    ok = runner.invoke(app, ["export", "sft", str(tmp_path / "r"), "-o", str(tmp_path / "sft"), "--role", "debater"])
    assert ok.exit_code == 0 and (tmp_path / "sft" / "train.jsonl").is_file()
    assert "config hash" in (tmp_path / "sft" / "README.md").read_text()
    none = runner.invoke(app, ["export", "dpo", str(tmp_path / "r"), "-o", str(tmp_path / "dpo")])
    assert none.exit_code == 2 and "best_of_n" in none.output and not (tmp_path / "dpo" / "train.jsonl").exists()
    bad = runner.invoke(app, ["export", "sft", str(tmp_path / "nowhere"), "-o", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "not a run directory" in bad.output


def test_human_dond_dialogues_become_rows_in_our_prompts():
    from pathlib import Path

    from sparring.train.export.human import human_sft_rows

    data = Path(__file__).parents[2].parent / "shared" / "data" / "dond" / "val.txt"
    if not data.is_file():
        pytest.skip("shared reference data not present")
    rows = human_sft_rows("dond", data, limit=6)
    assert rows and all(r["meta"]["source"] == "human:dond" for r in rows)
    # the conversation view (the default): one multi-turn row per dialogue and seat, every turn trained
    assert all("messages" in r for r in rows)
    assert all(r["messages"][0]["role"] == "system" and r["messages"][-1]["role"] == "assistant" for r in rows)
    assert sum(r["meta"]["turns"] for r in rows) > len(rows)


def test_human_nyu_debates_give_debater_rows_and_judge_rows_with_the_human_probabilities(tmp_path):
    """NYU debate platform JSONL: the debaters' speeches become debater rows; the human judge's
    final probabilities are the judge seat's verdict, so judge rows target it (soft, in meta)."""
    import json

    from sparring.train.export import ExportFilters
    from sparring.train.export.human import human_sft_rows

    story = "Mara lives in Dunmere. She keeps a copper kettle."
    debate = {"storyTitle": "Kettle Story", "story": story, "question": "Where does Mara live?",
              "answers": ["Dunmere", "Kelderby"], "debateId": "d1", "judge": "Jo", "isJudgeCorrect": True,
              "turns": [{"role": "Debater", "index": 0, "text": "She lives in <quote>Dunmere</quote>."},
                        {"role": "Debater", "index": 1, "text": "Kelderby, clearly."},
                        {"role": "Judge", "text": "Why Dunmere?", "probabilities": [0.6, 0.4]},
                        {"role": "Debater", "index": 0, "text": "Read the quote."},
                        {"role": "Debater", "index": 1, "text": "It is fake."},
                        {"role": "Judge", "text": "Decided.", "probabilities": [0.2, 0.8]}]}
    path = tmp_path / "debates-readable.jsonl"
    path.write_text(json.dumps(debate) + "\n")
    debaters = human_sft_rows("nyu", path)
    speeches = [m["content"] for r in debaters for m in r["messages"] if m["role"] == "assistant"]
    assert "Kelderby, clearly." in " ".join(speeches) and "Read the quote." in " ".join(speeches)
    judges = human_sft_rows("nyu", path, ExportFilters(role="judge"))
    assert len(judges) == 1
    probs = judges[0]["meta"]["probabilities"]
    assert sorted(probs.values()) == pytest.approx([0.2, 0.8])
    target = judges[0]["messages"][-1]["content"]
    assert max(probs, key=probs.get) in target  # the human judge's verdict (0.8 on the second answer)


def _dond(i: int, points: tuple[int, int], deal: bool = True):
    from sparring.gameapi.game import Outcome
    from sparring.records.record import EpisodeRecord, SeatRecord

    metrics = {"deal": deal, "points": {"Player_1": points[0], "Player_2": points[1]},
               "scored_both": deal and min(points) > 0}
    rewards = {"Player_1": float(points[0]), "Player_2": float(points[1])} if deal else \
        {"Player_1": 0.0, "Player_2": 0.0}
    seats = {p: SeatRecord(agent="policy", model="m", role="negotiator") for p in ("Player_1", "Player_2")}
    return EpisodeRecord(id=f"e{i}", experiment="x", game="dond", instance_id=f"i{i}", seats=seats, seed=i,
                         status="complete", outcome=Outcome(rewards=rewards, metrics=metrics))


def test_require_drops_capitulations_and_counts_them_as_no_gain_in_the_mean():
    """lm-selfplay's above_avg keeps a player's turns when its reward beats the round's mean; with
    `require: [scored_both]` a deal worth 0 to one side counts as no gain for both and is never kept."""
    from sparring.errors import ConfigError
    from sparring.train.export.filters import select

    records = [_dond(0, (10, 0)), _dond(1, (10, 0)), _dond(2, (6, 5)), _dond(3, (4, 7)), _dond(4, (0, 0), deal=False)]
    plain = select(records, ExportFilters(keep="above_avg"))  # mean of the ten rewards: 42 / 10 = 4.2
    assert [(r.id, p) for r, p in plain] == [("e0", "Player_1"), ("e1", "Player_1"), ("e2", "Player_1"),
                                             ("e2", "Player_2"), ("e3", "Player_2")]
    mutual = select(records, ExportFilters(keep="above_avg", require=["scored_both"]))  # mean 22 / 10 = 2.2
    assert [(r.id, p) for r, p in mutual] == [("e2", "Player_1"), ("e2", "Player_2"), ("e3", "Player_1"),
                                              ("e3", "Player_2")]
    assert len(select(records, ExportFilters(require=["scored_both"]))) == 4  # keep: all, mutual deals only
    with pytest.raises(ConfigError, match="no episode has the outcome metric.*scored_bth"):
        select(records, ExportFilters(keep="above_avg", require=["scored_bth"]))
