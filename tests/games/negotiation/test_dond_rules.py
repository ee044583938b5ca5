"""Deal or No Deal rule engine: turn order, hidden proposals, corrections, aborts, cutoffs, outcomes."""

from __future__ import annotations

import json
import random

import pytest
from dond_helpers import SCENARIO, make_seats, new_game, play, visible_text

from sparring.config_io import validate
from sparring.errors import ConfigError
from sparring.gameapi.game import GAMES, Action, Seat
from sparring.games.negotiation.game import PLAYERS, DealOrNoDealGame, DondConfig
from sparring.games.negotiation.instance import DondInstance
from sparring.prompts import memo, prompt_set

P1, P2 = PLAYERS
HI = "[message] hello, I would like the book and the hat."


def test_registered_under_both_names():
    try:
        lookup = GAMES.get
        lookup("dond")
    except ModuleNotFoundError:  # another game module of the registry is not importable yet
        lookup = GAMES._items.__getitem__
    assert lookup("dond") is DealOrNoDealGame and lookup("deal_or_no_deal") is DealOrNoDealGame
    assert DealOrNoDealGame().players() == {P1: "negotiator", P2: "negotiator"}


def test_config_is_strict():
    with pytest.raises(ConfigError, match="unknown key"):
        validate(DondConfig, {"objectiv": "coop"}, file="x.yaml")
    with pytest.raises(ConfigError, match="needs lam"):
        validate(DondConfig, {"objective": "lambda"}, file="x.yaml")
    with pytest.raises(ConfigError, match="lam"):
        validate(DondConfig, {"objective": "lambda", "lam": 1.5}, file="x.yaml")
    with pytest.raises(ConfigError, match="contradicts"):
        validate(DondConfig, {"objective": "self", "lam": 0.5}, file="x.yaml")
    assert validate(DondConfig, {"objective": "comp"}).weight == -1.0
    assert validate(DondConfig, {"objective": "lambda", "lam": -0.25}).weight == -0.25


def test_first_mover_is_seeded_and_flip_swaps_contexts():
    free = SCENARIO.model_copy(update={"first_mover": None})
    firsts = {new_game(free, seed=s)[1].first for s in range(20)}
    assert firsts == {P1, P2}
    assert new_game(free, seed=3)[1].first == new_game(free, seed=3)[1].first
    _, st = new_game(flip=False)
    assert st.values == {P1: (4, 3, 1), P2: (0, 4, 2)} and st.first == P1
    _, st = new_game(flip=True)
    # flipped: Player_2 holds context 0, and context 0 (the recorded first speaker) still starts
    assert st.values == {P1: (0, 4, 2), P2: (4, 3, 1)} and st.first == P2


def test_first_player_fixes_who_speaks_first_over_instance_and_coin_flip():
    """`first_player` (the learning suite's GRPO game: the learner always answers the partner)
    overrides both the instance's first mover and the per-episode coin flip; contexts still follow flip."""
    free = SCENARIO.model_copy(update={"first_mover": None})
    assert {new_game(free, seed=s, first_player=P2)[1].first for s in range(20)} == {P2}
    _, st = new_game(flip=True, first_player=P1)  # the instance says context 0, held by Player_2 when flipped
    assert st.first == P1 and st.to_move == P1 and st.values[P1] == (0, 4, 2)
    with pytest.raises(ValueError):
        DondConfig(first_player="Player_3")


def test_observation_shape_and_private_values():
    game, st = new_game()
    obs = game.observation(st, P1)
    assert obs[0].role == "system" and obs[-1].role == "user"
    assert "1 book, 1 hat and 3 balls" in obs[0].content
    assert "each book is worth 4 points" in obs[0].content
    # the other player's values never appear in Player_1's view
    assert "each book is worth 0 points" not in obs[0].content
    play(game, st, [HI, "[message] you can have the book, I want the hat."])
    obs = game.observation(st, P1)
    roles = [m.role for m in obs]
    assert roles == ["system", "user", "assistant", "user"]
    assert obs[2].content == HI
    assert "[message] you can have the book" in obs[3].content and "Your turn" in obs[3].content
    spec = game.action_spec(st, P1)
    assert spec.kind == "text" and spec.tag == "turn" and spec.scratchpad_instruction


