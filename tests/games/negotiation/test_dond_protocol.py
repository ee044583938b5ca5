"""Tolerant parsing of negotiation actions (text and JSON) and their canonical formatting."""

from __future__ import annotations

import pytest

from sparring.games.negotiation.protocol import (
    ActionError,
    ParsedAction,
    check_range,
    format_action,
    mentions,
    parse_action,
    parse_counts,
    scan_counts,
)


@pytest.mark.parametrize("text, counts", [
    ("[propose] (1 books, 2 hats, 0 balls)", (1, 2, 0)),
    ("[PROPOSE]   ( 1 book ,2 hats,  0 balls )", (1, 2, 0)),            # case, whitespace, singular
    ("[propose]: (one book, two hats, no balls)", (1, 2, 0)),           # number words
    ("[Proposal] (1 book, 1 hat, 1 ball) [END]", (1, 1, 1)),            # lm-selfplay end marker
    ("**[propose]** (0 books, 2 hats, 3 balls).", (0, 2, 3)),               # a closing full stop
    ("[propose] (0 books, 2 hats, 3 balls", (0, 2, 3)),                  # a prefilled "(" left open
    ("Player 1: [propose] (0 books, 2 hats, 3 balls)", (0, 2, 3)),
    ("[propose] 1 book 0 hats 2 basketballs", (1, 0, 2)),               # no parentheses
    ("[propose] (books: 1, hats: 0, balls: 2)", (1, 0, 2)),             # name: count
    ("[propose] (1, 0, 2)", (1, 0, 2)),                                 # bare numbers in the documented order
    ("[propose] (1x book, 0x hat, 2x ball)", (1, 0, 2)),
])
def test_text_proposals_parse(text, counts):
    assert parse_action(text.replace("\\n", "\n")) == ParsedAction("proposal", counts=counts)


def test_the_canonical_fast_path_reads_proposals_as_the_general_scan_does():
    """`parse_counts` skips the mention scan for `x books, y hats, z balls`; on every spelling
    near that form it must give the same counts (or the same error) as the scan itself."""
    import itertools
    import random

    rng = random.Random(0)
    seps, spaces = [",", ", ", " , ", ",  "], ["", " ", "  ", "\t"]
    for _ in range(2000):
        nums = [str(rng.choice([0, 1, 2, 3, 4, 10, "01", "-1", "1.5", "two"])) for _ in range(3)]
        words = [rng.choice(forms) for forms in (["book", "books", "BOOKS"], ["hat", "hats", "Hats"],
                                                  ["ball", "balls", "basketballs"])]
        if rng.random() < 0.2:  # the wrong order, or an item twice
            words = list(rng.choice(list(itertools.permutations(words))))
        parts = [f"{n}{rng.choice([' ', '  ', ' x '])}{w}" for n, w in zip(nums, words, strict=True)]
        body = rng.choice(spaces) + rng.choice(seps).join(parts) + rng.choice(spaces)
        for text in (f"({body})", body):
            try:
                expected: object = scan_counts(text[1:-1] if text.startswith("(") else text.strip().splitlines()[0])
            except ActionError as e:
                expected = e.code
            try:
                got: object = parse_counts(text)
            except ActionError as e:
                got = e.code
            assert got == expected, text


@pytest.mark.parametrize("text, message", [
    ("[message] Hello there!", "Hello there!"),
    ("[MESSAGE]    I want the hats.   [END]", "I want the hats."),
    ('[msg] "deal?"', "deal?"),
    ("[message] can I have 2 books?\n[propose] (2 books, 0 hats, 0 balls)", "can I have 2 books?"),
    ("[message] I need the ball.\nPlayer 2: ok, take it\nPlayer_1: thanks", "I need the ball."),
    ("[message] line one\nline two", "line one\nline two"),
])
def test_text_messages_parse(text, message):
    assert parse_action(text) == ParsedAction("message", text=message)


