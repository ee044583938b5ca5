"""Who sees what: sequential vs simultaneous turns, judge never sees the story, chat roles."""

from __future__ import annotations

import pytest
from debate_helpers import STORY, game, play, speech, start

from sparring.errors import ConfigError
from sparring.gameapi.game import Action


def _contents(msgs, role=None):
    return "\n".join(m.content for m in msgs if role is None or m.role == role)


def test_sequential_b_sees_a_same_round_speech():
    g = game(format="debate", order="sequential", rounds=2)
    st = start(g)
    assert g.to_act(st) == ["Debater_A"]
    g.act(st, "Debater_A", Action(text=speech("Debater_A", 1)))
    assert g.to_act(st) == ["Debater_B"]
    obs_b = g.observation(st, "Debater_B")
    assert obs_b[0].role == "system"
    assert "Debater_A: Debater_A speech 1" in _contents(obs_b, "user")
    assert obs_b[-1].role == "user" and "round 1" in obs_b[-1].content.lower()


def test_simultaneous_hides_same_round_speech_until_next_round():
    g = game(format="debate", order="simultaneous", rounds=2)
    st = start(g)
    assert g.to_act(st) == ["Debater_A", "Debater_B"]
    g.act(st, "Debater_A", Action(text=speech("Debater_A", 1)))
    assert g.to_act(st) == ["Debater_B"]
    assert "Debater_A speech 1" not in _contents(g.observation(st, "Debater_B"))
    g.act(st, "Debater_B", Action(text=speech("Debater_B", 1)))
    assert g.to_act(st) == ["Debater_A", "Debater_B"]
    obs_a, obs_b = g.observation(st, "Debater_A"), g.observation(st, "Debater_B")
    assert "Debater_B: Debater_B speech 1" in _contents(obs_a, "user")
    assert "Debater_A: Debater_A speech 1" in _contents(obs_b, "user")
    # own speech comes before the opponent's same-round speech, as the speaker experienced it
    roles = [m.role for m in obs_b]
    assert roles == ["system", "user", "assistant", "user"]
    assert obs_b[2].content == "Debater_B speech 1"


def test_simultaneous_order_independent_of_who_acts_first():
    g = game(format="debate", order="simultaneous", rounds=2)
    a, b = start(g), start(g)
    g.act(a, "Debater_A", Action(text="x"))
    g.act(a, "Debater_B", Action(text="y"))
    g.act(b, "Debater_B", Action(text="y"))
    g.act(b, "Debater_A", Action(text="x"))
    for p in ("Debater_A", "Debater_B", "Judge"):
        assert g.observation(a, p) == g.observation(b, p)


def test_own_turns_are_assistant_others_user_and_observations_extend():
    g = game(format="debate", rounds=3)
    st = start(g)
    seen = {}
    while not g.is_over(st):
        (p,) = g.to_act(st)
        obs = g.observation(st, p)
        if p in seen:  # what it saw last time + its reply is a prefix of what it sees now
            prev, reply = seen[p]
            assert obs[: len(prev)] == prev
            assert obs[len(prev)].role == "assistant" and obs[len(prev)].content == reply
        if p == "Judge":
            g.act(st, p, Action(probs={"Debater_A": 0.5, "Debater_B": 0.5}))
            break
        reply = f"{p} says something new {len(st.events)}"
        seen[p] = (obs, reply)
        g.act(st, p, Action(text=reply))
        for m in g.observation(st, p):
            if m.role == "assistant":
                assert m.content.startswith(p)
            if m.role == "user":
                assert f"{p} says" not in m.content


def test_judge_never_sees_background():
    for fmt in ("debate", "consultancy", "double_consultancy", "open_debate", "empty"):
        g = game(format=fmt, rounds=2, judge_questions=fmt != "empty", judge_reasoning=True)
        st = start(g)
        play(g, st)
        assert STORY not in _contents(g.observation(st, "Judge"))
        assert "copper kettle" not in _contents(g.observation(st, "Judge"))
        ev = g.evaluation(st, "Judge")
        if ev is not None:
            assert "copper kettle" not in _contents(ev[0])
    for d in ("Debater_A", "Consultant"):
        g = game(format="consultancy" if d == "Consultant" else "debate")
        st = start(g)
        assert "copper kettle" in g.observation(st, d)[0].content


def test_judge_template_cannot_use_background():
    g = game(format="debate")
    st = start(g, overrides={"Judge": {"judge_system": "Story: {{ background }}"}})
    with pytest.raises(ConfigError, match="background"):
        g.observation(st, "Judge")


def test_double_consultancy_consultants_never_see_each_other():
    g = game(format="double_consultancy", rounds=2, judge_questions=True)
    st = start(g)
    play(g, st)
    for me, other in (("Debater_A", "Debater_B"), ("Debater_B", "Debater_A")):
        text = _contents(g.observation(st, me))
        assert f"{other} speech" not in text
        assert "Judge:" in text  # the judge's questions reach both
    judge = _contents(g.observation(st, "Judge"))
    assert "Debater_A speech 2" in judge and "Debater_B speech 2" in judge


def test_judge_sees_all_speeches_name_prefixed_and_quote_marked():
    g = game(format="debate", rounds=1)
    st = start(g)
    play(g, st, texts={"Debater_A": "Look: <quote>Mara Quill lives in Dunmere</quote>.",
                       "Debater_B": "No: <quote>Mara lives in Kelderby</quote>."})
    user = _contents(g.observation(st, "Judge"), "user")
    assert "Debater_A: Look: <quote>Mara Quill lives in Dunmere</quote>." in user
    assert "Debater_B: No: <invalid_quote>Mara lives in Kelderby</invalid_quote>." in user


def test_judge_questions_and_reasoning_flow():
    g = game(format="debate", rounds=2, judge_questions=True, judge_reasoning=True)
    st = start(g)
    turns = play(g, st, texts={"Judge:question": "Why Dunmere?", "Judge:reasoning": "A quoted well."})
    assert turns == [(("Debater_A",), "speech"), (("Debater_B",), "speech"), (("Judge",), "question"),
                     (("Debater_A",), "speech"), (("Debater_B",), "speech"), (("Judge",), "reasoning"),
                     (("Judge",), "verdict")]
    a = g.observation(st, "Debater_A")
    assert "Judge: Why Dunmere?" in _contents(a, "user")
    j = g.observation(st, "Judge")
    assert [m.role for m in j] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert j[2].content == "Why Dunmere?"
    assert j[4].content == "A quoted well."  # its reasoning, then the verdict instruction
    assert "correct" in j[5].content
    # the reasoning is private to the judge
    assert "A quoted well" not in _contents(a)
    assert g.outcome(st).metrics["judge_reasoning_words"] == 3  # "A quoted well."
