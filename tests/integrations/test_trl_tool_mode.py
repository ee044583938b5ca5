"""Issue #61: what a model trained through TRL's tool calls reads. The learner's view asks for tool
calls in the game's own words (no text-format rules that contradict the tool schema), and the
bundled model's ChatML template gets tool calls (sparring's chatml_tools.jinja) that TRL accepts,
renders unchanged without tools, and parses back."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.errors import ConfigError, SparringError
from sparring.gameapi import GAMES
from sparring.gameapi.hooks import PanelContext
from sparring.integrations.trl.environment import environment_class, with_tool_wording
from sparring.integrations.trl.tokenizer import chatml_tool_template, with_tool_template
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_tokenizer

DOND = {"name": "dond-tools", "game": "dond", "game_args": {"objective": "self", "max_turns": 6, "reveal_proposals": True,
                                                              "remind_pool": True},
        "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 30, "seed": 0}, "limit": 2},
        "agents": {"learner": {"role": "negotiator", "model": "smollm2-135m"},
                   "partner": {"role": "negotiator", "model": "partner"}},
        "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}, "run": {"seed": 0}}
WORDLE = {"name": "wordle-tools", "game": "wordle", "game_args": {"prefill": True},  # as wordle-quickstart: tools turn it off
          "dataset": {"name": "words", "split": "train", "limit": 2},
          "agents": {"learner": {"role": "guesser", "model": "smollm2-135m"}},
          "tournament": {"type": "self_play", "participants": ["learner"]}, "run": {"seed": 0}}
TEXT_RULES = ("[message]", "[propose]", "ONE line", "EXPLANATION:", "GUESS:")


def partner() -> ScriptedModel:
    return ScriptedModel("partner", mode="cycle", texts=["[message] I want the books",
                                                         "[propose] (1 books, 0 hats, 0 balls)"])


def test_every_game_with_tool_wording_names_game_args_it_accepts():
    """`hooks.tool_args` are game_args: each game that declares them validates them."""
    with_wording = {name: cls for name, cls in GAMES.items() if cls.hooks.tool_args}
    assert {"dond", "wordle"} <= set(with_wording)
    for cls in with_wording.values():
        cls.Config.model_validate(dict(cls.hooks.tool_args))


def test_dond_learner_reads_tool_calls_and_no_text_format():
    env = environment_class(DOND, learner="learner", models={"partner": partner()})()
    rows = type(env).dataset()
    views = [env.reset(**row) for row in rows]
    for view in views:
        assert "say(message)" in view and "propose(books, hats, balls)" in view
        assert not any(rule in view for rule in TEXT_RULES), view
    first = next(v for v in views if "You speak first" in v)
    assert first.rstrip().endswith("Your turn. Call say.")
    env.reset(**next(r for r, v in zip(rows, views, strict=True) if "You speak first" in v))
    after = env.say(message="I want the hats")
    assert "The other player says: I want the books" in after and "The whole pool is propose(books=" in after
    notice = env.say(message="fine")
    assert "To accept, keep the rest: propose(books=0," in notice and "[propose]" not in notice
    env.propose(books=0, hats=4, balls=1)
    assert env.record.outcome is not None  # the calls were played as the game's text moves
    learner = next(p for p, seat in env.record.seats.items() if seat.agent == "learner")
    learner_moves = [c.completions[0].text for c in env.record.calls if c.player == learner]
    assert learner_moves[0] == "[message] I want the hats" and learner_moves[-1].startswith("[propose] (0 books")


def test_wordle_learner_reads_tool_calls():
    env = environment_class(WORDLE, learner="learner")()
    view = env.reset(**type(env).dataset()[0])
    assert "calling the tool guess" in view and "Call guess with one English word" in view
    assert not any(rule in view for rule in TEXT_RULES), view
    news = env.guess(word="crane")
    assert "Feedback for CRANE" in news and "Call guess" in news


def test_tool_wording_can_be_left_off_and_text_games_keep_theirs():
    env = environment_class(DOND, learner="learner", models={"partner": partner()}, tool_wording=False)()
    assert "[message]" in env.reset(**type(env).dataset()[0])
    taboo = {"game": "taboo", "game_args": {"max_turns": 3}}
    assert with_tool_wording(taboo) == taboo  # no tool wording declared: unchanged
    assert with_tool_wording({"game": "no-such-game"}) == {"game": "no-such-game"}  # the resolver names it later


@pytest.mark.parametrize("game, args", [("dond", {"action_format": "tools", "prefill_proposals": True}),
                                        ("wordle", {"action_format": "tools", "prefill": True})])
def test_prefilled_text_and_tool_calls_are_one_clear_error(game, args):
    with pytest.raises(SparringError, match="tools"):
        from sparring.engine.loader import config_from_data, resolve

        data = {**(DOND if game == "dond" else WORDLE), "game_args": args}
        cfg, path = config_from_data(data, Path("tools.yaml"))
        resolve(cfg, path)


def conversations() -> list[list[dict]]:
    return [[{"role": "user", "content": "hi"}],
            [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "hello"}, {"role": "user", "content": "more"}]]


def test_the_chatml_tool_template_is_the_bundled_template_without_tools():
    tok = tiny_tokenizer()
    own = tok.chat_template
    assert "<|im_start|>" in own
    for messages in conversations():
        for gen in (True, False):
            assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen,
                                           chat_template=chatml_tool_template()) == \
                tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen, chat_template=own)


def test_trl_accepts_the_template_and_parses_the_calls_back():
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    tok = tiny_tokenizer()
    assert not supports_tool_calling(tok)  # what TRL refused (issue #61)
    with_tool_template(tok, "the bundled model")
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    tools = [{"type": "function", "function": {"name": "guess", "description": "Guess the word.", "parameters": {
        "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}]
    prompt = tok.apply_chat_template([{"role": "user", "content": "play"}], tools=tools, tokenize=False,
                                     add_generation_prompt=True)
    assert '"name": "guess"' in prompt and "<tool_call>" in prompt
    reply = 'Let me try.\n<tool_call>\n{"name": "guess", "arguments": {"word": "crane"}}\n</tool_call><|im_end|>'
    parsed = tok.parse_response(reply, prefix=prompt)
    assert parsed["content"] == "Let me try."
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "guess", "arguments": {"word": "crane"}}}]
    again = tok.apply_chat_template([{"role": "user", "content": "play"}, parsed], tools=tools, tokenize=False)
    assert again == prompt + reply + "\n"  # a parsed call renders back as the model wrote it


def test_a_template_sparring_cannot_give_tools_is_one_clear_error():
    tok = tiny_tokenizer()
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(ConfigError, match="chat_template.*not ChatML"):
        with_tool_template(tok, "my-model")


def test_the_docs_trl_example_imports_what_exists():
    """docs/scale-out.md's TRL examples (the GRPO run, the warm start): every name they import
    exists, and they compile."""
    import ast
    import importlib
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "scale-out.md").read_text(encoding="utf-8")
    section = re.search(r"## TRL: one learner(.*?)## What was run here", page, re.S)
    assert section is not None
    blocks = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert len(blocks) == 2 and "tool_tokenizer(" in blocks[0] and "tool_demonstrations(" in blocks[1]
    for block in blocks:
        tree = ast.parse(block.replace("...", "max_steps=1"))
        imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert imports
        for node in imports:
            module = importlib.import_module(node.module or "")
            assert all(hasattr(module, alias.name) for alias in node.names), node.module


def solver() -> ScriptedModel:
    return ScriptedModel("wordle-solver", mode="callable", function="sparring.games.wordle.scripted:solver")


def test_written_moves_read_back_as_the_calls_that_play_them():
    """`MoveTool.parse` inverts `text`: the call it reads from a move's text writes that text again."""
    from sparring.games.negotiation.config import DondConfig
    from sparring.games.wordle.game import WordleConfig

    for cls, config, calls in [
        (GAMES.get("dond"), DondConfig(), [("say", {"message": "I want the hats"}),
                                           ("propose", {"books": 1, "hats": 0, "balls": 2})]),
        (GAMES.get("wordle"), WordleConfig(), [("guess", {"word": "crane"})])]:
        ctx = PanelContext(instance=None, player="Player 1", flip=False, game_config=config)
        tools = {t.name: t for t in cls.hooks.tools}
        for name, args in calls:
            text = tools[name].text(args, ctx)
            assert tools[name].parse(text, ctx) == args
            assert all(t.parse(text, ctx) is None for n, t in tools.items() if n != name)
    dond = {t.name: t for t in GAMES.get("dond").hooks.tools}
    ctx = PanelContext(instance=None, player="Player 1", flip=False, game_config=DondConfig())
    assert dond["say"].parse("no tag at all", ctx) is None and dond["propose"].parse("[propose] (x)", ctx) is None


