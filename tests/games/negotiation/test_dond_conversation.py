"""Deal or No Deal's conversation view (issue #59): what each player was shown and wrote, in order,
only ever growing — turn instructions kept where they were shown, replies as the model wrote them
(a prefilled proposal with its prefix), a rejected reply with its correction — and the same games
as the rendered view."""

from __future__ import annotations

from sparring.gameapi.game import Action
from sparring.games.negotiation.game import PLAYERS, PROPOSAL_PREFIX

from .dond_helpers import new_game


def test_each_players_conversation_only_grows_through_messages_a_correction_and_proposals():
    game, state = new_game(max_turns=8, prefill_proposals=True)
    shown: dict[str, list] = {p: [] for p in PLAYERS}  # what each player was shown when it last acted, and its reply
    script = ["[message] I would like the book.", "this is not an action", "[message] Take it, I want the hat.",
              "[propose] (1 books, 0 hats, 0 balls)", "0 books, 1 hats, 3 balls)"]
    for text in script:
        (player,) = game.to_act(state)
        before = game.conversation(state, player)
        assert before[-1].role == "user"  # it always answers a user turn
        assert before[: len(shown[player])] == shown[player], f"{player}'s conversation was rewritten before {text!r}"
        prefilled = game.action_spec(state, player).assistant_prefix
        game.act(state, player, Action(text=text))
        mine = game.conversation(state, player)
        assert mine[: len(before)] == before
        reply = mine[len(before)]
        assert reply.role == "assistant" and reply.content == prefilled + text  # as written, the prefix included
        shown[player] = mine[: len(before) + 1]
    assert state.over and state.end == "deal"
    second = state.other(state.first)
    talk = game.conversation(state, second)
    # the rejected reply and its correction stay; the retry answers the correction
    bad = next(i for i, m in enumerate(talk) if m.content == "this is not an action")
    assert talk[bad + 1].role == "user" and talk[bad + 2].content == "[message] Take it, I want the hat."
    assert game.conversation(state, second)[-1].content == PROPOSAL_PREFIX + "0 books, 1 hats, 3 balls)"


def test_the_engine_plays_the_same_games_in_both_views():
    from importlib import resources

    import yaml

    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    shipped = resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"
    entry = yaml.safe_load(shipped.read_text(encoding="utf-8"))["models"]["fair-negotiator"]

    def games(view: str) -> list:
        config = {"game": "dond", "game_args": {"max_turns": 6}, "view": view,
                  "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 12, "seed": 3}, "limit": 6},
                  "agents": {"a": {"role": "negotiator", "model": "a"}, "b": {"role": "negotiator", "model": "b"}},
                  "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": True}}
        models = {"a": ScriptedModel("a", **entry["args"]), "b": ScriptedModel("b", **entry["args"])}
        with Arena.from_config(config, models=models) as arena:
            return sorted(arena.play(arena.jobs()), key=lambda r: r.id)

    grown, rendered = games("conversation"), games("rendered")
    assert len(grown) == 12 and all(r.status == "complete" for r in grown), [r.error for r in grown]
    for g, r in zip(grown, rendered, strict=True):
        assert [e.content for e in g.events] == [e.content for e in r.events] and g.outcome.rewards == r.outcome.rewards
        for player in PLAYERS:
            calls = [c for c in g.calls if c.player == player]
            for a, b in zip(calls, calls[1:], strict=False):
                assert b.messages[: len(a.messages)] == a.messages
