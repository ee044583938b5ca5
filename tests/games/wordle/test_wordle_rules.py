"""Wordle rules on hand-played episodes: scoring, corrections, aborts, the critic, no leaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.gameapi.game import Action, DatasetConfig
from sparring.games.wordle.words import Lexicon, word_split


def test_win_at_guess_n_scores_100_over_n(table):
    t = table("wordle", "crane")
    assert t.act("Guesser", "EXPLANATION: common letters\nGUESS: about").accepted
    assert t.act("Guesser", "GUESS: trace").accepted
    assert t.act("Guesser", "guess: CRANE").accepted
    assert t.game.is_over(t.state)
    out = t.game.outcome(t.state)
    assert out.status == "complete" and out.metrics["success"] and out.metrics["n_guesses"] == 3
    assert out.metrics["quality_score"] == pytest.approx(100 / 3)
    assert out.rewards == {"Guesser": pytest.approx(1 / 3)}
    assert out.metrics["patterns"][-1] == "GGGGG"
    gains = out.metrics["info_gain"]
    assert len(gains) == 3 and all(g >= 0 for g in gains) and out.metrics["remaining"][-1] == 1


def test_six_misses_lose_with_quality_zero(table):
    t = table("wordle", "crane")
    for w in ["about", "other", "which", "their", "would", "there"]:
        assert t.act("Guesser", f"GUESS: {w}").accepted
    out = t.game.outcome(t.state)
    assert t.game.is_over(t.state) and out.status == "complete" and out.metrics["lose"]
    assert out.metrics["quality_score"] == 0 and out.rewards["Guesser"] == 0


def test_invalid_words_get_a_correction_and_three_in_a_row_abort(table):
    t = table("wordle", "crane")
    fb = t.act("Guesser", "GUESS: zzzzz")
    assert not fb.accepted and fb.abort is None and "ZZZZZ" in fb.correction
    assert "ZZZZZ" in t.seen("Guesser")  # the rejected reply and its correction are shown to the actor
    fb = t.act("Guesser", "GUESS: crab")
    assert not fb.accepted and "five letters" in fb.correction
    fb = t.act("Guesser", "I do not know")
    assert not fb.accepted and fb.abort and t.game.is_over(t.state)
    out = t.game.outcome(t.state)
    assert out.status == "aborted" and out.metrics["aborted"] and out.metrics["quality_score"] == 0
    assert out.metrics["n_invalid_total"] == 3


def test_a_valid_guess_resets_the_error_count(table):
    t = table("wordle", "crane", max_errors=2)
    assert not t.act("Guesser", "GUESS: zzzzz").accepted
    assert t.act("Guesser", "GUESS: about").accepted
    assert t.act("Guesser", "GUESS: qqqqq").abort is None
    assert "qqqqq" in t.seen("Guesser").lower() and "zzzzz" not in t.seen("Guesser").lower()


def test_the_guesser_never_sees_the_answer(table):
    t = table("wordle", "crane")
    for w in ["about", "other", "which", "zzzzz", "their", "would", "there", "eerie"]:
        assert "crane" not in t.seen("Guesser").lower()
        if not t.game.is_over(t.state):
            t.act("Guesser", f"GUESS: {w}")
    assert "crane" not in t.seen("Guesser").lower()


def test_critic_reviews_each_proposal_and_the_final_guess_counts(table):
    t = table("wordle_withcritic", "crane")
    assert t.game.players() == {"Guesser": "guesser", "Critic": "critic"}
    assert t.game.to_act(t.state) == ["Guesser"] and t.game.action_spec(t.state, "Guesser").tag == "guess"
    assert t.act("Guesser", "EXPLANATION: vowels first\nGUESS: about").accepted
    assert t.game.to_act(t.state) == ["Critic"]
    critic_view = t.seen("Critic")
    assert "ABOUT" in critic_view and "vowels first" in critic_view and "crane" not in critic_view.lower()
    assert not t.act("Critic", "looks fine").accepted  # no verdict: corrected
    assert t.act("Critic", "VERDICT: change\nREASON: try common consonants").accepted
    assert "common consonants" in t.seen("Guesser")
    assert t.game.action_spec(t.state, "Guesser").tag == "final_guess"
    assert t.act("Guesser", "GUESS: trace").accepted
    assert t.game.to_act(t.state) == ["Guesser"] and len(t.state.guesses) == 1
    t.act("Guesser", "GUESS: crane")
    assert "TRACE" in t.seen("Critic")  # the critic learns the feedback of the final guess
    t.act("Critic", "VERDICT: keep")
    t.act("Guesser", "GUESS: crane")
    out = t.game.outcome(t.state)
    assert out.metrics["guesses"] == ["trace", "crane"] and out.metrics["quality_score"] == 50
    assert out.metrics["critic_change"] == 1 and out.metrics["critic_keep"] == 1
    assert out.metrics["guesser_changed"] == 1 and out.metrics["followed_critic"] == 2
    assert out.rewards == {"Guesser": 0.5, "Critic": 0.5}


def test_acting_out_of_turn_is_an_error(table):
    t = table("wordle_withcritic", "crane")
    with pytest.raises(ValueError):
        t.act("Critic", "VERDICT: keep")


def test_sources_splits_and_word_list():
    from sparring.gameapi.game import GAMES

    game = GAMES.get("wordle")()
    lex = Lexicon.shipped()
    assert len(lex.targets) >= 1000 and len(lex.guesses) > len(lex.targets)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in lex.targets)
    test = game.load_instances(DatasetConfig(name="words", split="test"), Path("."))
    train = game.load_instances(DatasetConfig(name="words", split="train"), Path("."))
    assert test and train and not {i.target for i in test} & {i.target for i in train}
    assert all(word_split(i.target) == "test" for i in test)
    again = game.load_instances(DatasetConfig(name="words", split="test", limit=5, seed=3), Path("."))
    assert [i.id for i in again] == [i.id for i in game.load_instances(
        DatasetConfig(name="words", split="test", limit=5, seed=3), Path("."))]
    assert len(again) == 5
    listed = game.load_instances(DatasetConfig(name="list", args={"targets": ["Crane", "zzyzx"]}), Path("."))
    assert [i.target for i in listed] == ["crane", "zzyzx"]
    with pytest.raises(ConfigError):
        game.load_instances(DatasetConfig(name="list", args={"targets": ["cranes"]}), Path("."))
    with pytest.raises(ConfigError):
        game.load_instances(DatasetConfig(name="nope"), Path("."))


def test_clembench_layout(tmp_path):
    from sparring.gameapi.game import GAMES

    f = tmp_path / "instances.json"
    f.write_text('{"experiments": [{"name": "high_frequency_words_no_clue_no_critic", "game_instances": ['
                 '{"game_id": 0, "target_word": "fluff", "target_word_clue": "x"},'
                 '{"game_id": 1, "target_word": "crane"}]}]}')
    inst = GAMES.get("wordle")().load_instances(DatasetConfig(name="clembench", args={"path": "instances.json"}),
                                                tmp_path)
    assert [i.target for i in inst] == ["fluff", "crane"]
    assert inst[0].id == "clembench-high_frequency_words_no_clue_no_critic-0"


def test_an_answer_outside_the_word_list_is_still_guessable(table):
    t = table("wordle", "zzyzx")
    assert t.act("Guesser", "GUESS: zzyzx").accepted
    assert t.game.outcome(t.state).metrics["success"]


def test_fork_is_independent(table):
    t = table("wordle_withcritic", "crane")
    t.act("Guesser", "GUESS: about")
    copy = t.game.fork(t.state)
    t.game.act(copy, "Critic", Action(text="VERDICT: keep"))
    assert t.game.to_act(t.state) == ["Critic"] and t.game.to_act(copy) == ["Guesser"]
    assert len(t.state.events) < len(copy.events) and len(t.state.views["Critic"]) < len(copy.views["Critic"])


def test_the_guessers_and_critics_views_depend_only_on_the_feedback(table):
    """Two answers giving the same feedback to the same guesses: identical observations."""
    a, b = table("wordle_withcritic", "crane"), table("wordle_withcritic", "crate")
    for t in (a, b):
        assert t.act("Guesser", "GUESS: early").accepted  # no N, no T: the same feedback for both
        t.act("Critic", "VERDICT: keep")
        t.act("Guesser", "GUESS: early")
        t.act("Guesser", "GUESS: house")
    for p in ("Guesser", "Critic"):
        assert a.game.observation(a.state, p) == b.game.observation(b.state, p)


def test_prefill_starts_guesses_and_verdicts_with_the_marker(table):
    t = table("wordle_withcritic", "crane", prefill=True)
    assert t.game.action_spec(t.state, "Guesser").assistant_prefix == "GUESS: "
    assert t.act("Guesser", "crane").accepted
    assert t.game.action_spec(t.state, "Critic").assistant_prefix == "VERDICT: "
    assert t.act("Critic", "keep").accepted
    assert t.act("Guesser", "GUESS: crane").accepted
    assert t.state.views["Guesser"][2].content == "GUESS: crane"
    assert t.game.outcome(t.state).metrics["quality_score"] == 100


@pytest.mark.parametrize(("text", "word"), [("GUESS: crane", "crane"), ("explanation: vowels\nguess: **Crane**", "crane"),
                                            ("crane.", "crane"), ("GUESS: about\nGUESS: crane", "crane")])
def test_guess_parsing(text, word):
    from sparring.games.wordle.protocol import parse_guess

    assert parse_guess(text).word == word


@pytest.mark.parametrize("text", ["GUESS:", "GUESS: 12", "I think so", ""])
def test_malformed_guesses(text):
    from sparring.games.wordle.protocol import ParseError, parse_guess

    with pytest.raises(ParseError):
        parse_guess(text)
