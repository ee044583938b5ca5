"""selfplay.txt loader, human-dialogue loader, scenario-level splits and the source registry."""

from __future__ import annotations

import random

import pytest
from dond_helpers import data_file, make_seats

from sparring.errors import ConfigError, SparringError
from sparring.gameapi.game import Action
from sparring.games.negotiation.dialogues import load_dond_dialogues
from sparring.games.negotiation.game import PLAYERS, DealOrNoDealGame, DondConfig
from sparring.games.negotiation.generator import generate_instances
from sparring.games.negotiation.instance import DondInstance, scenario_key, scenario_split
from sparring.games.negotiation.loaders import load_selfplay_contexts
from sparring.games.negotiation.sources import NEGOTIATION_SOURCES, load_instances

GOOD = ["1 4 4 1 1 2", "1 0 4 2 1 2", "3 1 1 3 2 2", "3 0 1 8 2 1"]


def write(tmp_path, lines, name="ctx.txt"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_selfplay_reads_real_file():
    path = data_file("selfplay.txt")
    inst = load_selfplay_contexts(path)
    assert len(inst) == 4086
    first = path.read_text().splitlines()[:2]
    c = [list(map(int, x.split())) for x in first]
    assert inst[0].counts == (c[0][0], c[0][2], c[0][4])
    assert inst[0].values == ((c[0][1], c[0][3], c[0][5]), (c[1][1], c[1][3], c[1][5]))
    assert inst[0].id == "selfplay-00000" and inst[-1].id == "selfplay-04085"
    deduped = load_selfplay_contexts(path, dedupe=True)
    assert len(deduped) == len({x.scenario_key() for x in inst}) < len(inst)


def test_selfplay_small_file_and_options(tmp_path):
    p = write(tmp_path, GOOD)
    inst = load_selfplay_contexts(p)
    assert [x.counts for x in inst] == [(1, 4, 1), (3, 1, 2)]
    assert inst[0].values == ((4, 1, 2), (0, 2, 2))
    assert len(load_selfplay_contexts(p, limit=1)) == 1
    shuffled = load_selfplay_contexts(p, shuffle=True, seed=3)
    assert shuffled == load_selfplay_contexts(p, shuffle=True, seed=3) and sorted(x.id for x in shuffled) == ["selfplay-00000", "selfplay-00001"]


@pytest.mark.parametrize("lines, where, what", [
    (GOOD[:2] + ["3 1 1 3 2", GOOD[3]], "line 3", "expected 6 integers"),
    (GOOD[:2] + ["3 1 1 x 2 2", GOOD[3]], "line 3", "'x' is not an integer"),
    (GOOD[:3] + ["3 0 1 8 2 2"], "line 4", "worth 12"),
    (GOOD[:2] + ["5 1 1 3 1 2", "5 0 1 8 1 2"], "line 3", "item counts must be 1-4"),
    (GOOD[:2] + ["1 4 1 2 1 4"] * 2, "line 3", "must hold 5-7 items"),
    (GOOD[:3] + ["3 1 2 2 1 3"], "lines 3-4", "counts differ"),
    (GOOD[:2] + ["3 2 1 4 2 0", "3 0 1 10 2 0"], "lines 3-4", "valued by neither"),
    (GOOD[:2] + ["3 2 1 4 2 0", "3 0 1 0 2 5"], "lines 3-4", "both could score 10"),
    (GOOD[:3], "line 3", "odd number of contexts"),
    (GOOD[:2] + ["", *GOOD[2:]], "line 3", "empty line"),
    (GOOD[:2] + ["1 -1 4 2 1 3", GOOD[1]], "line 3", "values must be 0-10"),
])
def test_selfplay_rejects_malformed_lines(tmp_path, lines, where, what):
    p = write(tmp_path, lines)
    with pytest.raises(ConfigError) as e:
        load_selfplay_contexts(p)
    msg = str(e.value)
    assert str(p) in msg and where in msg and what in msg, msg


def test_missing_or_empty_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_selfplay_contexts(tmp_path / "nope.txt")
    with pytest.raises(ConfigError, match="the file is empty"):
        load_selfplay_contexts(write(tmp_path, [""]))


def test_split_by_unordered_scenario_has_no_leakage():
    inst = generate_instances(3000, seed=11)
    swapped = [x.swapped() for x in inst]  # the same scenarios in the other seat order
    buckets = {s: set() for s in ("train", "val", "test")}
    for x in inst + swapped:
        buckets[scenario_split(x.scenario_key())].add(x.scenario_key())
    assert all(buckets.values())
    assert not (buckets["train"] & buckets["val"] or buckets["train"] & buckets["test"]
                or buckets["val"] & buckets["test"])
    for a, b in zip(inst, swapped, strict=True):
        assert scenario_split(a.scenario_key()) == scenario_split(b.scenario_key())
    n_train = sum(scenario_split(x.scenario_key()) == "train" for x in inst)
    assert 0.7 < n_train / len(inst) < 0.9


def test_selfplay_splits_partition_the_file():
    path = data_file("selfplay.txt")
    parts = {s: load_selfplay_contexts(path, split=s) for s in ("train", "val", "test")}
    assert sum(len(v) for v in parts.values()) == 4086
    keys = {s: {x.scenario_key() for x in v} for s, v in parts.items()}
    assert not (keys["train"] & keys["val"] or keys["train"] & keys["test"] or keys["val"] & keys["test"])


# -- human dialogues ---------------------------------------------------------------------------
RAW_A = ("1 4 4 1 1 2 THEM: i would like 4 hats and you can have the rest. <eos> YOU: deal <eos> "
         "THEM: <selection> item0=1 item1=0 item2=1 <eos> reward=6 agree 1 0 4 2 1 2")
RAW_B = ("1 0 4 2 1 2 YOU: i would like 4 hats and you can have the rest. <eos> THEM: deal <eos> "
         "YOU: <selection> item0=0 item1=4 item2=0 <eos> reward=8 agree 1 4 4 1 1 2")
TAGGED = ("<input> 1 4 4 1 1 2 </input> <dialogue> YOU: the book and ball for me? <eos> THEM: ok <eos> "
          "YOU: <selection> </dialogue> <output> item0=1 item1=0 item2=1 item0=0 item1=4 item2=0 </output> "
          "<partner_input> 1 0 4 2 1 2 </partner_input>")
NO_DEAL = ("<input> 1 4 4 1 1 2 </input> <dialogue> YOU: all mine <eos> THEM: no <eos> YOU: <selection> "
           "</dialogue> <output> <no_agreement> <no_agreement> <no_agreement> <no_agreement> <no_agreement> "
           "<no_agreement> </output> <partner_input> 1 0 4 2 1 2 </partner_input>")


def test_two_sides_merge_into_one_transcript(tmp_path):
    (t,) = load_dond_dialogues(write(tmp_path, [RAW_A, RAW_B], "data.txt"))
    # Player_1 = the first speaker = the writer of RAW_B (context "1 0 4 2 1 2")
    assert t.instance.values == ((0, 2, 2), (4, 1, 2)) and t.instance.first_mover == 0
    assert t.source["lines"] == [1, 2] and t.complete
    assert [(e.player, e.tag, e.content) for e in t.events] == [
        ("Player_1", "turn", "[message] i would like 4 hats and you can have the rest."),
        ("Player_2", "turn", "[message] deal"),
        ("Player_1", "turn", "[propose] (0 books, 4 hats, 0 balls)"),   # Player_1 pressed <selection>
        ("Player_2", "turn", "[propose] (1 books, 0 hats, 1 balls)"),
    ]
    assert t.outcome["deal"] and t.outcome["points"] == {"Player_1": 8, "Player_2": 6}
    assert t.outcome["reported_reward"] == {"Player_1": 8, "Player_2": 6}
    rec = t.record()
    assert rec["instance"]["id"] == rec["instance_id"] and rec["events"][0]["round"] == 0


def test_one_side_is_completed_from_agreement_and_tagged_format(tmp_path):
    (a,) = load_dond_dialogues(write(tmp_path, [RAW_A], "data.txt"))
    assert a.complete and a.outcome["proposals"] == {"Player_1": [0, 4, 0], "Player_2": [1, 0, 1]}
    t, n = load_dond_dialogues(write(tmp_path, [TAGGED, NO_DEAL], "val.txt"), action_format="json")
    assert t.complete and t.outcome["points"] == {"Player_1": 6, "Player_2": 8}
    assert t.events[-1].content == '{"type": "propose", "books": 0, "hats": 4, "balls": 0}'
    assert not n.complete and n.outcome["status"] == "no_agreement" and not n.outcome["deal"]
    assert all(e.meta["kind"] == "message" for e in n.events)
    assert load_dond_dialogues(write(tmp_path, [TAGGED, NO_DEAL], "v.txt"), only_complete=True)[0].complete


@pytest.mark.parametrize("line, what", [
    (RAW_A.replace("reward=6 agree", "reward=6 maybe"), "not a Deal or No Deal data.txt line"),
    (RAW_A.replace("THEM: i would", "HIM: i would"), "does not start with 'YOU:' or 'THEM:'"),
    (RAW_A.replace("item1=0", "item1=x"), "item0=N item1=N item2=N"),
    (RAW_A.replace("1 4 4 1 1 2 THEM", "1 4 4 1 1 3 THEM"), "worth 11"),
    (TAGGED.replace("</output>", ""), "missing <output>"),
    (TAGGED.replace("item0=0 item1=4 item2=0 ", ""), "must hold 6 tokens"),
    (TAGGED.replace("THEM: ok", "YOU: ok"), "do not alternate"),
    (TAGGED.replace("YOU: <selection>", "THEM: <selection>"), "do not alternate"),
])
def test_dialogue_loader_errors_name_the_line(tmp_path, line, what):
    p = write(tmp_path, [RAW_B, line], "bad.txt")
    with pytest.raises(ConfigError) as e:
        load_dond_dialogues(p)
    assert "line 2" in str(e.value) and what in str(e.value) and str(p) in str(e.value)


def _replay(transcript, fmt="text", flip=False):
    game = DealOrNoDealGame(DondConfig(action_format=fmt, max_turns=100))
    st = game.reset(transcript.instance, make_seats(), random.Random(0), flip=flip)
    swap = {"Player_1": "Player_2", "Player_2": "Player_1"} if flip else {}
    for e in transcript.events:
        p = swap.get(e.player, e.player)
        assert game.to_act(st) == [p]
        assert game.act(st, p, Action(text=e.content)).accepted
    out = game.outcome(st).metrics
    return {swap.get(p, p): v for p, v in out["points"].items()}, out["deal"]


def test_real_data_txt_sample(tmp_path):
    lines = data_file("data.txt").read_text(encoding="utf-8").splitlines()[:400]
    ts = load_dond_dialogues(write(tmp_path, lines, "data.txt"))
    assert 190 <= len(ts) <= 210   # ~two sides per game
    assert sum(len(t.source["lines"]) == 2 for t in ts) > 180
    checked = 0
    for t in ts:
        for p, r in t.outcome["reported_reward"].items():
            if r is not None and t.outcome["status"] == "agree":
                assert t.outcome["points"][p] == r   # our scoring == upstream reward
                checked += 1
    assert checked > 250
    for t in [t for t in ts if t.complete][:40]:   # transcripts replay through the game exactly
        for flip in (False, True):
            assert _replay(t, flip=flip) == (t.outcome["points"], t.outcome["deal"])


def test_real_val_txt():
    ts = load_dond_dialogues(data_file("val.txt"), action_format="json")
    assert 500 < len(ts) < 600 and all(len(t.source["lines"]) in (1, 2) for t in ts)
    status = {t.outcome["status"] for t in ts}
    assert {"agree", "disagree", "no_agreement"} <= status
    for t in [t for t in ts if t.complete][:20]:
        assert _replay(t, fmt="json") == (t.outcome["points"], t.outcome["deal"])
    ids = [t.instance.id for t in ts]
    assert len(ids) == len(set(ids))
    test_ids = {t.instance.id for t in load_dond_dialogues(data_file("val.txt"), split="test")}
    train_keys = {t.instance.scenario_key() for t in load_dond_dialogues(data_file("val.txt"), split="train")}
    assert test_ids and not any(t.instance.scenario_key() in train_keys for t in ts if t.instance.id in test_ids)


# -- source registry ----------------------------------------------------------------------------
def test_sources_registry_and_strict_args(tmp_path, monkeypatch):
    assert {"dond_generated", "dond_selfplay", "dond_dialogues"} <= set(NEGOTIATION_SOURCES.names())
    gen = load_instances("dond_generated", {"n": 10, "seed": 2})
    assert gen == generate_instances(10, seed=2)
    test_only = load_instances("dond_generated", {"n": 10}, split="test")
    assert len(test_only) == 10 and all(scenario_split(x.scenario_key()) == "test" for x in test_only)
    write(tmp_path, GOOD)
    got = load_instances("dond_selfplay", {"path": "ctx.txt"}, limit=1, base_dir=tmp_path)
    assert len(got) == 1 and isinstance(got[0], DondInstance)
    with pytest.raises(ConfigError, match="dataset.args.pth: unknown key"):
        load_instances("dond_selfplay", {"pth": "x"})
    monkeypatch.setenv("SPARRING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARRING_DATA_DIR", raising=False)
    with pytest.raises(SparringError, match="give dataset.args.path, or set SPARRING_DATA_DIR.*sparring data fetch "
                                            "dond-contexts"):
        load_instances("dond_selfplay", {})
    monkeypatch.setenv("SPARRING_DATA_DIR", str(tmp_path))
    (tmp_path / "selfplay.txt").write_text((tmp_path / "ctx.txt").read_text())
    assert load_instances("dond_selfplay", {}, limit=1) == got  # found in SPARRING_DATA_DIR
    with pytest.raises(KeyError, match="dond_selfplay"):
        load_instances("dond_selfply", {})


def test_scenario_key_is_seat_order_free():
    a = DondInstance(id="a", counts=(1, 1, 3), values=((4, 3, 1), (0, 4, 2)))
    assert a.scenario_key() == a.swapped().scenario_key() == scenario_key((1, 1, 3), ((0, 4, 2), (4, 3, 1)))
    assert PLAYERS == ("Player_1", "Player_2")


def test_transcripts_replay_through_the_replay_backend(tmp_path):
    """Transcripts' `record()`s, as a JSONL file, drive the replay backend the way the engine asks
    it: tag = the action-spec tag ("turn"), index = accepted turns of that player so far."""
    import json

    from sparring.models.replay import ReplayModel
    from sparring.types import GenerateRequest

    ts = load_dond_dialogues(write(tmp_path, [RAW_A, RAW_B, TAGGED], "data.txt"), only_complete=True)
    path = tmp_path / "transcripts.jsonl"
    path.write_text("".join(json.dumps(t.record()) + "\n" for t in ts), encoding="utf-8")
    model = ReplayModel(path=str(path))
    for t in ts:
        game = DealOrNoDealGame()
        st = game.reset(t.instance, make_seats(), random.Random(1))
        turns = dict.fromkeys(PLAYERS, 0)
        while not game.is_over(st):
            (p,) = game.to_act(st)
            spec = game.action_spec(st, p)
            req = GenerateRequest(messages=game.observation(st, p),
                                  context={"instance_id": t.instance.id, "player": p, "tag": spec.tag,
                                           "index": turns[p]})
            assert game.act(st, p, Action(text=model.generate([req])[0][0].text)).accepted
            turns[p] += 1
        assert game.outcome(st).metrics["points"] == t.outcome["points"]
