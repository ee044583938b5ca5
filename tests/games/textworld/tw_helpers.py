"""Helpers for the TextWorld cooking tests."""

from __future__ import annotations

import shutil

import pytest

from sparring.gameapi.game import Seat
from sparring.prompts import prompt_set

GOLD_MODEL = {"backend": "scripted",
              "args": {"mode": "callable", "function": "sparring.games.textworld_cooking.gold:gold_command"}}


def require_simulator() -> None:
    """Skip the calling test without textworld-express or Java."""
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("TextWorld cooking needs Java (apt-get install default-jre-headless)")


def seats_for(game) -> dict[str, Seat]:
    prompts = prompt_set("textworld_cooking", game.prompt_files())
    return {"player": Seat(player="player", agent="tester", prompts=prompts)}


LOST_REPLIES = ("dance wildly", "look around", "")


def lost_player(request) -> str:
    """A scripted player that never cooks: an invalid command, a valid one, an empty reply, by step
    (read from the observation's "Step N of M", so it does not depend on the history window)."""
    import re

    step = int(re.search(r"Step (\d+) of", request.messages[-1].content).group(1))
    return LOST_REPLIES[(step - 1) % len(LOST_REPLIES)]
