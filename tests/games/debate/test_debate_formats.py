"""Turn order and termination of every format; side assignment, flips, open-debate choice."""

from __future__ import annotations

import random

import pytest
from debate_helpers import game, instance, play, seats, start
from pydantic import ValidationError

from sparring.errors import ConfigError, EpisodeAbort
from sparring.gameapi.game import GAMES, Action

A, B, C, J = ("Debater_A",), ("Debater_B",), ("Consultant",), ("Judge",)


def test_registered_and_players_per_format():
    assert GAMES.get("debate") is type(game())
    assert game(format="debate").players() == {"Debater_A": "debater", "Debater_B": "debater", "Judge": "judge"}
    assert game(format="consultancy").players() == {"Consultant": "debater", "Judge": "judge"}
    assert game(format="empty").players() == {"Judge": "judge"}
    assert set(game(format="open_debate").players()) == {"Debater_A", "Debater_B", "Judge"}


@pytest.mark.parametrize("fmt,order,expected", [
    ("debate", "sequential", [(A, "speech"), (B, "speech")] * 2 + [(J, "verdict")]),
    ("debate", "simultaneous", [(A + B, "speech")] * 2 + [(J, "verdict")]),
    ("consultancy", "sequential", [(C, "speech")] * 2 + [(J, "verdict")]),
    ("double_consultancy", "sequential", [(A + B, "speech")] * 2 + [(J, "verdict")]),
    ("open_debate", "sequential", [(A, "choose")] + [(A, "speech"), (B, "speech")] * 2 + [(J, "verdict")]),
    ("empty", "sequential", [(J, "verdict")]),
])
def test_turn_order_and_termination(fmt, order, expected):
    g = game(format=fmt, order=order, rounds=2)
    st = start(g)
    assert play(g, st) == expected
    assert g.is_over(st) and g.to_act(st) == []
    assert g.outcome(st).status == "complete"


def test_rounds_and_judge_extras_in_schedule():
    g = game(format="consultancy", rounds=3, judge_questions=True, judge_reasoning=True)
    st = start(g)
    assert play(g, st) == [(C, "speech"), (J, "question"), (C, "speech"), (J, "question"), (C, "speech"),
                           (J, "reasoning"), (J, "verdict")]


def test_debate_positions_random_per_question_and_flip_swaps():
    g = game(format="debate")
    firsts = set()
    for i in range(20):
        inst = instance(id=f"q{i}")
        st, fl = start(g, inst), start(g, inst, flip=True)
        assert st.player_answer["Debater_A"] == 1 - fl.player_answer["Debater_A"]
        assert st.player_answer["Debater_B"] == 1 - st.player_answer["Debater_A"]
        # per question: the same whatever the episode RNG
        assert start(g, inst, seed=99).player_answer == st.player_answer
        firsts.add(st.player_answer["Debater_A"])
    assert firsts == {0, 1}


def test_episode_and_fixed_assignment():
    g = game(format="debate", assignment="fixed")
    assert start(g).player_answer == {"Debater_A": 0, "Debater_B": 1}
    assert start(g, flip=True).player_answer == {"Debater_A": 1, "Debater_B": 0}
    g = game(format="debate", assignment="episode")
    seen = {start(g, seed=s).player_answer["Debater_A"] for s in range(20)}
    assert seen == {0, 1}


@pytest.mark.parametrize("prob,expect", [(1.0, True), (0.0, False)])
def test_consultant_correct_prob_and_flip(prob, expect):
    g = game(format="consultancy", consultant_correct_prob=prob)
    inst = instance(correct=1)
    st, fl = start(g, inst), start(g, inst, flip=True)
    assert st.consultant_correct is expect and fl.consultant_correct is (not expect)
    assert st.player_answer["Consultant"] == (1 if expect else 0)
    assert fl.player_answer["Consultant"] == 1 - st.player_answer["Consultant"]
    play(g, st)
    m = g.outcome(st).metrics
    assert m["consultant_correct"] is expect
    assert m["positions"] == {"Consultant": "correct" if expect else "incorrect"}


def test_consultant_correct_fraction_over_questions():
    g = game(format="consultancy", consultant_correct_prob=0.5)
    hits = sum(start(g, instance(id=f"q{i}")).consultant_correct for i in range(200))
    assert 70 < hits < 130


