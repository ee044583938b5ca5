"""Wordle's hooks: headline metrics (its quality is the outcomes' own `quality_score`) and the guesser's
move as a tool (guess)."""

from __future__ import annotations

from typing import Any

from sparring.gameapi.hooks import GameHooks, Metric, MoveTool, PanelContext, ToolArg


def _guess_args(reply: str, ctx: PanelContext) -> dict[str, Any] | None:
    """The word of a written guess, as the game reads it (`protocol.parse_guess`)."""
    from sparring.games.wordle.protocol import ParseError, parse_guess

    try:
        return {"word": parse_guess(reply).word}
    except ParseError:
        return None


TOOLS = (MoveTool("guess", "Guess the five-letter word.", (ToolArg("word", str, "a five-letter English word"),),
                  lambda a, ctx: f"GUESS: {str(a['word']).strip()}", roles=frozenset({"guesser"}), parse=_guess_args),)

HOOKS = GameHooks(metrics=(
    Metric("success", "higher", "wilson", "the word was found"),
    Metric("n_guesses", "lower", "bootstrap", "guesses per game"),
    Metric("quality_score", "higher", "bootstrap", "100 / n for a success at attempt n, else 0"),
), tools=TOOLS, tool_args={"action_format": "tools", "prefill": False})