@pytest.mark.parametrize("text, code", [
    ("I want the books", "format"),
    ("Sure. [propose] (0 books, 2 hats, 3 balls)", "format"),          # the tag must open the reply
    ("Once you have written [message] your message.", "format"),
    ("", "format"),
    ("[message]", "empty_message"),
    ("[propose] (2 hats, 1 books, 0 balls)", "item_order"),
    ("[propose] (1 balls, 1 hats, 1 books)", "item_order"),
    ("[propose] (1 books, 2 hats)", "numbers"),
    ("[propose] (1 books, 2 books, 0 balls)", "numbers"),
    ("[propose] (1, 2)", "numbers"),
    ("[propose] everything", "numbers"),
    ("[propose] (1.5 books, 0 hats, 0 balls)", "numbers"),
])
def test_text_errors_have_codes(text, code):
    with pytest.raises(ActionError) as e:
        parse_action(text)
    assert e.value.code == code and e.value.detail


@pytest.mark.parametrize("text, expected", [
    ('{"type": "message", "text": "hi"}', ParsedAction("message", text="hi")),
    ('```json\n{"type": "propose", "books": 1, "hats": 0, "balls": 2}\n```', ParsedAction("proposal", counts=(1, 0, 2))),
    ('Here: {"type": "Proposal", "books": "1", "hats": 0.0, "balls": 2} ok', ParsedAction("proposal", counts=(1, 0, 2))),
    ('{"action": "msg", "message": "deal"}', ParsedAction("message", text="deal")),
    ('{"type": "propose", "book": 1, "hat": 0, "ball": 2}', ParsedAction("proposal", counts=(1, 0, 2))),
])
def test_json_parses(text, expected):
    assert parse_action(text, "json") == expected


@pytest.mark.parametrize("text, code", [
    ("[message] hi", "format"),
    ('{"type": "message", "text": "hi"', "format"),
    ('["message", "hi"]', "format"),
    ('{"type": "counter"}', "format"),
    ('{"type": "propose", "books": 1, "hats": 0}', "numbers"),
    ('{"type": "propose", "books": true, "hats": 0, "balls": 1}', "numbers"),
    ('{"type": "propose", "books": 1.5, "hats": 0, "balls": 1}', "numbers"),
    ('{"type": "message", "text": "   "}', "empty_message"),
])
def test_json_errors(text, code):
    with pytest.raises(ActionError) as e:
        parse_action(text, "json")
    assert e.value.code == code


def test_range_check():
    check_range((1, 0, 3), (1, 1, 3))
    with pytest.raises(ActionError, match="2 books \\(there are 1\\)") as e:
        check_range((2, 0, 0), (1, 1, 3))
    assert e.value.code == "range"
    with pytest.raises(ActionError):
        check_range((0, -1, 0), (1, 1, 3))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_format_round_trips(fmt):
    for action in (ParsedAction("message", text="i need the ball"), ParsedAction("proposal", counts=(0, 3, 1))):
        assert parse_action(format_action(action, fmt), fmt) == action
    assert format_action(ParsedAction("proposal", counts=(1, 2, 0))) == "[propose] (1 books, 2 hats, 0 balls)"


def test_mentions_in_free_text():
    assert mentions("i take 2 books and one hat, you get the 3 balls") == [(0, 2), (1, 1), (2, 3)]
    assert mentions("no thanks") == []


def test_repeated_tags_are_read():
    """A repeated opening tag left an empty message (it cost the bundled model valid actions)."""
    from sparring.games.negotiation.protocol import parse_text

    assert parse_text("[message] [message] I want the hats").text == "I want the hats"
    assert parse_text("[message][MESSAGE] ok").text == "ok"