def test_consultancy_judge_knows_which_answer_consultant_argues():
    g = game(format="consultancy", consultant_correct_prob=0.0)
    st = start(g, instance(correct=0))  # the consultant argues answer B ("Kelderby")
    system = g.observation(st, "Consultant")[0].content
    assert "Kelderby" in system
    play(g, st, verdict={"Answer_A": 0.3, "Answer_B": 0.7})
    assert "answer B" in g.observation(st, "Judge")[0].content
    out = g.outcome(st)
    assert out.rewards["Consultant"] == pytest.approx(0.7)
    assert out.winner == "Consultant" and out.metrics["p_correct"] == pytest.approx(0.3)


@pytest.mark.parametrize("reply,letter", [("B", "B"), ("I choose answer A.", "A"), ("Kelderby", "B"),
                                          ("Debater will defend B | 90%", "B")])
def test_open_debate_choice_parsing(reply, letter):
    g = game(format="open_debate")
    st = start(g)
    assert g.action_spec(st, "Debater_A").tag == "choose"
    assert g.act(st, "Debater_A", Action(text=reply)).accepted
    ans = "AB".index(letter)
    assert st.player_answer == {"Debater_A": ans, "Debater_B": 1 - ans}
    assert f'"{instance().answers[ans]}"' in g.observation(st, "Debater_A")[-1].content


def test_open_debate_correction_then_abort():
    g = game(format="open_debate", max_invalid_actions=1)
    st = start(g)
    fb = g.act(st, "Debater_A", Action(text="both are fine"))
    assert not fb.accepted and fb.correction and "A or B" in fb.correction
    obs = g.observation(st, "Debater_A")
    assert [m.role for m in obs] == ["system", "user", "assistant", "user"]
    assert obs[2].content == "both are fine" and obs[3].content == fb.correction
    assert "Debater_B" not in [e.player for e in st.events if e.tag == "correction"]
    fb = g.act(st, "Debater_A", Action(text="no idea"))
    assert fb.abort and g.is_over(st)
    out = g.outcome(st)
    assert out.status == "aborted" and "Debater_A" in out.reason


def test_open_debate_records_choice_correctness_and_flip_swaps_display():
    g = game(format="open_debate")
    st = start(g, instance(correct=1))
    play(g, st, choose="B")
    m = g.outcome(st).metrics
    assert m["chose_correct"] is True and m["correct_player"] == "Debater_A"
    fl = start(g, instance(correct=1), flip=True)
    assert "A: Kelderby" in g.observation(fl, "Debater_A")[0].content
    play(g, fl, choose="B")  # B is now "Dunmere": the wrong answer
    assert g.outcome(fl).metrics["chose_correct"] is False


def test_empty_flip_swaps_display_order():
    g = game(format="empty")
    st, fl = start(g), start(g, flip=True)
    assert "A: Dunmere" in g.observation(st, "Judge")[0].content
    assert "A: Kelderby" in g.observation(fl, "Judge")[0].content
    play(g, fl, verdict={"Answer_A": 0.9, "Answer_B": 0.1})
    assert g.outcome(fl).metrics["p_correct"] == pytest.approx(0.1)


def test_missing_seat_and_wrong_prompt_set_are_config_errors():
    g = game(format="debate")
    s = seats(g)
    del s["Debater_B"]
    with pytest.raises(ConfigError, match="Debater_B"):
        g.reset(instance(), s, random.Random(0))
    cg = game(format="consultancy")
    s = seats(cg)
    s["Consultant"] = seats(game(format="debate"))["Debater_A"]
    with pytest.raises(ConfigError, match="consultancy"):
        cg.reset(instance(), s, random.Random(0))
    og = game(format="open_debate")
    s = seats(og)
    s["Debater_A"] = seats(game(format="debate"))["Debater_A"]
    with pytest.raises(ConfigError, match="choose"):
        og.reset(instance(), s, random.Random(0))


def test_acting_out_of_turn_aborts_episode():
    g = game(format="debate")
    st = start(g)
    with pytest.raises(EpisodeAbort, match="out of turn"):
        g.act(st, "Debater_B", Action(text="too early"))


def test_config_is_strict():
    with pytest.raises(ValidationError, match="extra"):
        game(formatt="debate")
    with pytest.raises(ValidationError, match="needs debaters"):
        game(format="empty", judge_questions=True)


def test_open_debate_views_requested_before_the_choice_are_refreshed():
    g = game(format="open_debate", variant=0)
    st = start(g)
    g.observation(st, "Debater_B")
    g.observation(st, "Judge")
    g.act(st, "Debater_A", Action(text="B"))
    assert "You argue that the answer is: Dunmere" in g.observation(st, "Debater_B")[0].content
    judge = g.evaluation(st, "Judge")[0][0].content
    assert "A: Kelderby" in judge and "B: Dunmere" in judge
