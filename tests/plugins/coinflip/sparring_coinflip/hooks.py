"""What sparring's layers above the games learn about coin flip, declared here and nowhere else:
the quality for `sparring bench` (clemscore), the metric for training-loop reports, the web
play panel, and a source of human guesses for `sparring export sft --human coin_guesses`."""

from __future__ import annotations

import json

from sparring.gameapi.hooks import GameHooks, HumanReplay, Metric, PlayPanel, ReplayPlan
from sparring.models.replay import ReplayModel


def quality(metrics):
    """0-100 for the clemscore: a right guess is worth 100."""
    return 100.0 if metrics.get("correct") else 0.0


def human_guesses(path, split, limit, rounds):
    """A JSONL of human guesses, `{"instance_id": "coin-0", "guess": "heads"}` a line, each
    replayed through the game so its SFT row shows exactly what a model would be shown."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = lines[:limit] if limit else lines
    records = [{"instance_id": g["instance_id"],
                "events": [{"player": "Guesser", "tag": "guess", "content": f"GUESS: {g['guess']}"}]}
               for g in lines]
    n = 1 + max(int(g["instance_id"].split("-")[-1]) for g in lines)
    config = {"name": "human-coinflip", "game": "coinflip", "dataset": {"name": "coins", "args": {"n": n}},
              "agents": {"human": {"role": "guesser", "model": "human"}},
              "tournament": {"type": "self_play", "participants": ["human"]}}
    return ReplayPlan(config=config, models={"human": ReplayModel.from_records(records, name="human")},
                      keep={g["instance_id"] for g in lines})


HOOKS = GameHooks(
    quality=quality,
    metrics=(Metric("correct", "higher", "wilson", "the guess was right"),),
    play=PlayPanel(roles=("guesser",), hints={"guess": "GUESS: heads or GUESS: tails"}),
    human_data=(HumanReplay("coin_guesses", "guesser", human_guesses, "human coin guesses (JSONL)"),),
)
