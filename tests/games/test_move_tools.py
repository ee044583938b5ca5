"""Games' moves as typed tools (`GameHooks.tools`): the shipped games declare them, each tool's text
is the reply its game reads, and registration refuses tools that could not become methods."""

from __future__ import annotations

from types import SimpleNamespace

from sparring.gameapi import GAMES, MoveTool, PanelContext, ToolArg
from sparring.gameapi.hooks import GameHooks, check_hooks


def ctx(**config) -> PanelContext:
    return PanelContext(instance=None, player="P", flip=False, game_config=SimpleNamespace(**config))


def tools(game: str) -> dict[str, MoveTool]:
    return {t.name: t for t in GAMES.get(game).hooks.tools}


def test_shipped_games_declare_their_moves_as_tools():
    assert set(tools("dond")) == {"say", "propose"}
    assert {n: set(t.roles) for n, t in tools("taboo").items()} == {"clue": {"describer"}, "guess": {"guesser"}}
    assert set(tools("wordle")) == {"guess"} and set(tools("textarena")) == {"move"}
    assert set(tools("debate")) == {"argue"} and set(tools("textworld_cooking")) == {"command"}
    for name in GAMES.names():
        assert check_hooks(GAMES.get(name).hooks, name) == []


def test_tool_texts_are_the_replies_the_games_read():
    t = tools("dond")
    assert t["propose"].text({"books": 1, "hats": "2", "balls": 0}, ctx(action_format="text")) == \
        "[propose] (1 books, 2 hats, 0 balls)"
    assert t["say"].text({"message": " I want the hats "}, ctx(action_format="text")) == "[message] I want the hats"
    assert '"type": "propose"' in t["propose"].text({"books": 1, "hats": 0, "balls": 0}, ctx(action_format="json"))
    assert tools("taboo")["guess"].text({"word": "apple"}, ctx()) == "GUESS: apple"
    assert tools("wordle")["guess"].text({"word": "crane"}, ctx()) == "GUESS: crane"
    assert tools("textarena")["move"].text({"action": "[check] "}, ctx()) == "[check]"


def test_registration_refuses_tools_that_cannot_be_methods():
    ok = MoveTool("say", "talk", (ToolArg("text", str, "what"),), lambda a, c: a["text"])
    assert check_hooks(GameHooks(tools=(ok,)), "G") == []
    bad = [
        MoveTool("reset", "x", (), lambda a, c: ""),                            # the environment's own method
        MoveTool("_hidden", "x", (), lambda a, c: ""),                          # private: never a tool
        MoveTool("move", "x", (ToolArg("where", list, "cells"),), lambda a, c: ""),  # no JSON-schema type
    ]
    for tool in bad:
        assert check_hooks(GameHooks(tools=(tool,)), "G"), tool.name
    twice = (ok, MoveTool("say", "again", (), lambda a, c: "", roles=frozenset({"x"})))
    assert any("two tools named 'say'" in e for e in check_hooks(GameHooks(tools=twice), "G"))
    split = (MoveTool("guess", "a", (), lambda a, c: "", roles=frozenset({"a"})),
             MoveTool("guess", "b", (), lambda a, c: "", roles=frozenset({"b"})))
    assert check_hooks(GameHooks(tools=split), "G") == []  # one name, different roles: fine
