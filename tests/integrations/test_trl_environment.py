"""TRL `environment_factory` classes: one learner plays a game through typed tool calls while the
engine plays the rules and the fixed partner; TRL's GRPOTrainer trains two steps on a tiny random
model, and its tool mask keeps the partner's and the game's text out of the loss."""

from __future__ import annotations

import inspect
import os

import pytest
import torch

from sparring.integrations.trl.environment import environment_class
from sparring.integrations.trl.relay import news
from sparring.integrations.trl.tokenizer import with_tool_template
from sparring.models.scripted import ScriptedModel
from sparring.types import Message

PARTNER_SAYS = "[message] Partner here: I want the books"


def experiment() -> dict:
    """Deal or No Deal, the learner against a scripted partner (a message, then a proposal)."""
    return {"name": "dond-vs-partner", "game": "dond", "game_args": {"objective": "self", "max_turns": 6},
            "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 30, "seed": 0}, "limit": 2},
            "agents": {"learner": {"role": "negotiator", "model": "smollm2-135m"},
                       "partner": {"role": "negotiator", "model": "partner"}},
            "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}, "run": {"seed": 0}}


def partner() -> ScriptedModel:
    return ScriptedModel("partner", mode="cycle", texts=[PARTNER_SAYS, "[propose] (1 books, 0 hats, 0 balls)"])


@pytest.fixture(scope="module")
def Env():
    return environment_class(experiment(), learner="learner", models={"partner": partner()}, format_penalty=0.5)


def test_moves_are_typed_documented_tools(Env):
    from transformers.utils import get_json_schema

    public = [n for n, _ in inspect.getmembers(Env, predicate=inspect.isfunction) if not n.startswith("_")]
    assert sorted(public) == ["get_reward", "propose", "reset", "say"] and Env.__name__ == "DondEnvironment"
    schema = get_json_schema(Env().propose)["function"]
    assert schema["parameters"]["required"] == ["books", "hats", "balls"]
    assert schema["parameters"]["properties"]["hats"] == {"type": "integer", "description": "hats you keep"}
    rows = Env.dataset()
    assert len(rows) == 4 and set(rows.column_names) == {"prompt", "instance_id", "seat", "seed"}  # 2 scenarios x 2 seats


def test_an_episode_through_tools_is_the_engines(Env):
    env = Env()
    rows = Env.dataset()
    first = ""
    for row in rows:  # a game where the partner speaks first
        first = env.reset(**row)
        if "The other player speaks first" in first:
            break
    assert "Your goal" in first and "The other player says: Partner here" in first  # the rules, the partner's opening
    after = env.say(message="I want the hats")
    assert "hidden proposal" in after and "a call to propose(" in after  # the partner's proposal, as the game shows it
    assert "counts out of range" in env.propose(books=9, hats=9, balls=9)  # the game's correction, nothing played
    env.propose(books=0, hats=0, balls=0)
    reward = env.get_reward()
    record = env.record
    learner = record.seats and next(p for p, s in record.seats.items() if s.agent == "learner")
    assert reward == record.outcome.rewards[learner] - 0.5  # one rejected move
    sent = [c.completions[0].text for c in record.calls if c.player == learner]
    assert sent[0] == "[message] I want the hats" and sent[1].startswith("[propose] (9 books")
    assert env.say(message="too late") == "The game is over."

    env.reset(**rows[0])  # stopped before the end: the engine stores the game as aborted, scored as it stands
    assert env.get_reward() == 0.0 and env.record.status == "aborted"


def test_news_is_what_follows_the_learners_move():
    sys_, a, b = Message(role="system", content="rules"), Message(role="user", content="hi"), \
        Message(role="user", content="partner: hello")
    assert news([sys_, a], [sys_, a, Message(role="assistant", content="me"), b]) == "partner: hello"
    rerendered = [sys_, Message(role="user", content="h"), Message(role="assistant", content="me"), b]
    assert news([sys_, a], rerendered) == "partner: hello"


@pytest.mark.slow
def test_grpo_trainer_trains_two_steps_with_the_environment(Env, tmp_path, monkeypatch):
    """A random model never writes a well-formed tool call, so its generations are scripted (the
    policy's choices); TRL renders, parses, calls the tools, masks, rewards and trains for real."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from sparring.models.tiny import tiny_model

    model, tok = tiny_model(vocab=1024)
    with_tool_template(tok)  # the bundled model's ChatML, with tool calls
    tok.padding_side = "left"
    say = '<tool_call>\n{"name": "say", "arguments": {"message": "I want the hats"}}\n</tool_call>'
    plans = [[say, '<tool_call>\n{"name": "propose", "arguments": {"books": 0, "hats": 1, "balls": 0}}\n</tool_call>'],
             [say, '<tool_call>\n{"name": "propose", "arguments": {"books": 9, "hats": 9, "balls": 9}}\n</tool_call>']]

    def generate(input_ids=None, attention_mask=None, generation_config=None, **kwargs):
        rows = []
        for i, row in enumerate(input_ids):  # rollout i of the group follows plan i; "Done." ends it
            turn = tok.decode(row).count("<tool_response>")
            plan = plans[i % 2]
            rows.append(tok(plan[turn] if turn < len(plan) else "Done.", add_special_tokens=False)["input_ids"]
                        + [tok.eos_token_id])
        width = max(map(len, rows))
        completions = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r in rows])
        return torch.cat([input_ids, completions], dim=1)

    model.generate = generate
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, max_steps=2, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=1024, logging_steps=1, report_to=[],
                      save_strategy="no", learning_rate=1e-3, max_tool_calling_iterations=4)
    trainer = GRPOTrainer(model=model, processing_class=tok, environment_factory=Env, train_dataset=Env.dataset(),
                          args=args)
    batches = []
    generate_and_score = trainer._generate_and_score_completions

    def keep(inputs):
        batches.append(generate_and_score(inputs))
        return batches[-1]

    trainer._generate_and_score_completions = keep
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logs) == 2 and all(h["tools/call_frequency"] == 2 for h in logs)
    assert any(h["reward_std"] > 0 for h in logs)  # the invalid proposal's penalty sets the rollouts apart
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # it trained
    for batch in batches:
        for ids, done, tools in zip(batch["completion_ids"], batch["completion_mask"], batch["tool_mask"], strict=True):
            trained, masked = tok.decode(ids[(done * tools).bool()]), tok.decode(ids[(done * (1 - tools)).bool()])
            assert '"name": "say"' in trained and '"name": "propose"' in trained
            assert "Partner here" in masked and "Partner here" not in trained  # the partner's text: no loss
            assert "Your turn" in masked and "Your turn" not in trained  # the game's text: no loss
    assert os.environ["TRL_EXPERIMENTAL_SILENCE"] == "1"


def test_the_docs_experiment_for_trl_loads_with_its_scripted_partner(tmp_path, monkeypatch):
    """docs/scale-out.md's `my-dond-vs-partner.yaml`, saved anywhere as the page says, makes an
    environment class whose partner is the shipped scripted fair-negotiator (issue #61: the page
    never showed the file, and without `models_file` the partner was an unknown model)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "scale-out.md").read_text(encoding="utf-8")
    block = re.search(r"saved as `my-dond-vs-partner.yaml`:\n\n```yaml\n(.*?)```", page, re.S)
    assert block is not None
    (tmp_path / "my-dond-vs-partner.yaml").write_text(block.group(1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    Env = environment_class("my-dond-vs-partner.yaml", learner="learner", split="train", limit=2, format_penalty=0.1)
    rows = Env.dataset()
    assert len(rows) == 4  # 2 scenarios x the learner in either seat
    first = Env().reset(**rows[0])
    assert "Your goal" in first
