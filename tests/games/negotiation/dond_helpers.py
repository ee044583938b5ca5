"""Shared helpers for the Deal or No Deal tests: a game factory, seats, a scripted driver, data path."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sparring.gameapi.game import Action, Seat
from sparring.games.negotiation.game import PLAYERS, DealOrNoDealGame, DondConfig, DondState
from sparring.games.negotiation.instance import DondInstance
from sparring.prompts import prompt_set

# Reference data (never copied into the repo): ../shared/data/dond next to the checkout.
DOND_DATA = Path(os.environ.get("SPARRING_DOND_DATA", Path(__file__).resolve().parents[3].parent / "shared/data/dond"))

# Hand-worked scenario used across tests: 1 book, 1 hat, 3 balls.
# Player_1 values (4, 3, 1): 4 + 3 + 3*1 = 10. Player_2 values (0, 4, 2): 0 + 4 + 3*2 = 10.
SCENARIO = DondInstance(id="hand-1", counts=(1, 1, 3), values=((4, 3, 1), (0, 4, 2)), first_mover=0)


def data_file(name: str) -> Path:
    path = DOND_DATA / name
    if not path.is_file():
        pytest.skip(f"reference data {path} not available")
    return path


def make_seats() -> dict[str, Seat]:
    ps = prompt_set("negotiation")
    return {p: Seat(player=p, agent=f"agent-{p}", prompts=ps) for p in PLAYERS}


def new_game(instance: DondInstance = SCENARIO, seed: int = 0, flip: bool = False,
             **config) -> tuple[DealOrNoDealGame, DondState]:
    game = DealOrNoDealGame(DondConfig(**config))
    return game, game.reset(instance, make_seats(), random.Random(seed), flip=flip)


def play(game: DealOrNoDealGame, state: DondState, outputs: list[str]):
    """Feed outputs to whoever is to move; returns the feedback of each."""
    fbs = []
    for text in outputs:
        (player,) = game.to_act(state)
        fbs.append(game.act(state, player, Action(text=text)))
    return fbs


def visible_text(game: DealOrNoDealGame, state: DondState, player: str) -> str:
    """Everything `player` can see: its observation plus every event visible to it."""
    obs = "\n".join(m.content for m in game.observation(state, player))
    events = "\n".join(f"{e.content} {e.meta}" for e in game.events(state)
                       if e.visible_to is None or player in e.visible_to)
    return obs + "\n" + events
