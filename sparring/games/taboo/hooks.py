"""Taboo's hooks: headline metrics (its quality is the outcomes' own `quality_score`) and its moves as
tools (clue, guess)."""

from __future__ import annotations

from sparring.gameapi.hooks import GameHooks, Metric, MoveTool, ToolArg

TOOLS = (
    MoveTool("clue", "Give the guesser a clue, never saying the target word or a taboo word.",
             (ToolArg("clue", str, "your clue"),), lambda a, ctx: f"CLUE: {str(a['clue']).strip()}",
             roles=frozenset({"describer"})),
    MoveTool("guess", "Guess the target word.", (ToolArg("word", str, "one word"),),
             lambda a, ctx: f"GUESS: {str(a['word']).strip()}", roles=frozenset({"guesser"})),
)

HOOKS = GameHooks(metrics=(
    Metric("success", "higher", "wilson", "the word was guessed"),
    Metric("rounds", "lower", "bootstrap", "clue rounds per game"),
    Metric("quality_score", "higher", "bootstrap", "100 / n for a success at round n, else 0"),
), tools=TOOLS)
