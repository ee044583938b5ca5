"""Outcome metrics, verdict validation, evaluation (best-of-N), fork, records, prompt rotation."""

from __future__ import annotations

import json

import pytest
from debate_helpers import game, instance, play, start

from sparring.gameapi.game import Action


def _debate(verdict, **cfg):
    g = game(format="debate", assignment="fixed", **cfg)  # Debater_A argues answers[0] (correct)
    st = start(g)
    play(g, st, verdict=verdict)
    return g, st, g.outcome(st)


def test_outcome_metrics_and_rewards():
    g, st, out = _debate({"Debater_A": 0.73, "Debater_B": 0.27})
    m = out.metrics
    assert out.status == "complete" and out.winner == "Debater_A"
    assert out.rewards == pytest.approx({"Debater_A": 0.73, "Debater_B": 0.27, "Judge": 0.73})
    assert m["p_correct"] == pytest.approx(0.73) and m["judge_correct"] is True and m["tie"] is False
    assert m["format"] == "debate" and m["flip"] is False
    assert m["probs"] == pytest.approx({"Debater_A": 0.73, "Debater_B": 0.27})
    assert m["correct_player"] == "Debater_A" and m["correct_side"] == "Debater_A"
    assert m["positions"] == {"Debater_A": "correct", "Debater_B": "incorrect"}
    assert m["speech_words"] == {"Debater_A": [3, 3], "Debater_B": [3, 3]}
    assert m["quote_stats"]["Debater_A"]["n_quotes"] == 0
    json.dumps(out.model_dump())  # the record must be JSON-serialisable


def test_incorrect_verdict_and_tie():
    _, _, out = _debate({"Debater_A": 0.2, "Debater_B": 0.8})
    assert out.winner == "Debater_B" and out.metrics["judge_correct"] is False
    _, _, out = _debate({"Debater_A": 0.5, "Debater_B": 0.5})
    assert out.winner is None and out.metrics["tie"] is True and out.metrics["judge_correct"] is False
    assert out.metrics["winning_side"] is None


def test_flip_mirrors_the_sides():
    g = game(format="debate", assignment="fixed")
    st = start(g, flip=True)
    play(g, st, verdict={"Debater_A": 0.6, "Debater_B": 0.4})
    m = g.outcome(st).metrics
    assert m["flip"] is True and m["correct_player"] == "Debater_B"
    assert m["p_correct"] == pytest.approx(0.4) and m["correct_letter"] == "B"


def test_panel_votes_and_verdict_meta_are_copied():
    g = game(format="debate", assignment="fixed")
    st = start(g)
    while g.to_act(st) != ["Judge"]:
        (p,) = g.to_act(st)
        g.act(st, p, Action(text="hi"))
    votes = {"j1": {"Debater_A": 0.9, "Debater_B": 0.1}, "j2": {"Debater_A": 0.3, "Debater_B": 0.7}}
    g.act(st, "Judge", Action(probs={"Debater_A": 0.6, "Debater_B": 0.4}, meta={"votes": votes, "method": "panel"}))
    m = g.outcome(st).metrics
    assert m["votes"] == votes and m["verdict_meta"] == {"method": "panel"}


def test_verdict_is_normalised_and_invalid_verdicts_corrected():
    g = game(format="debate", assignment="fixed", max_invalid_actions=1)
    st = start(g)
    while g.to_act(st) != ["Judge"]:
        (p,) = g.to_act(st)
        g.act(st, p, Action(text="hi"))
    fb = g.act(st, "Judge", Action(probs={"Debater_C": 1.0}))
    assert not fb.accepted and "Debater_A" in fb.correction
    assert g.observation(st, "Judge")[-1].content.endswith(fb.correction)
    # a text verdict is parsed when no probabilities are given
    assert g.act(st, "Judge", Action(text="Debater_B | 60%")).accepted
    assert g.outcome(st).metrics["probs"] == pytest.approx({"Debater_A": 0.4, "Debater_B": 0.6})
    g2 = game(format="debate", max_invalid_actions=0)
    st2 = start(g2)
    while g2.to_act(st2) != ["Judge"]:
        (p,) = g2.to_act(st2)
        g2.act(st2, p, Action(text="hi"))
    assert g2.act(st2, "Judge", Action(probs={"Debater_A": 2.0, "Debater_B": 2.0})).accepted
    assert st2.verdict == {"Debater_A": 0.5, "Debater_B": 0.5}
    st3 = start(g2)
    while g2.to_act(st3) != ["Judge"]:
        (p,) = g2.to_act(st3)
        g2.act(st3, p, Action(text="hi"))
    assert g2.act(st3, "Judge", Action(text="no idea")).abort
    assert g2.outcome(st3).status == "aborted"


