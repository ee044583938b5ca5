"""The games the integration tests play: experiments, a scripted player whose replies are a pure
function of the messages it is sent (so the same conversation gets the same reply whichever engine
asks), and the engine's own results for them."""

from __future__ import annotations

import re
from typing import Any

DOND_ARGS = {"objective": "self", "max_turns": 6, "prefill_proposals": True, "propose_after": 4,
             "reveal_proposals": True, "remind_pool": True}


def dond_experiment() -> dict[str, Any]:
    """Deal or No Deal self-play: 2 scenarios, each in both seat orders."""
    return {"name": "dond-selfplay", "game": "dond", "game_args": DOND_ARGS,
            "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 30, "seed": 0}, "limit": 2},
            "agents": {"negotiator": {"role": "negotiator", "model": "smollm2-135m",
                                      "sampling": {"max_new_tokens": 24}}},
            "tournament": {"type": "self_play", "participants": ["negotiator"], "flip": True},
            "run": {"seed": 0}}


def debate_experiment() -> dict[str, Any]:
    """A one-round debate with a judge seat: 1 question, both side assignments."""
    return {"name": "debate-judged", "game": "debate", "game_args": {"format": "debate", "rounds": 1},
            "dataset": {"name": "generated", "split": "test", "limit": 1, "args": {"people": 2, "filler_sentences": 0}},
            "agents": {"debater": {"role": "debater", "model": "smollm2-135m"},
                       "judge": {"role": "judge", "model": "smollm2-135m", "verdict": "generate"}},
            "tournament": {"type": "self_play", "participants": ["debater"], "judges": ["judge"], "flip": True},
            "run": {"seed": 0}}


def kuhn_experiment() -> dict[str, Any]:
    """TextArena Kuhn Poker: the model against TextArena's random legal player, 2 seeds."""
    return {"name": "kuhn-vs-random", "game": "textarena", "game_args": {"env_id": "KuhnPoker-v0"},
            "dataset": {"name": "seeds", "split": "train", "args": {"n": 2}},
            "agents": {"smol": {"role": "player", "model": "smollm2-135m", "sampling": {"max_new_tokens": 8}},
                       "random": {"role": "player", "model": "textarena-random"}},
            "tournament": {"type": "custom", "matchups": [["smol", "random"]], "flip": True},
            "run": {"seed": 0}}


def reply(body: dict[str, Any]) -> str:
    """A scripted player of every test game, reading only the messages it is sent."""
    messages = body["messages"]
    last, system = messages[-1]["content"], messages[0]["content"]
    if "Give your verdict" in last:
        return "Debater_A | 80%"
    if "Your available actions are" in last:  # Kuhn Poker: bet or call with a king, else check or fold
        card = re.findall(r"Your card is: '(\w)'", last)[-1:]
        strong = card == ["K"]
        if "'[check]'" in last:
            return "[bet]" if strong else "[check]"
        return "[call]" if strong or card == ["Q"] else "[fold]"
    if "split" in system and "[propose]" in system:  # Deal or No Deal
        pool = re.search(r"split (\d+) books?, (\d+) hats? and (\d+) balls?", system)
        if "proposes to keep" in last and pool:  # keep what the other leaves: a deal
            b, h, z = (int(x) for x in pool.groups())
            kept = re.search(r"proposes to keep (\d+) books?, (\d+) hats? and (\d+) balls?", last)
            b, h, z = (b - int(kept[1]), h - int(kept[2]), z - int(kept[3])) if kept else (b, h, z)
            return f"[propose] ({b} books, {h} hats, {z} balls)"
        if any(m["role"] == "assistant" for m in messages):
            return "[propose] (1 books, 0 hats, 0 balls)"
        return "[message] I would like one book; you can have the rest."
    return "My answer is right. <quote>the</quote>"


def engine_rewards(experiment: dict[str, Any], server: Any, held: list[str],
                   models: dict[str, Any] | None = None) -> dict[tuple, dict[str, float]]:
    """What sparring's engine gives when the `held` agents are the served model: each scheduled
    episode's rewards, by (instance, matchup, mirrored)."""
    from sparring.engine.play import Arena
    from sparring.models.openai_backend import OpenAIModel

    config = {**experiment, "agents": {name: ({**agent, "model": "served"} if name in held else agent)
                                       for name, agent in experiment["agents"].items()}}
    served = OpenAIModel("served", model="m", base_url=server.openai_base_url, max_retries=0)
    with Arena.from_config(config, models={"served": served, **(models or {})}) as arena:
        records = arena.play(arena.jobs(), max_live=1)  # one at a time, as the tests play them (TextArena deals
        # from the global random module: interleaved episodes would deal differently)
    assert all(r.status != "failed" for r in records), [r.error for r in records]
    return {(r.instance_id, r.matchup, r.flip): dict(r.outcome.rewards) for r in records}