def test_deal_and_rewards_self():
    game, st = new_game()
    fbs = play(game, st, [HI, "[message] ok, I take the balls.", "[propose] (1 books, 1 hats, 0 balls)",
                          "[propose] (0 books, 0 hats, 3 balls)"])
    assert all(f.accepted for f in fbs) and game.is_over(st)
    out = game.outcome(st)
    # X = 4*1 + 3*1 = 7 for Player_1; Y = 2*3 = 6 for Player_2
    assert out.status == "complete" and out.metrics["deal"] is True
    assert out.metrics["points"] == {P1: 7, P2: 6} and out.rewards == {P1: 7.0, P2: 6.0}
    assert out.winner == P1
    m = out.metrics
    assert m["turns"] == 4 and m["n_messages"] == 2 and m["n_invalid_total"] == 0
    assert m["proposals"] == {P1: [1, 1, 0], P2: [0, 0, 3]} and m["proposal_order"] == [P1, P2]
    assert m["first_mover"] == P1 and m["ceilings"]["max_welfare"] == 14
    assert m["pareto_optimal"] is True and m["welfare_optimal"] is False and m["nash_ratio"] == 1.0


@pytest.mark.parametrize("config, expected", [
    ({"objective": "self"}, {P1: 7.0, P2: 6.0}),
    ({"objective": "coop"}, {P1: 13.0, P2: 13.0}),            # X + Y for both
    ({"objective": "comp"}, {P1: 1.0, P2: -1.0}),             # X - Y, Y - X
    ({"objective": "lambda", "lam": 0.5}, {P1: 10.0, P2: 9.5}),    # 7 + .5*6, 6 + .5*7
    ({"objective": "lambda", "lam": -0.5}, {P1: 4.0, P2: 2.5}),    # 7 - 3, 6 - 3.5
])
def test_rewards_under_every_objective(config, expected):
    game, st = new_game(**config)
    play(game, st, [HI, "[message] ok", "[propose] (1 books, 1 hats, 0 balls)", "[propose] (0 books, 0 hats, 3 balls)"])
    out = game.outcome(st)
    assert out.rewards == expected and out.metrics["points"] == {P1: 7, P2: 6}


@pytest.mark.parametrize("objective", [{"objective": "self"}, {"objective": "coop"}, {"objective": "comp"},
                                       {"objective": "lambda", "lam": 0.3}])
@pytest.mark.parametrize("second", ["[propose] (0 books, 1 hats, 3 balls)",   # overlap: both claim the hat
                                    "[propose] (0 books, 0 hats, 2 balls)"])  # leaves a ball unclaimed
def test_no_deal_is_zero_for_everyone(objective, second):
    game, st = new_game(**objective)
    play(game, st, [HI, "[message] ok", "[propose] (1 books, 1 hats, 0 balls)", second])
    out = game.outcome(st)
    assert game.is_over(st) and out.metrics["deal"] is False and out.metrics["end"] == "mismatch"
    assert out.rewards == {P1: 0.0, P2: 0.0} and out.metrics["points"] == {P1: 0, P2: 0}
    assert out.winner is None and out.metrics["proposals"][P2] is not None


def test_second_mover_may_propose_after_first_message():
    game, st = new_game()
    fbs = play(game, st, [HI, "[propose] (0 books, 0 hats, 3 balls)"])
    assert all(f.accepted for f in fbs)
    assert game.action_spec(st, P1).tag == "turn" and game.to_act(st) == [P1]


CASES = [  # (outputs before the bad one, bad output, error code)
    ([], "hello there, I want books", "format"),
    ([], "[message]   ", "empty_message"),
    ([], "[propose] (1 books, 1 hats, 0 balls)", "early_proposal"),
    ([HI], "[propose] (0 hats, 0 books, 3 balls)", "item_order"),
    ([HI], "[propose] (0 books, 3 balls)", "numbers"),
    ([HI], "[propose] (0 books, 1 hats, 1 balls, 2 balls)", "numbers"),
    ([HI], "[propose] (0 books, 0.5 hats, 3 balls)", "numbers"),
    ([HI], "[propose] (0 books, 0 hats, 4 balls)", "range"),
    ([HI], "[propose] (-1 books, 0 hats, 3 balls)", "range"),
    ([HI, "[propose] (1 books, 1 hats, 0 balls)"], "[message] wait, let us talk", "message_after_proposal"),
]


