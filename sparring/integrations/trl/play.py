"""A Hugging Face model plays a TRL environment class through its tools, as TRL's tool-calling GRPO
rolls out, but many games at once: for measuring a policy on held-out games before and after
training through `environment_factory`.

What the model sees is what TRL shows it: the row's first view (`reset`) as the user turn, the
tools' schemas in the chat template, each reply parsed by the tokenizer's response parser as TRL
parses it (transformers' `parse_response`), every call run on the environment and its result appended as a tool
message. A reply without a tool call ends the game as it ends a TRL rollout (`get_reward` scores it
as it stands). Unlike TRL, each turn of every live game is generated in one left-padded batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.integrations.trl.environment import OVER, GameEnvironment


@dataclass(eq=False)  # games are told apart by identity
class ToolGame:
    """One game played through tools: the conversation, the learner's reward, and what it wrote."""

    instance_id: str
    seat: int
    messages: list[dict[str, Any]]
    reward: float = 0.0
    replies: int = 0          # replies the model wrote
    calls: int = 0            # tool calls among them (a reply may hold several)
    failed_calls: int = 0     # calls to no tool or with arguments the tool does not take
    ended: str = ""           # "over" (the game ended), "no call" (a reply without a call), "moves" (max_moves)
    results: list[str] = field(default_factory=list)
    record: Any = None        # the engine's episode record (outcome, metrics)


def play_with_tools(env_class: type[GameEnvironment], model: Any, tokenizer: Any, rows: Any, *,
                    max_moves: int = 8, max_new_tokens: int = 64, temperature: float = 0.0,
                    batch_size: int = 32, seed: int = 0, progress: Any = None) -> list[ToolGame]:
    """Play every row of `rows` (as `env_class.dataset()` gives them) with `model`; `temperature`
    0 is greedy. `progress`: called with the number of games that ended after each batch."""
    import torch

    from sparring.integrations.trl.demos import tool_schemas

    schemas = tool_schemas(env_class)
    games: list[ToolGame] = []
    live: list[tuple[ToolGame, GameEnvironment]] = []
    for row in rows:
        env = env_class()
        view = env.reset(**dict(row))
        game = ToolGame(str(row["instance_id"]), int(row.get("seat", 0)), [{"role": "user", "content": view}])
        games.append(game)
        if view == OVER:
            _end(game, env, "over")
        else:
            live.append((game, env))
    torch.manual_seed(seed)
    for _ in range(max_moves):
        if not live:
            break
        still = []
        for start in range(0, len(live), batch_size):
            chunk = live[start:start + batch_size]
            replies = _generate(model, tokenizer, [g.messages for g, _ in chunk], schemas, max_new_tokens, temperature)
            ended = 0
            for (game, env), reply in zip(chunk, replies, strict=True):
                if _step(game, env, reply):
                    still.append((game, env))
                else:
                    ended += 1
            if progress is not None:
                progress(ended)
        live = still
    for game, env in live:
        _end(game, env, "moves")
    return games


def _end(game: ToolGame, env: GameEnvironment, how: str) -> None:
    game.ended, game.reward = how, env.get_reward()
    game.record = env.record


def _step(game: ToolGame, env: GameEnvironment, reply: dict[str, Any]) -> bool:
    """Run the reply's calls on `env`; False when the game ended (its reward is then set)."""
    game.replies += 1
    calls = reply.get("tool_calls") or []
    game.messages.append({"role": "assistant", "content": reply.get("content") or "", **({"tool_calls": calls} if calls else {})})
    if not calls:
        _end(game, env, "no call")
        return False
    over = False
    for call in calls:
        game.calls += 1
        function = call.get("function", {})
        name, args = function.get("name", ""), function.get("arguments") or {}
        method = getattr(env, name, None) if name in {t.name for t in env._game.tools} else None
        try:
            if method is None or not isinstance(args, dict):
                raise TypeError(f"Tool {name} not found.")
            result = str(method(**args))
        except TypeError as e:  # as TRL answers a failed call: the error as the tool's result
            game.failed_calls += 1
            result = str({"error": str(e)})
        game.messages.append({"role": "tool", "name": name, "content": result})
        game.results.append(result)
        over = over or result == OVER
    if over:
        _end(game, env, "over")
        return False
    return True


def _generate(model: Any, tokenizer: Any, conversations: list[list[dict[str, Any]]], schemas: list[dict[str, Any]],
              max_new_tokens: int, temperature: float) -> list[dict[str, Any]]:
    """One reply per conversation, parsed as TRL parses a rollout's completion."""
    import torch

    prompts = [tokenizer.apply_chat_template(c, tools=schemas, add_generation_prompt=True, tokenize=True,
                                             return_dict=True)["input_ids"] for c in conversations]
    width = max(map(len, prompts))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
    with torch.no_grad():
        out = model.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                             max_new_tokens=max_new_tokens, pad_token_id=pad, **sampling)
    replies = []
    tools: list[Any] = list(schemas)
    for prompt, row in zip(prompts, out[:, width:].tolist(), strict=True):
        completion = _until_end(row, tokenizer, pad)
        replies.append(_parse(tokenizer, completion, list(prompt), tools))
    return replies


def _parse(tokenizer: Any, ids: list[int], prefix: list[int], tools: list[Any]) -> dict[str, Any]:
    """The completion as TRL's rollout reads it: transformers' `parse_response` with the prompt as
    its prefix and the tools typing the arguments; a completion that does not parse is text (no call)."""
    try:
        parsed = tokenizer.parse_response(ids, prefix=prefix, tools=tools)
    except (ValueError, TypeError, KeyError):
        parsed = None
    if not isinstance(parsed, dict):
        return {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}
    content = parsed.get("content")
    parsed["content"] = content.removesuffix(tokenizer.eos_token) if isinstance(content, str) else ""
    return parsed


def _until_end(row: list[int], tokenizer: Any, pad: int) -> list[int]:
    """The generated ids up to and including the end-of-turn token (the rest is padding)."""
    ends = {tokenizer.eos_token_id, pad}
    for i, token in enumerate(row):
        if token in ends:
            return row[:i + 1] if token == tokenizer.eos_token_id else row[:i]
    return row
