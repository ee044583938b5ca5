from __future__ import annotations

import random

import pytest

from sparring.gameapi.game import GAMES, Action, Seat
from sparring.games.taboo.instance import TabooInstance
from sparring.prompts import prompt_set


class Table:
    """A Taboo game and one episode's state, driven by hand (no engine, no model)."""

    def __init__(self, target: str, taboo: list[str], **config):
        cls = GAMES.get("taboo")
        self.game = cls(cls.Config(**config))
        ps = prompt_set("taboo")
        seats = {p: Seat(player=p, agent="a", prompts=ps) for p in self.game.players()}
        self.state = self.game.reset(TabooInstance(id=f"t-{target}", target=target, taboo=taboo), seats,
                                     random.Random(0))

    def act(self, player: str, text: str):
        return self.game.act(self.state, player, Action(text=text))

    def seen(self, player: str) -> str:
        return "\n".join(m.content for m in self.game.observation(self.state, player))


@pytest.fixture
def table():
    return Table
