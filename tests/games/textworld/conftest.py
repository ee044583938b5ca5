"""Shared TextWorld fixtures: one game (one simulator pool: a JVM starts in ~1 s) for the rules
tests. Tests that need the simulator skip without textworld-express or Java; `tw_helpers` is
importable from these tests (pytest runs with --import-mode=importlib)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def tw_game():
    from tw_helpers import require_simulator

    require_simulator()
    from sparring.games.textworld_cooking.game import CookingConfig, TextWorldCookingGame

    game = TextWorldCookingGame(CookingConfig(max_steps=30))
    yield game
    game.close()


@pytest.fixture(scope="session")
def tw_instances(tw_game):
    from sparring.gameapi.game import DatasetConfig

    return tw_game.load_instances(DatasetConfig(name="cookingworld", split="train", limit=4), base_dir=Path("."))
