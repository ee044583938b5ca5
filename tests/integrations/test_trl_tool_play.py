"""A model plays a TRL environment class through tool calls, batched (`sparring.integrations.trl.play`),
the way TRL's rollout does: its calls parsed by TRL's parser, run on the environment, the results
appended; and the Deal or No Deal demonstrator whose games are the TRL warm start's data."""

from __future__ import annotations

import json

import torch

from sparring.games.negotiation.partner import claim, demonstrator
from sparring.integrations.trl.demos import tool_demonstrations
from sparring.integrations.trl.environment import OVER, environment_class
from sparring.integrations.trl.play import play_with_tools
from sparring.integrations.trl.tokenizer import with_tool_template
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_model
from sparring.types import GenerateRequest, Message

FAIR = "sparring.games.negotiation.partner:fair_partner"
DEMO = "sparring.games.negotiation.partner:demonstrator"


def experiment(n: int = 4) -> dict:
    return {"name": "dond-vs-fair", "game": "dond", "game_args": {"objective": "self", "max_turns": 6, "reveal_proposals": True},
            "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 30, "seed": 0}, "limit": n},
            "agents": {"learner": {"role": "negotiator", "model": "smollm2-135m"},
                       "partner": {"role": "negotiator", "model": "fair"}},
            "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}, "run": {"seed": 0}}


def env_class(n: int = 4):
    return environment_class(experiment(n), learner="learner",
                             models={"fair": ScriptedModel("fair", mode="callable", function=FAIR)})


def scripted_policy(tok, replies):
    """A tiny model whose `generate` writes `replies(conversation_text)` for each row (a policy's choices;
    a random model writes no well-formed call)."""
    model, _ = tiny_model(vocab=1024)

    def generate(input_ids=None, attention_mask=None, max_new_tokens=None, pad_token_id=None, **kwargs):
        rows = [tok(replies(tok.decode(row)), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                for row in input_ids]
        width = max(map(len, rows))
        return torch.cat([input_ids, torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])], dim=1)

    model.generate = generate
    return model


def call(name: str, **args) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def tokenizer():
    _, tok = tiny_model(vocab=1024)
    tok = with_tool_template(tok)
    tok.padding_side = "left"
    return tok


def test_the_demonstrator_asks_then_leaves_the_partner_its_favourite():
    labels = {"dond_values": [2, 2, 0], "dond_pool": [1, 4, 1]}
    first = GenerateRequest(messages=[Message(role="user", content="You speak first.")], context=labels)
    assert demonstrator(first).startswith("[message] ")
    heard = GenerateRequest(messages=[Message(role="user", content="The other player says: I care most about the "
                                                                    "hats; you can have the rest.")], context=labels)
    assert demonstrator(heard) == "[propose] (1 books, 0 hats, 0 balls)"  # no hats, and no ball (worth 0 to it)
    assert claim((2, 2, 0), (1, 4, 1), 0) == (0, 4, 0)


def test_a_policy_writing_the_demonstrators_calls_plays_its_games():
    """Replaying the demonstrator's calls through `play_with_tools` gives the demonstrations' rewards:
    the player runs the calls it parses exactly as the demonstrations ran them."""
    Env = env_class()
    demos = tool_demonstrations(Env, ScriptedModel("demo", mode="callable", function=DEMO))
    assert len(demos) == 8 and any(d["reward"] > 0 for d in demos)
    plans = {(d["instance_id"], d["seat"]): [m["tool_calls"][0]["function"] for m in d["messages"][1::2]] for d in demos}
    tok = tokenizer()
    first_views = {Env().reset(**row): (row["instance_id"], row["seat"]) for row in Env.dataset()}

    def replies(text: str) -> str:
        key = next(v for k, v in first_views.items() if k in text)
        f = plans[key][text.count("<tool_response>")]
        return call(f["name"], **json.loads(f["arguments"]))

    games = play_with_tools(Env, scripted_policy(tok, replies), tok, Env.dataset(), batch_size=3)
    by_key = {(g.instance_id, g.seat): g for g in games}
    for d in demos:
        g = by_key[(d["instance_id"], d["seat"])]
        assert g.ended == "over" and g.reward == d["reward"] and g.failed_calls == 0
        assert [m.get("content") for m in g.messages if m["role"] == "tool"] == \
            [m["content"] for m in d["messages"] if m["role"] == "tool"]
        assert g.record is not None and g.results[-1] == OVER


def test_a_reply_without_a_call_ends_the_game_and_a_bad_call_is_answered():
    Env = env_class(n=1)
    tok = tokenizer()

    def replies(text: str) -> str:
        turn = text.count("<tool_response>")
        return [call("shout", message="hi"), call("propose", books=1), "I will not play."][min(turn, 2)]

    (game, *_) = play_with_tools(Env, scripted_policy(tok, replies), tok, Env.dataset(seats=[0]))
    assert game.ended == "no call" and game.replies == 3 and game.calls == 2 and game.failed_calls == 2
    assert all("error" in r for r in game.results) and game.reward == 0.0
    assert game.messages[-1] == {"role": "assistant", "content": "I will not play."}


def test_max_moves_ends_a_game_that_goes_on():
    Env = env_class(n=1)
    tok = tokenizer()
    (game,) = play_with_tools(Env, scripted_policy(tok, lambda text: call("say", message="Hello")), tok,
                              Env.dataset(seats=[1]), max_moves=2)
    assert game.ended == "moves" and game.calls == 2 and game.record is not None
