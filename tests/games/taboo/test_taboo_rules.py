"""Taboo rules on hand-played episodes: rounds, quality, violations, malformed replies, no leaks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.gameapi.game import GAMES, DatasetConfig
from sparring.games.taboo.instance import WORDS_FILE, word_split

TABOO = ["jog", "sprint", "race"]


def test_success_in_round_n_scores_100_over_n(table):
    t = table("run", TABOO)
    assert t.game.to_act(t.state) == ["Describer"] and t.game.action_spec(t.state, "Describer").tag == "clue"
    assert t.act("Describer", "CLUE: what legs do when you are late").accepted
    assert t.game.to_act(t.state) == ["Guesser"] and t.game.action_spec(t.state, "Guesser").tag == "guess"
    assert t.act("Guesser", "GUESS: walk").accepted
    assert "walk" in t.seen("Describer")  # the describer learns the wrong guess
    assert t.act("Describer", "CLUE: faster than walking").accepted
    assert t.act("Guesser", "GUESS: Run.").accepted
    out = t.game.outcome(t.state)
    assert t.game.is_over(t.state) and out.status == "complete" and out.metrics["success"]
    assert out.metrics["quality_score"] == 50 and out.rewards == {"Describer": 0.5, "Guesser": 0.5}
    assert out.metrics["guesses"] == ["walk", "run"] and out.metrics["rounds"] == 2


def test_three_wrong_guesses_fail_with_quality_zero(table):
    t = table("run", TABOO)
    for guess in ("walk", "hop", "skip"):
        t.act("Describer", "CLUE: legs move quickly")
        t.act("Guesser", f"GUESS: {guess}")
    out = t.game.outcome(t.state)
    assert t.game.is_over(t.state) and out.status == "complete" and out.metrics["lose"]
    assert out.metrics["quality_score"] == 0 and not out.metrics["success"]


def test_an_inflection_of_the_target_aborts_and_records_the_word(table):
    t = table("run", TABOO)
    fb = t.act("Describer", "CLUE: You do it when running a marathon")
    assert not fb.accepted and fb.abort and t.game.is_over(t.state)
    out = t.game.outcome(t.state)
    assert out.status == "aborted" and out.metrics["aborted"] and not out.metrics["played"]
    assert out.metrics["violation"] == {"player": "Describer", "word": "running", "matched": "run", "kind": "target"}
    assert out.metrics["abort_kind"] == "taboo_word" and out.metrics["quality_score"] == 0
    assert out.rewards == {"Describer": 0.0, "Guesser": 0.0}
    violation = [e for e in t.game.events(t.state) if e.tag == "violation"]
    assert violation and violation[0].meta["word"] == "running" and violation[0].visible_to == ["Describer"]
    assert "marathon" not in t.seen("Guesser")  # the violating clue never reaches the guesser


def test_a_taboo_word_in_a_later_round_aborts(table):
    t = table("run", TABOO)
    t.act("Describer", "CLUE: legs move quickly")
    t.act("Guesser", "GUESS: walk")
    fb = t.act("Describer", "CLUE: like JOGGING but faster!")
    assert fb.abort and t.game.outcome(t.state).metrics["violation"]["matched"] == "jog"


def test_a_malformed_guess_aborts_by_default(table):
    t = table("run", TABOO)
    t.act("Describer", "CLUE: legs move quickly")
    fb = t.act("Guesser", "I think it is walk or run")
    assert fb.abort and t.game.outcome(t.state).metrics["abort_kind"] == "malformed_guess"
    t = table("run", TABOO)
    t.act("Describer", "CLUE: legs move quickly")
    assert t.act("Guesser", "GUESS: walk or run").abort  # one word only


def test_max_errors_allows_corrections(table):
    t = table("run", TABOO, max_errors=2)
    fb = t.act("Describer", "CLUE:")
    assert not fb.accepted and fb.abort is None and fb.correction
    assert t.act("Describer", "CLUE: legs move quickly").accepted
    fb = t.act("Guesser", "hmm")
    assert not fb.accepted and fb.abort is None and "GUESS:" in fb.correction and "hmm" in t.seen("Guesser")
    assert t.act("Guesser", "GUESS: run").accepted
    out = t.game.outcome(t.state)
    assert out.metrics["success"] and out.metrics["quality_score"] == 100 and out.metrics["n_invalid_total"] == 2


def test_the_guesser_never_sees_the_target_or_taboo_words(table):
    t = table("run", TABOO)
    for clue, guess in (("legs move quickly", "walk"), ("what you do late for a bus", "hurry")):
        view = t.seen("Guesser").lower()
        assert not any(w in view.split() for w in ["run", *TABOO]) and "jog" not in view and "sprint" not in view
        t.act("Describer", f"CLUE: {clue}")
        t.act("Guesser", f"GUESS: {guess}")
    describer = t.seen("Describer")
    assert "run" in describer and all(w in describer for w in TABOO)  # the describer sees them all
    guesser = t.seen("Guesser").lower()
    assert "sprint" not in guesser and "jog" not in guesser and "race" not in guesser


def test_shipped_words_bands_and_splits():
    data = json.loads(WORDS_FILE.read_text())["words"]
    assert len(data) >= 150 and all(len(w["taboo"]) == 3 for w in data)
    bands = {b: [w for w in data if w["band"] == b] for b in ("high", "medium", "low")}
    assert all(len(v) >= 45 for v in bands.values())
    assert len({w["word"] for w in data}) == len(data)
    game = GAMES.get("taboo")()
    test = game.load_instances(DatasetConfig(name="taboo_words", split="test"), Path("."))
    train = game.load_instances(DatasetConfig(name="taboo_words", split="train"), Path("."))
    assert test and train and not {i.target for i in test} & {i.target for i in train}
    assert all(word_split(i.target) == "test" for i in test)
    low = game.load_instances(DatasetConfig(name="taboo_words", args={"bands": ["low"]}, limit=5), Path("."))
    assert len(low) == 5 and all(i.band == "low" for i in low)
    with pytest.raises(ConfigError):
        game.load_instances(DatasetConfig(name="taboo_words", args={"bands": ["rare"]}), Path("."))


def test_clembench_instances_layout(tmp_path):
    (tmp_path / "instances.json").write_text(json.dumps({"experiments": [
        {"name": "high_en", "game_instances": [{"game_id": 0, "target_word": "length",
                                                 "related_word": ["stretch", "size", "measure"]}]},
        {"name": "low_en", "game_instances": [{"game_id": 7, "target_word": "ambiguity",
                                                "related_word": ["vague", "unclear"]}]}]}))
    game = GAMES.get("taboo")()
    inst = game.load_instances(DatasetConfig(name="clembench", args={"path": "instances.json"}), tmp_path)
    assert [(i.id, i.target, i.band) for i in inst] == [("clembench-high_en-0", "length", "high_en"),
                                                         ("clembench-low_en-7", "ambiguity", "low_en")]
    assert inst[0].taboo == ["stretch", "size", "measure"]
    only = game.load_instances(DatasetConfig(name="clembench", args={"path": "instances.json",
                                                                     "experiments": ["low_en"]}), tmp_path)
    assert [i.target for i in only] == ["ambiguity"]


def test_fork_is_independent(table):
    from sparring.gameapi.game import Action

    t = table("run", TABOO)
    t.act("Describer", "CLUE: legs move quickly")
    copy = t.game.fork(t.state)
    t.game.act(copy, "Guesser", Action(text="GUESS: run"))
    assert t.game.is_over(copy) and not t.game.is_over(t.state)
    assert t.state.guesses == [] and copy.guesses == ["run"] and len(t.state.views["Guesser"]) == 2


def test_the_guessers_view_does_not_depend_on_the_secret(table):
    """Same clues and guesses, different target and taboo words: identical guesser observations."""
    a, b = table("run", TABOO), table("xylophone", ["mallet", "bars", "instrument"])
    for t in (a, b):
        t.act("Describer", "CLUE: legs move quickly")
        t.act("Guesser", "GUESS: walk")
        t.act("Describer", "CLUE: not slowly")
    assert a.game.observation(a.state, "Guesser") == b.game.observation(b.state, "Guesser")
    assert a.game.observation(a.state, "Describer") != b.game.observation(b.state, "Describer")


def test_prefill_starts_replies_with_the_marker(table):
    t = table("dog", ["pet", "bark", "puppy"], prefill=True)
    assert t.game.action_spec(t.state, "Describer").assistant_prefix == "CLUE: "
    assert t.act("Describer", "an animal that guards the house").accepted
    assert t.state.views["Describer"][-1].content == "CLUE: an animal that guards the house"
    assert t.game.action_spec(t.state, "Guesser").assistant_prefix == "GUESS: "
    assert t.act("Guesser", "Dog").accepted
    assert t.game.outcome(t.state).metrics["quality_score"] == 100
    t = table("dog", ["pet"], prefill=True)
    t.act("Describer", "CLUE: it barks")  # a reply that repeats the marker is taken as it is
    assert t.state.clues == ["it barks"]


@pytest.mark.parametrize(("text", "word"), [("GUESS: dog", "dog"), ("guess: Dog.", "dog"), ("Hmm.\nGUESS: **dog**", "dog"),
                                            ("GUESS:\nGUESS: dog", "dog")])
def test_guess_parsing(text, word):
    from sparring.games.taboo.game import parse_guess

    assert parse_guess(text) == word


@pytest.mark.parametrize("text", ["GUESS:", "GUESS: \nGUESS: \n", "dog", "GUESS: big dog", "GUESS: 12-3"])
def test_malformed_guesses(text):
    from sparring.games.taboo.game import MalformedReply, parse_guess

    with pytest.raises(MalformedReply):
        parse_guess(text)
