"""TextWorld cooking's hooks: its clemscore quality, headline metrics and the command as a tool."""

from __future__ import annotations

from sparring.gameapi.hooks import GameHooks, Metric, Metrics, MoveTool, ToolArg


def quality(m: Metrics) -> float | None:
    """100 x the normalised game score (share of the recipe's points earned; 100 = the meal is
    cooked and eaten)."""
    s = m.get("score")
    return None if s is None else 100.0 * float(s)


TOOLS = (MoveTool("command", "Type one command into the game (e.g. open fridge, take red apple).",
                  (ToolArg("command", str, "the command"),), lambda a, ctx: str(a["command"]).strip()),)

HOOKS = GameHooks(quality=quality, tools=TOOLS, metrics=(
    Metric("success", "higher", "wilson", "the meal was cooked and eaten"),
    Metric("score", "higher", "bootstrap", "normalised game score"),
    Metric("invalid_rate", "lower", "bootstrap", "share of steps with an invalid command"),
))