@pytest.mark.parametrize("before, bad, code", CASES)
def test_every_invalid_action_gets_its_private_correction(before, bad, code):
    game, st = new_game()
    play(game, st, before)
    (actor,) = game.to_act(st)
    other = st.other(actor)
    fb = game.act(st, actor, Action(text=bad))
    assert not fb.accepted and fb.abort is None and fb.correction
    ev_invalid, ev_corr = game.events(st)[-2:]
    assert (ev_invalid.tag, ev_corr.tag) == ("invalid", "correction")
    assert ev_invalid.meta["error"] == code and ev_corr.content == fb.correction
    assert ev_invalid.visible_to == [actor] and ev_corr.visible_to == [actor]
    assert ev_invalid.meta["exclude_from_training"] is True
    # the actor sees its bad output and the correction at the end of its next observation
    obs = game.observation(st, actor)
    assert [m.role for m in obs[-2:]] == ["assistant", "user"]
    assert obs[-2].content == bad.strip() and obs[-1].content == fb.correction
    # the other player never sees either, and the actor retries (same player still to move)
    assert fb.correction not in visible_text(game, st, other)
    assert game.to_act(st) == [actor]
    # after a valid retry the correction is gone from the actor's view
    retry = "[propose] (0 books, 0 hats, 3 balls)" if code in ("item_order", "numbers", "range",
                                                                "message_after_proposal") else HI
    assert game.act(st, actor, Action(text=retry)).accepted
    assert fb.correction not in "\n".join(m.content for m in game.observation(st, actor))


@pytest.mark.parametrize("bad, code", [
    ("not json at all", "format"),
    ('{"type": "offer", "books": 1}', "format"),
    ('{"type": "propose", "books": 1, "hats": 1}', "numbers"),
    ('{"type": "propose", "books": 1, "hats": "many", "balls": 0}', "numbers"),
    ('{"type": "propose", "books": 1, "hats": 2, "balls": 0}', "range"),
    ('{"type": "message", "text": ""}', "empty_message"),
])
def test_json_format_corrections(bad, code):
    game, st = new_game(action_format="json")
    play(game, st, ['{"type": "message", "text": "hi, book and hat for me?"}'])
    fb = game.act(st, P2, Action(text=bad))
    assert not fb.accepted and game.events(st)[-1].meta["error"] == code
    assert '{"type": "propose"' in fb.correction or '{"type": "message"' in fb.correction


def test_json_format_full_game_with_code_fence():
    game, st = new_game(action_format="json")
    fbs = play(game, st, ['{"type": "message", "text": "book and hat for me, balls for you?"}',
                          '```json\n{"type": "message", "text": "deal"}\n```',
                          '{"type": "propose", "books": 1, "hats": 1, "balls": 0}',
                          'Sure: {"type": "proposal", "books": "0", "hats": 0, "balls": 3}'])
    assert all(f.accepted for f in fbs)
    out = game.outcome(st)
    assert out.metrics["deal"] and out.metrics["points"] == {P1: 7, P2: 6}
    system = game.observation(st, P1)[0].content
    assert '{"type": "propose", "books": 1, "hats": 1, "balls": 0}' in system and "JSON" in system


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_hidden_proposal_never_leaks(fmt):
    def out(kind, counts=None):
        if fmt == "text":
            return HI if kind == "m" else f"[propose] ({counts[0]} books, {counts[1]} hats, {counts[2]} balls)"
        if kind == "m":
            return '{"type": "message", "text": "hi"}'
        return json.dumps({"type": "propose", "books": counts[0], "hats": counts[1], "balls": counts[2]})

    def traces(counts):  # every way the proposal's content could show up
        b, h, z = counts
        return [f"{b} books, {h} hats, {z} balls", f'"books": {b}, "hats": {h}, "balls": {z}', f"[{b}, {h}, {z}]"]

    game, st = new_game(action_format=fmt)
    play(game, st, [out("m"), out("m"), out("p", (1, 0, 1))])
    seen = visible_text(game, st, P2)
    assert not any(t in seen for t in traces((1, 0, 1)))
    assert "hidden proposal" in game.observation(st, P2)[-1].content
    # even once the game is over, neither view holds the other's proposal
    play(game, st, [out("p", (0, 1, 2))])
    assert game.is_over(st) and game.outcome(st).metrics["deal"]
    assert not any(t in visible_text(game, st, P2) for t in traces((1, 0, 1)))
    assert not any(t in visible_text(game, st, P1) for t in traces((0, 1, 2)))
    # proposals are events visible only to their proposer
    props = [e for e in game.events(st) if e.meta.get("kind") == "proposal"]
    assert [e.visible_to for e in props] == [[P1], [P2]]


