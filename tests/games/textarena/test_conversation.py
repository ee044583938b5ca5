"""The conversation view (issue #59) on TextArena: a player's prompt is a chat that only grows —
each turn appends the new part of TextArena's observation and the player's reply, nothing earlier
rewritten — so its calls extend one another; the engine refuses a game that rewrites it, and a game
without the view says so when the experiment asks for it."""

from __future__ import annotations

import pytest

pytest.importorskip("textarena")

from sparring.engine.play import Arena  # noqa: E402
from sparring.errors import ConfigError  # noqa: E402
from sparring.games.textarena.game import TextArenaGame  # noqa: E402
from sparring.types import Message  # noqa: E402


def config(view: str | None, n: int = 3) -> dict:
    cfg = {"name": "ta-view", "game": "textarena", "game_args": {"env_id": "TicTacToe-v0"},
           "dataset": {"name": "seeds", "split": "test", "args": {"n": n}},
           "agents": {"a": {"role": "player", "model": "textarena-random"},
                      "b": {"role": "player", "model": "textarena-random"}},
           "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": True}, "run": {"seed": 0}}
    if view:
        cfg["view"] = view
    return cfg


def play(cfg: dict) -> list:
    with Arena.from_config(cfg) as arena:
        return arena.play(arena.jobs())


def test_each_call_extends_the_players_previous_call_and_the_game_is_the_same():
    grown, rendered = play(config("conversation")), play(config(None))
    assert all(r.status == "complete" for r in grown), [r.error for r in grown]
    by_id = {r.instance_id + str(r.seats["Player 0"].agent) + str(r.outcome.metrics["first_mover"]): r
             for r in rendered}
    for r in grown:
        for player in ("Player 0", "Player 1"):
            calls = [c for c in r.calls if c.player == player and c.op == "generate"]
            assert len(calls) >= 2
            for before, after in zip(calls, calls[1:], strict=False):
                reply = before.completions[before.chosen or 0].text
                assert after.messages[: len(before.messages) + 1] == [
                    *before.messages, Message(role="assistant", content=reply)]
            # the user turns hold TextArena's whole observation once, in order
            first = calls[0].messages
            assert first[0].role == "system" and first[1].role == "user" and "[GAME]" in first[1].content
            last = calls[-1].messages
            assert [m.role for m in last[1:]] == ["user", "assistant"] * (len(calls) - 1) + ["user"]
        # the same seeds, seats and moves as the rendered view: the same games
        twin = by_id[r.instance_id + str(r.seats["Player 0"].agent) + str(r.outcome.metrics["first_mover"])]
        assert [e.content for e in r.events] == [e.content for e in twin.events]
        assert r.outcome.rewards == twin.outcome.rewards


def test_the_conversation_is_the_default_and_rendered_is_one_setting_away():
    (r, *_) = play(config(None, n=1))
    calls = [c for c in r.calls if c.player == "Player 0"]
    assert [len(c.messages) for c in calls] == [2 * i + 2 for i in range(len(calls))]  # grows a turn at a time
    (r, *_) = play(config("rendered", n=1))
    calls = [c for c in r.calls if c.player == "Player 0"]
    assert len(calls) > 1 and all(len(c.messages) == 2 for c in calls)  # system + the whole game so far


def test_a_conversation_that_rewrites_an_earlier_message_fails_the_episode_naming_game_move_and_message(monkeypatch):
    real = TextArenaGame.conversation

    def rewrites(self, state, player):
        msgs = real(self, state, player)
        if len(msgs) > 2:  # from the player's second turn on, its first observation changes
            msgs[1] = Message(role="user", content="a board it was never shown")
        return msgs

    monkeypatch.setattr(TextArenaGame, "conversation", rewrites)
    records = play(config("conversation", n=1))
    assert records and all(r.status == "failed" for r in records)
    error = records[0].error
    assert "game 'textarena' offers a conversation view, but at move 2 it rewrote message 1 of Player" in error
    assert "a board it was never shown" in error and "a conversation may only grow" in error


def test_a_game_without_the_view_is_a_clear_config_error(tmp_path, monkeypatch):
    from sparring.gameapi import GAMES
    from sparring.gameapi.game import Game

    # every shipped game offers the view: a plug-in game that does not is played here by debate
    # without its conversation method
    monkeypatch.setattr(GAMES.get("debate"), "conversation", Game.conversation)
    assert GAMES.get("textarena").offers_conversation() and not GAMES.get("debate").offers_conversation()
    cfg = {"game": "debate", "dataset": {"name": "generated", "split": "test", "limit": 1}, "view": "conversation",
           "agents": {"d": {"role": "debater", "model": "scripted-debater"},
                      "j": {"role": "judge", "model": "scripted-judge"}},
           "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]}}
    with pytest.raises(ConfigError) as e:
        Arena.from_config(cfg)
    assert "view" in str(e.value) and "game 'debate' offers no conversation view" in str(e.value)


def kuhn(view: str, cut: bool) -> dict:
    args = {"env_id": "KuhnPokerBets-v0", "env_kwargs": {"max_rounds": 1}, "reward": "chips",
            **({"observation_from": "### Starting round"} if cut else {})}
    return {**config(view, n=4), "game_args": args,
            # a deterministic card rule on both sides (the equilibrium player draws its mixed moves from the
            # text it is shown, so other text is other draws)
            "agents": {"a": {"role": "player", "model": "textarena-kuhn-rule"},
                       "b": {"role": "player", "model": "textarena-kuhn-rule"}}}


@pytest.mark.parametrize("view", ["rendered", "conversation"])
def test_observation_from_shows_the_current_hand_only_and_the_same_games_are_played(view):
    """`observation_from` cuts TextArena's rules: each prompt starts at the hand's line, still grows
    in the conversation view, and a scripted player (which reads the card and the legal moves)
    plays the same hands as on the whole observation."""
    cut, whole = play(kuhn(view, cut=True)), play(kuhn(view, cut=False))
    assert all(r.status == "complete" for r in cut + whole)
    for r, twin in zip(cut, whole, strict=True):
        assert (r.instance_id, r.outcome.rewards) == (twin.instance_id, twin.outcome.rewards)
        assert [e.content for e in r.events] == [e.content for e in twin.events]
        calls = [c for c in r.calls if c.op == "generate"]
        for c in calls:
            shown = [m.content for m in c.messages if m.role == "user"]
            assert shown[0].startswith("[GAME] ### Starting round 1 out of 1 rounds. Your card is: '")
            assert "Game Rules" not in "\n".join(shown)
        assert sum(len(m.content) for c in calls for m in c.messages) < sum(
            len(m.content) for c in twin.calls for m in c.messages) / 2
        if view == "conversation":  # each call extends the player's previous one
            for player in ("Player 0", "Player 1"):
                mine = [c for c in calls if c.player == player]
                for before, after in zip(mine, mine[1:], strict=False):
                    assert after.messages[: len(before.messages)] == before.messages
