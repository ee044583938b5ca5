"""Tool-call demonstrations: a demonstrator plays the learner's seat of a TRL environment, and each
game becomes a conversation in the shape TRL's tool-calling GRPO will produce, for an SFT warm start.

A model that has never seen a tool call writes none (the bundled 135M model: 0 in 8 samples of
Wordle's tool view), so GRPO through `environment_factory` has nothing to reinforce. Here a
demonstrator (a scripted player such as `fair-negotiator` or the Wordle solver, or any model that
writes the game's text moves) answers each of the learner's turns; its written move is turned into
the call that plays it (`MoveTool.parse`, the inverse of the tool's `text`) and played through the
environment's own tool method, so the tool results are exactly what TRL will show. A game in which
a reply matches no tool is left out. Each row:

    {"messages": [{"role": "user", "content": first view},
                  {"role": "assistant", "content": "", "tool_calls": [call]},
                  {"role": "tool", "name": ..., "content": what the tool returned}, ...],
     "tools": JSON of the tools' schemas, "reward": the learner's reward, "instance_id", "seat"}

which TRL's `SFTTrainer` trains on as a tool-calling dataset (`assistant_only_loss` trains the calls
only; the arguments are JSON text, so rows with different tools share one Arrow schema).
"""

from __future__ import annotations

import json
from typing import Any

from sparring.gameapi.hooks import MoveTool, PanelContext
from sparring.integrations.trl.environment import OVER, GameEnvironment
from sparring.models.base import Model


def tool_schemas(env_class: type[GameEnvironment]) -> list[dict[str, Any]]:
    """The JSON schemas TRL shows the model for the class's tools (transformers' `get_json_schema`)."""
    from transformers.utils import get_json_schema

    env = env_class()
    return [get_json_schema(getattr(env, t.name)) for t in env_class._game.tools]


def _call(tools: list[MoveTool], reply: str, ctx: PanelContext) -> tuple[MoveTool, dict[str, Any]] | None:
    """The first tool whose `parse` reads `reply` as its move, with the call's arguments."""
    for tool in tools:
        args = tool.parse(reply, ctx) if tool.parse is not None else None
        if args is not None:
            return tool, dict(args)
    return None


def tool_demonstrations(env_class: type[GameEnvironment], demonstrator: Model, rows: Any = None,
                        max_moves: int = 64) -> list[dict[str, Any]]:
    """One conversation per row of `rows` (default `env_class.dataset()`) that `demonstrator`
    played to the end through the class's tools (see the module's docstring)."""
    game = env_class._game
    if not any(t.parse is not None for t in game.tools):
        from sparring.errors import SparringError

        raise SparringError(f"{game.game.name}: no tool of the role {game.role!r} can read a written move "
                            "(MoveTool.parse), so a demonstrator's games cannot become tool calls")
    schemas = json.dumps(tool_schemas(env_class), ensure_ascii=False)
    out = []
    for row in rows if rows is not None else env_class.dataset():
        conversation = _play(env_class(), dict(row), demonstrator, max_moves)
        if conversation is not None:
            messages, reward = conversation
            out.append({"messages": messages, "tools": schemas, "reward": reward,
                        "instance_id": row["instance_id"], "seat": int(row.get("seat", 0))})
    return out


def _play(env: GameEnvironment, row: dict[str, Any], demonstrator: Model,
          max_moves: int) -> tuple[list[dict[str, Any]], float] | None:
    """The demonstrator's game through `env`'s tools, or None when a reply is no tool's move."""
    game = env._game
    messages: list[dict[str, Any]] = [{"role": "user", "content": env.reset(**row)}]
    for _ in range(max_moves):
        episode = env._episode
        request = episode.pending if episode is not None else None
        if request is None:
            break
        reply = demonstrator.generate([request])[0][0].text or ""
        found = _call(game.tools, reply, env._context())
        if found is None:
            env.get_reward()  # ends the episode
            return None
        tool, args = found
        result = getattr(env, tool.name)(**args)
        messages += [{"role": "assistant", "content": "",
                      "tool_calls": [{"type": "function", "function": {
                          "name": tool.name, "arguments": json.dumps(args, ensure_ascii=False)}}]},
                     {"role": "tool", "name": tool.name, "content": result}]
        if result == OVER:
            break
    return messages, env.get_reward()