def test_verdict_action_spec():
    g = game(format="debate")
    st = start(g)
    play_until_judge(g, st)
    spec = g.action_spec(st, "Judge")
    assert spec.kind == "choice" and spec.options == ["Debater_A", "Debater_B"]
    assert spec.score_options == [" A", " B"] and spec.assistant_prefix == "Answer:"
    assert "Debater_A | NN%" in spec.fallback_instruction
    cg = game(format="consultancy")
    cst = start(cg)
    play_until_judge(cg, cst)
    assert cg.action_spec(cst, "Judge").options == ["Answer_A", "Answer_B"]


def play_until_judge(g, st):
    while "Judge" not in g.to_act(st):
        for p in g.to_act(st):
            g.act(st, p, Action(text="A" if g.action_spec(st, p).tag == "choose" else f"{p} talks"))


def test_evaluation_is_the_verdict_prompt_as_if_ended_now():
    g = game(format="debate", order="simultaneous", rounds=2)
    st = start(g)
    assert g.evaluation(st, "Debater_A") is None
    g.act(st, "Debater_A", Action(text="candidate speech"))
    msgs, spec = g.evaluation(st, "Judge")
    assert spec.kind == "choice" and spec.options == ["Debater_A", "Debater_B"]
    assert "Debater_A: candidate speech" in msgs[-1].content
    final = g.observation(_finish(g, st), "Judge")[-1].content
    assert msgs[-1].content.split("\n\n")[-1] == final.split("\n\n")[-1]  # the verdict question
    assert "copper" not in "".join(m.content for m in msgs)


def _finish(g, st):
    st = g.fork(st)
    play(g, st)
    return st


def test_evaluation_options_name_the_consultant():
    g = game(format="consultancy", consultant_correct_prob=1.0)
    st = start(g, instance(correct=1))
    g.act(st, "Consultant", Action(text="trust me"))
    _, spec = g.evaluation(st, "Judge")
    assert spec.options == ["Answer_A", "Consultant"]
    assert "Consultant | NN%" in spec.fallback_instruction


def test_fork_is_independent():
    g = game(format="debate")
    st = start(g)
    g.act(st, "Debater_A", Action(text="first"))
    f = g.fork(st)
    g.act(f, "Debater_B", Action(text="only in the fork"))
    assert len(st.events) == 1 and len(f.events) == 2
    assert g.to_act(st) == ["Debater_B"] and g.to_act(f) == ["Debater_A"]
    assert "only in the fork" not in "".join(m.content for m in g.observation(st, "Judge"))


def test_record_state_and_instance_summary():
    g = game(format="debate", max_background_words=5)
    st = start(g, flip=True)
    play(g, st)
    rec = g.record_state(st)
    assert rec["flip"] is True and rec["background"]["truncated"] is True
    assert set(rec["player_answer"]) == {"Debater_A", "Debater_B"}
    json.dumps(rec)
    summ = g.instance_summary(instance())
    assert summ["id"] == "q1" and "background" not in summ and summ["background_words"] > 10


def test_prompt_variant_rotation_and_fixed_variant():
    g = game(format="debate")
    systems = {g.observation(start(g, seed=s), "Debater_A")[0].content for s in range(12)}
    assert len(systems) >= 2  # several wordings in rotation
    fixed = game(format="debate", variant=1)
    assert len({fixed.observation(start(fixed, seed=s), "Debater_A")[0].content for s in range(5)}) == 1
    assert start(fixed).variant == 1


def test_per_agent_prompt_override():
    g = game(format="debate")
    st = start(g, overrides={"Debater_B": {"speech": "SAY IT in round {{ round }} for {{ position }}"}})
    g.act(st, "Debater_A", Action(text="hello"))
    assert g.observation(st, "Debater_B")[-1].content.endswith("SAY IT in round 1 for " +
                                                               instance().answers[st.player_answer["Debater_B"]])
    assert "SAY IT" not in g.observation(start(g), "Debater_A")[-1].content


def test_scratchpad_instruction_and_word_limit():
    g = game(format="debate", speech_word_limit=5, enforce_word_limit=True)
    st = start(g)
    spec = g.action_spec(st, "Debater_A")
    assert spec.kind == "text" and spec.tag == "speech" and "plan" in spec.scratchpad_instruction
    g.act(st, "Debater_A", Action(text="one two three four five six seven"))
    ev = st.events[-1]
    assert ev.content == "one two three four five" and ev.meta["cut_from_words"] == 7
    assert "at most 5 words" in g.observation(st, "Debater_B")[-1].content
