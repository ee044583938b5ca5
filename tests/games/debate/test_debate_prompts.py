"""Every template of every debate-family prompt set renders with the variables the game passes."""

from __future__ import annotations

import pytest
from debate_helpers import game, play, start

from sparring.gameapi.game import Action
from sparring.games.debate import views
from sparring.prompts import memo, prompt_set

SETS = ["judge", "debate", "consultancy", "open_debate", "empty"]
EXTRA = {"round": 1, "speaker": "Debater_A", "text": "some text", "error": "an error"}


DEBATER_TAGS = {"debater_system", "speech", "scratchpad", "choose", "choose_correction", "debater_formats"}


def _role_of(tag: str) -> str | None:
    if tag in DEBATER_TAGS:
        return "debater"
    if tag in ("speech_entry", "judge_question_entry"):
        return None  # shown to everyone
    return "judge"


@pytest.mark.parametrize("name", SETS)
def test_every_tag_and_variant_renders_with_game_variables(name):
    ps = prompt_set(name)
    for fmt in ("debate", "consultancy", "double_consultancy", "open_debate", "empty"):
        g = game(format=fmt, judge_questions=fmt != "empty", judge_reasoning=True, max_quote_words=40)
        st = start(g)
        if fmt == "open_debate":
            g.act(st, "Debater_A", Action(text="A"))
        for player, role in g.players().items():
            v = {**views.player_vars(g.config, st, player), **EXTRA}
            for tag, variants in ps.templates.items():
                if _role_of(tag) not in (None, role):
                    continue
                for i in range(len(variants)):
                    out = ps.render(tag, i, **v)
                    assert out and "{{" not in out and "{%" not in out, (name, tag, i)


def test_sets_extend_judge_and_declare_formats():
    for name in SETS:
        ps = prompt_set(name)
        assert ps.has("judge_system") and ps.has("verdict") and ps.has("judge_formats")
    for name in ("debate", "consultancy", "open_debate"):
        assert prompt_set(name).has("debater_system") and prompt_set(name).variants("speech") >= 2
        assert prompt_set(name).variants("debater_system") >= 2
    assert prompt_set("judge").variants("judge_system") >= 2 and prompt_set("judge").variants("verdict") >= 2


@pytest.mark.parametrize("fmt", ["debate", "consultancy", "double_consultancy", "open_debate", "empty"])
@pytest.mark.parametrize("variant", [0, 1, 2])
def test_full_episodes_render_in_every_variant(fmt, variant):
    extras = {} if fmt == "empty" else {"judge_questions": True}
    g = game(format=fmt, rounds=2, judge_reasoning=True, variant=variant, order="simultaneous", **extras)
    st = start(g)
    play(g, st)
    for p in g.players():
        for m in g.observation(st, p):
            assert m.content.strip() and "{{" not in m.content
    assert g.outcome(st).status == "complete"


def test_prompts_state_the_assignment():
    g = game(format="debate", variant=0, assignment="fixed", speech_word_limit=77)
    st = start(g)
    sys_a = g.observation(st, "Debater_A")[0].content
    assert "You argue that the answer is: Dunmere" in sys_a and "Debater_B argues that the answer is: Kelderby" in sys_a
    assert "77 words" in sys_a and "Where does Mara Quill live?" in sys_a
    judge = g.observation(st, "Judge")[0].content
    assert "A: Dunmere" in judge and "B: Kelderby" in judge and "Debater_A for answer A" in judge


def test_render_memo_stays_within_its_character_budget():
    """Story-sized renders are unique per question and seat: the memo must not keep them all."""
    rm = memo.RenderMemo(max_chars=5_000)
    ps = prompt_set("debate")
    g = game()
    st = start(g)
    base = views.player_vars(g.config, st, "Debater_A")
    texts = []
    for i in range(40):
        v = {**base, "background": f"story {i} " + "word " * 300, "question": f"question {i}?"}
        texts.append(rm.render(ps, "debater_system", 0, v))
        assert rm.chars <= 5_000 and rm.chars == sum(map(len, rm.entries.values()))
    assert len(set(texts)) == 40 and all(f"story {i} " in t for i, t in enumerate(texts))
    again = {**base, "background": "story 39 " + "word " * 300, "question": "question 39?"}
    assert rm.render(ps, "debater_system", 0, again) == texts[-1] == ps.render("debater_system", 0, **again)