def test_abort_after_k_invalid_in_a_row_and_counter_resets():
    game, st = new_game(max_errors=3)
    assert not game.act(st, P1, Action(text="garbage")).abort
    assert not game.act(st, P1, Action(text="garbage")).abort
    assert game.act(st, P1, Action(text=HI)).accepted          # resets the run of errors
    assert not game.act(st, P2, Action(text="garbage")).abort
    assert not game.act(st, P2, Action(text="garbage")).abort
    assert game.act(st, P2, Action(text="[message] ok")).accepted
    assert not game.is_over(st)
    fbs = [game.act(st, P1, Action(text="nope")) for _ in range(3)]
    assert [f.abort is not None for f in fbs] == [False, False, True]
    assert game.is_over(st) and game.to_act(st) == []
    out = game.outcome(st)
    assert out.status == "aborted" and out.rewards == {P1: 0.0, P2: 0.0} and "3 invalid outputs" in out.reason
    assert out.metrics["n_invalid"] == {P1: 5, P2: 2} and out.metrics["aborted"] is True
    assert game.events(st)[-1].tag == "abort"


@pytest.mark.parametrize("max_turns, outputs", [
    (4, [HI, "[message] b", "[message] c", "[message] d"]),
    (3, [HI, "[message] b", "[propose] (1 books, 1 hats, 0 balls)"]),  # cut off before the reply
])
def test_max_turns_cutoff_means_no_deal(max_turns, outputs):
    game, st = new_game(max_turns=max_turns)
    fbs = play(game, st, outputs)
    assert all(f.accepted for f in fbs) and game.is_over(st)
    out = game.outcome(st)
    assert out.metrics["end"] == "max_turns" and not out.metrics["deal"] and out.rewards == {P1: 0.0, P2: 0.0}
    assert out.metrics["turns"] == max_turns


def test_invalid_attempts_do_not_count_as_turns():
    game, st = new_game(max_turns=2)
    play(game, st, ["bad", "bad", HI])
    assert not game.is_over(st) and len(st.turns) == 1


def test_fork_is_independent():
    game, st = new_game()
    play(game, st, [HI])
    branch = game.fork(st)
    play(game, branch, ["[message] x", "[propose] (1 books, 1 hats, 0 balls)"])
    assert len(st.turns) == 1 and not st.proposals and len(branch.turns) == 3


def test_observations_alternate_roles_through_a_game():
    game, st = new_game(seed=5)
    outputs = [HI, "bad", "[message] hm", "[message] fine", "[propose] (0 books, 1 hats, 3 balls)",
               "[message] no", "[propose] (1 books, 0 hats, 0 balls)"]
    for text in outputs:
        for p in PLAYERS:
            roles = [m.role for m in game.observation(st, p)]
            assert roles[0] == "system" and roles[1] == "user"
            assert all(a != b for a, b in zip(roles[1:], roles[2:], strict=False))
        (actor,) = game.to_act(st)
        game.act(st, actor, Action(text=text))
    assert game.is_over(st) and game.outcome(st).metrics["deal"]


def test_instance_summary_and_record_state():
    game, st = new_game()
    assert game.instance_summary(SCENARIO) == {"id": "hand-1", "counts": [1, 1, 3],
                                               "values": [[4, 3, 1], [0, 4, 2]], "first_mover": 0}
    rec = game.record_state(st)
    assert rec["first_mover"] == P1 and rec["values"][P2] == [0, 4, 2]


