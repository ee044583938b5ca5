"""TextArena's hooks: headline metrics (invalid moves, draws, length; wins come from the rewards), the
web play panel and the move as a tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring.gameapi.hooks import GameHooks, Metric, MoveTool, PlayPanel, ToolArg


def quality(metrics: Mapping[str, Any]) -> float | None:
    """The clemscore's quality of one game: 100 x the share of valid moves (a game against a
    baseline is read by its win rate, which the report shows beside it)."""
    rate = metrics.get("invalid_rate")
    return None if rate is None else 100.0 * (1.0 - float(rate))


PLAY = PlayPanel(roles=("player",), rules_first=True, hints={
    "move": "Your move as the observation asks for it, in brackets: [4] (TicTacToe), [check] / [bet] / [call] / "
            "[fold] (Kuhn Poker), [Offer: 1 Wheat -> 1 Ore] / [Accept] / [Deny] (negotiation)."})

TOOLS = (MoveTool("move", "Make your move, written as the observation asks for it (e.g. [4], [check]).",
                  (ToolArg("action", str, "the move, e.g. [4] or [check]"),), lambda a, ctx: str(a["action"]).strip()),)

HOOKS = GameHooks(quality=quality, play=PLAY, tools=TOOLS, metrics=(
    Metric("invalid_rate", "lower", "bootstrap", "invalid moves per move attempted (TextArena's own check)"),
    Metric("draw", "lower", "wilson", "the game ended without a winner"),
    Metric("turns", "lower", "bootstrap", "moves attempted per game"),
))