def test_prefilled_proposals_let_a_small_model_fill_in_only_the_counts():
    """`prefill_proposals`: once the other player proposed (or from turn `propose_after` on), the
    reply starts with "[propose] (" and the model's continuation completes the proposal."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    cfg = {"game": "dond", "game_args": {"max_turns": 6, "prefill_proposals": True, "propose_after": 2},
           "dataset": {"name": "dond_generated", "args": {"n": 2, "seed": 0}},
           "agents": {"a": {"role": "negotiator", "model": "m"}},
           "tournament": {"type": "self_play", "participants": ["a"]}}

    def reply(req):
        return "0 books, 0 hats, 0 balls)" if req.assistant_prefix == "[propose] (" else "[message] let us share"

    with Arena.from_config(cfg, models={"m": ScriptedModel("m", mode="callable", function=reply)}) as arena:
        records = arena.play(arena.jobs())
    for rec in records:
        prefixes = [c.assistant_prefix for c in rec.calls]
        assert prefixes == ["", "", "[propose] (", "[propose] ("]  # two messages, then proposals
        assert not any(c.rejected for c in rec.calls)
        assert [e.meta.get("kind") for e in rec.events if e.tag == "turn"][:2] == ["message", "message"]


def test_revealed_proposals_show_the_first_proposal_and_what_it_leaves():
    """`reveal_proposals` (a variant for small models): the second mover sees the first proposal
    and its complement, so copying the complement makes the deal; without it nothing leaks.
    `remind_pool` restates the pool as counts in the turn prompt."""
    import re

    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    def copy_the_rest(req):
        notice = req.messages[-1].content
        m = re.search(r"keep the rest: \[propose\] \((\d+) books, (\d+) hats, (\d+) balls\)", notice)
        if m:
            return "[propose] ({} books, {} hats, {} balls)".format(*m.groups())
        if "proposal" in notice.lower() and "hidden" in notice.lower():
            return "[propose] (0 books, 0 hats, 0 balls)"
        return "[message] let us share" if len(req.messages) < 3 else "[propose] (1 books, 0 hats, 0 balls)"

    for reveal in (True, False):
        cfg = {"game": "dond", "game_args": {"max_turns": 6, "reveal_proposals": reveal, "remind_pool": reveal},
               "dataset": {"name": "dond_generated", "args": {"n": 3, "seed": 0}},
               "agents": {"a": {"role": "negotiator", "model": "m"}},
               "tournament": {"type": "self_play", "participants": ["a"]}}
        model = ScriptedModel("m", mode="callable", function=copy_the_rest)
        with Arena.from_config(cfg, models={"m": model}) as arena:
            records = arena.play(arena.jobs())
        for rec in records:
            m = rec.outcome.metrics
            notice = next(e for e in rec.events if e.tag == "proposal_notice")
            first = m["proposals"][m["proposal_order"][0]]
            if reveal:
                assert "to keep " in notice.content and f"{first[0]} book" in notice.content
                assert m["deal"], rec.outcome.reason
            else:
                assert "hidden" in notice.content and not re.search(r"\d+ books", notice.content)
        system = records[0].calls[0].messages[0].content
        assert ("first proposal is shown" in system) is reveal
        shown = [m.content for r in records for c in r.calls for m in c.messages]
        assert any("The whole pool is [propose] (" in t for t in shown) is reveal  # remind_pool


@pytest.mark.parametrize("text", [
    "[propose] (1 book, 2 hats, 1 balls).\nDamn it, I meant two books.",  # made a deal before
    "**[propose]** (0 books, 2 hats, 3 balls)\nThat is fair.",
    "[propose] 1 books, 1 hats, 1 balls (final offer)",
    "[propose] (2, 1, 0) (my last offer)",
    "  [ propose ] (4 books, 1 hats, 1 balls) [message] hi",
])
def test_a_proposal_is_its_counts_and_nothing_after_them(text):
    """A proposal binds: text after its counts (a remark, a second line, another action) may
    contradict it, so the reply is invalid and the player gets a correction."""
    with pytest.raises(ActionError) as err:
        parse_action(text)
    assert err.value.code == "format" and "nothing after it" in err.value.detail


def test_trailing_text_after_a_prefilled_proposal_is_rejected_in_the_game():
    """The reply that made a deal in a shipped run is refused the same way for any player (the
    game parses every player's reply, model or human, with the same function)."""
    from dond_helpers import SCENARIO, new_game

    from sparring.gameapi.game import Action

    game, state = new_game(SCENARIO, prefill_proposals=True, untagged_as_message=True)  # 1 book, 1 hat, 3 balls
    first = game.to_act(state)[0]
    assert game.act(state, first, Action(text="[message] hi")).accepted
    second = game.to_act(state)[0]
    assert game.act(state, second, Action(text="[propose] (0 books, 1 hats, 2 balls)")).accepted
    assert game.action_spec(state, first).assistant_prefix == "[propose] ("
    fb = game.act(state, first, Action(text="1 book, 0 hats, 1 balls).\nDamn it, I meant the hats."))
    assert not fb.accepted and "nothing after it" in (fb.correction or "") and not game.is_over(state)
    assert game.act(state, first, Action(text="1 book, 0 hats, 1 balls)")).accepted
    assert game.outcome(state).metrics["deal"]