def test_missing_seat_is_a_clear_error():
    game = DealOrNoDealGame()
    seats = make_seats()
    del seats[P2]
    with pytest.raises(ConfigError, match="missing Player_2"):
        game.reset(SCENARIO, seats, random.Random(0))


@pytest.mark.parametrize("variant", [0, 1, "random"])
@pytest.mark.parametrize("config", [{"objective": "self"}, {"objective": "coop"}, {"objective": "comp"},
                                    {"objective": "lambda", "lam": -0.5}, {"action_format": "json"}])
def test_prompts_render_for_every_setting(config, variant):
    game, st = new_game(DondInstance(id="x", counts=(2, 2, 1), values=((1, 2, 4), (3, 2, 0))), variant=variant,
                        **config)
    system = game.observation(st, P1)[0].content
    assert "2 books, 2 hats and 1 ball" in system
    assert {"self": "for yourself", "coop": "both players together", "comp": "minus",
            "lambda": "minus 0.5"}[game.config.objective] in system
    play(game, st, ["[message] hi" if game.config.action_format == "text" else '{"type":"message","text":"hi"}'])
    assert game.observation(st, P2)[-1].content


def test_untagged_reply_counts_as_message_only_when_enabled():
    strict_game, strict_state = new_game()
    (fb,) = play(strict_game, strict_state, ["I would like the book please."])
    assert not fb.accepted and fb.correction

    game, state = new_game(untagged_as_message=True)
    fbs = play(game, state, ["I would like the book please.", "[propose] (0 books, 1 hat, 3 balls)"])
    assert all(fb.accepted for fb in fbs)
    (player,) = game.to_act(state)
    # after a proposal an untagged reply is a message, which is still not allowed
    (fb,) = play(game, state, ["ok fine"])
    assert not fb.accepted and fb.correction
    first = [e for e in game.events(state) if e.tag == "turn"][0]
    assert first.meta["kind"] == "message" and first.content.endswith("I would like the book please.")


def _unmemoised(game, fn, *args, **kwargs):
    """Call `fn` with `game`'s render memo emptied first, so that what it renders is rendered afresh."""
    game.memo = memo.RenderMemo()
    return fn(*args, **kwargs)


def test_render_memo_gives_what_a_fresh_render_gives_across_pools_and_overrides():
    """Per-turn renders are memoised across episodes (`prompts.memo`), keyed on the variables each
    template reads. Templates that read the pool (a string, or a list: the fallback key) must still
    get each pool's own text; every observation must equal one rendered without the memo."""
    ps = prompt_set("negotiation").with_overrides({
        "opponent_message": "{{ action }} (your values: {{ values_text }})",
        "turn": "Your turn; the pool has {{ items | length }} kinds, {{ counts[2] }} balls. Reply:",
    })
    seats = {p: Seat(player=p, agent=f"agent-{p}", prompts=ps) for p in PLAYERS}
    shared = DealOrNoDealGame(DondConfig())
    pools = [SCENARIO, DondInstance(id="hand-2", counts=(2, 1, 2), values=((1, 4, 2), (3, 0, 2))),
             DondInstance(id="hand-3", counts=(1, 4, 1), values=((2, 2, 0), (7, 0, 3)))]
    outputs = [HI, "[message] fine", "[propose] (0 books, 1 hats, 1 balls)", "[propose] (1 books, 0 hats, 0 balls)"]
    for instance in pools * 2:
        for flip in (False, True):
            fresh = DealOrNoDealGame(DondConfig())
            a = shared.reset(instance, seats, random.Random(3), flip=flip)
            b = _unmemoised(fresh, fresh.reset, instance, seats, random.Random(3), flip=flip)
            for text in outputs:
                for p in PLAYERS:
                    assert shared.observation(a, p) == _unmemoised(fresh, fresh.observation, b, p)
                (actor,) = shared.to_act(a)
                shared.act(a, actor, Action(text=text))
                _unmemoised(fresh, fresh.act, b, actor, Action(text=text))
    assert any("your values:" in m.content for p in PLAYERS for m in shared.observation(a, p))
    wrapper = ps.templates["opponent_message"][0]
    assert len({k for k in shared.memo.entries if k[0] == wrapper}) >= len(pools)