def test_a_demonstrators_games_become_tool_call_conversations():
    """The Wordle solver plays the learner's seat; each game is the conversation TRL would see:
    the first view, the calls, the environment's own answers, the reward."""
    import json

    from sparring.integrations.trl.demos import tool_demonstrations

    Env = environment_class(WORDLE, learner="learner")
    rows = tool_demonstrations(Env, solver())
    assert len(rows) == 2 and all(r["reward"] > 0 for r in rows)  # the solver finds the words
    env = Env()
    for row in rows:
        messages = row["messages"]
        assert messages[0] == {"role": "user", "content": env.reset(instance_id=row["instance_id"], seat=row["seat"])}
        calls = messages[1::2]
        assert all(m["tool_calls"][0]["function"]["name"] == "guess" for m in calls)
        answers = [env.guess(**json.loads(m["tool_calls"][0]["function"]["arguments"])) for m in calls]
        assert [m["content"] for m in messages[2::2]] == answers  # replayed: the same tool results
        assert answers[-1] == "The game is over." and env.get_reward() == row["reward"]
    assert [t["function"]["name"] for t in json.loads(rows[0]["tools"])] == ["guess"]


def test_demonstrations_render_with_the_tool_template_and_train_only_the_calls():
    import json

    import datasets

    from sparring.integrations.trl.demos import tool_demonstrations

    rows = tool_demonstrations(environment_class(WORDLE, learner="learner"), solver())
    data = datasets.Dataset.from_list([{"messages": r["messages"], "tools": r["tools"]} for r in rows])
    tok = with_tool_template(tiny_tokenizer())
    text = tok.apply_chat_template(data[0]["messages"], tools=json.loads(data[0]["tools"]), tokenize=False)
    assert text.count("<tool_call>") == len(rows[0]["messages"][1::2]) + 2  # each call, and twice in the format lines
    assert '{"name": "guess", "arguments": {"word": "' in text and "None" not in text
    out = tok.apply_chat_template(data[0]["messages"], tools=json.loads(data[0]["tools"]), tokenize=True,
                                  return_dict=True, return_assistant_tokens_mask=True)
    trained = tok.decode([t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m])
    assert "<tool_call>" in trained and "Feedback for" not in trained and "Wordle" not in trained
