"""Experiment: Kuhn Poker (TextArena), RL against a fixed opponent vs self-play, with and without a
baseline per role (SPIRAL's question, on the bundled model).

One hand a game of Kuhn Poker as the game is defined (`KuhnPokerBets-v0`: TextArena's Kuhn Poker
with bets and calls paid into the pot; TextArena's own `KuhnPoker-v0` pot holds only the antes, so
there every hand pays +-1, a player that never folds cannot be beaten and there is nothing to learn
against a fixed rule), `max_rounds: 1`, each player's reward the chips it won in the hand (`reward:
chips`: +-1, or +-2 for a called bet). The bundled model rarely writes a move in TextArena's
format, so first a warm start: SFT on a random legal player's moves in games against itself
(training seeds of their own). Then three arms from that start, each GRPO on sparring's trainer with
the same games per step, learning rate and steps:
- `fixed`: the learner against `textarena-random` (a random legal player), in both seats; the
  baseline is the mean of the learner's games of the same seed and seat (the same cards);
- `selfplay-rae`: the learner in both seats of every game, trained in both, each role's reward
  minus a running mean of that role's rewards (role-conditioned advantage estimation);
- `selfplay`: the same without it: one baseline for the group's games, both seats pooled — in a
  zero-sum game their rewards cancel in that mean, which is the failure RAE addresses.
Every policy plays held-out seeds (TextArena's test range, disjoint from every training seed: checked)
from both seats against `textarena-kuhn-rule`, a fixed card rule no arm trained against, greedily:
the mean payoff per hand (bootstrap), paired per (seed, seat) against the start, and what each
policy does with each card (from the records).
Since 2026-12-04 the experiment plays and trains in the conversation view (issue #59: a player's
prompt is a chat that only grows, a hand one training sequence); the warm start is also fitted in
the rendered view and both starts play the same held-out hands (`start-rendered`, paired).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sparring.learning.arms import AS_MEASURED, Measured, run_arm
from sparring.learning.context import Context, Played
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage, mean, paired, rate
from sparring.stats.kuhn import read_infoset

ENV = "KuhnPokerBets-v0"
VIEW = "conversation"  # textarena-kuhn's view (issue #59; its runs before 2026-12-04 were rendered: the page)
GAME = {"env_id": ENV, "env_kwargs": {"max_rounds": 1}, "reward": "chips"}
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"demos": 4, "demo_steps": 1, "train": 8, "heldout": 2, "steps": 1, "generations": 2, "prompts": 1,
              "tokens": 6},
    # full: a step plays 8 games (a pilot of 10 self-play RAE steps at lr 5e-4 moved the training reward
    # 0 -> 1.0 and collapsed the entropy to ~0.15: 2e-4 here, 30 steps per arm)
    "full": {"demos": 96, "demo_steps": 16, "train": 400, "heldout": 128, "steps": 30, "generations": 4,
             "prompts": 2, "tokens": 6},
}
LEARNING_RATE = 2e-4
MAX_LIVE = 32
TRAIN_OPPONENT = "textarena-random"
HELDOUT_OPPONENT = "textarena-kuhn-rule"
DEMO_START = 200_000  # the demonstrations' training seeds, apart from the arms' (0..)
ARMS = {"fixed": ({"mode": "fixed"}, "group"), "selfplay-rae": ({"mode": "self_play"}, "rae"),
        "selfplay": ({"mode": "self_play"}, "group")}
# the per-step curves drawn for the page (OUT/curves/textarena-kuhn-training.png)
TRAINING_PANELS = training_panels("chips, both seats",
                                  {"reward/Player 0": "reward, first to act", "reward/Player 1": "reward, second to act"})
_CARD = re.compile(r"Your card is: '([JQK])'")
_MOVE = re.compile(r"\[(check|bet|call|fold)\]", re.IGNORECASE)


def _seeds(split: str, n: int, start: int = 0) -> dict[str, Any]:
    return {"name": "seeds", "split": split, "args": {"n": n, "start": start}}


def view(size: dict[str, Any]) -> str:
    """The player's view a size plays in: `textarena-kuhn`'s own runs set it, the experiments that
    reuse these helpers keep the view their figures were measured in (rendered)."""
    return str(size.get("view") or "rendered")


def game(size: dict[str, Any]) -> dict[str, Any]:
    """The game's arguments a size plays: `GAME`, with what the size adds (`textarena-kuhn-hand`
    shows the hand's own lines only: `observation_from`)."""
    return {**GAME, **size.get("game_args", {})}


def observation(messages: list[Any]) -> str:
    """What the player has been shown of the game so far: the user turns of its prompt (one in the
    rendered view; in the conversation view each turn appends the observation's new part)."""
    return "\n".join(m.content for m in messages if getattr(m, "role", "user") == "user")


def _heldout(model: str, size: dict[str, Any]) -> dict[str, Any]:
    return {"game": "textarena", "view": view(size), "game_args": game(size), "dataset": _seeds("test", size["heldout"]),
            "agents": {"policy": {"role": "player", "model": model,
                                  "sampling": {"temperature": 0.0, "max_new_tokens": size["tokens"]}},
                       "opponent": {"role": "player", "model": HELDOUT_OPPONENT}},
            "tournament": {"type": "custom", "matchups": [["policy", "opponent"]], "flip": True},
            "run": {"seed": 0, "max_live": MAX_LIVE}}


def _as_textarena_reads(text: str) -> str:
    """The move as the game reads it: TextArena's action formatting wrapper puts a reply without
    any bracket in brackets (`call` -> `[call]`) before Kuhn Poker looks for `[move]`."""
    text = text.strip()
    return text if "[" in text or "]" in text else f"[{text}]"


def moves_by_card(records: list[Any], agent: str = "policy") -> dict[str, dict[str, int]]:
    """How often the agent checked, bet, called or folded (or wrote something else) with each card."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        players = {p for p, s in r.seats.items() if s.agent == agent}
        for call in r.calls:
            if call.player not in players or call.op != "generate" or not call.completions:
                continue
            cards = _CARD.findall(observation(call.messages or []))
            found = _MOVE.search(_as_textarena_reads(call.completions[0].text or ""))
            move = found.group(1).lower() if found else "invalid"
            row = out.setdefault(cards[-1] if cards else "?", {})
            row[move] = row.get(move, 0) + 1
    return {card: dict(sorted(v.items())) for card, v in sorted(out.items())}


def strategy(model: Any, records: list[Any], agent: str | None = "policy") -> dict[str, dict[str, float]]:
    """The policy's strategy, scored rather than sampled: at every decision the agent met in
    `records` (every agent's decisions with `agent=None`), each legal move's probability among the
    legal ones (`model.score` of `[move]` after the observation shown there), averaged per
    information set. Greedy play shows only each decision's argmax; this shows how far a trained
    policy moved from its start."""
    from sparring.types import ScoreRequest

    prompts: dict[str, dict[str, tuple[Any, list[str]]]] = {}
    for r in records:
        players = {p for p, s in r.seats.items() if agent is None or s.agent == agent}
        for call in r.calls:
            if call.player not in players or call.op != "generate" or not call.messages:
                continue
            found = read_infoset(observation(call.messages))
            if found:
                key = "\n".join(m.content for m in call.messages)
                prompts.setdefault(found[0], {})[key] = (call.messages, found[1])
    out: dict[str, dict[str, float]] = {}
    for name, seen in sorted(prompts.items()):
        legal = next(iter(seen.values()))[1]
        requests = [ScoreRequest(messages=messages, options=[f"[{m}]" for m in moves]) for messages, moves in seen.values()]
        totals = dict.fromkeys(legal, 0.0)
        for logps, (_, moves) in zip(model.score(requests), seen.values(), strict=True):
            norm = max(logps) + math.log(sum(math.exp(x - max(logps)) for x in logps))
            for move, lp in zip(moves, logps, strict=True):
                totals[move] = totals.get(move, 0.0) + math.exp(lp - norm) / len(seen)
        out[name] = {m: round(p, 4) for m, p in totals.items()}
    return out


def scored_strategy(ctx: Context, alias: str, records: list[Any],
                    agent: str | None = "policy") -> dict[str, dict[str, float]]:
    """`strategy` of the registered model `alias` at the decisions of `records`."""
    from sparring.models.registry import create_model, load_model_specs

    model = create_model(alias, load_model_specs(ctx.models_file))
    try:
        return strategy(model, records, agent)
    finally:
        model.close()


def evaluate(ctx: Context, model: str, name: str, size: dict[str, Any]) -> tuple[dict, dict[str, float], Played]:
    played = ctx.play(_heldout(model, size), name)
    payoff, wins, invalid = [], [], []
    per: dict[str, float] = {}
    for r in played.records:
        seat = next(p for p, s in r.seats.items() if s.agent == "policy")
        m = r.outcome.metrics if r.outcome else {}
        value = float((r.outcome.rewards if r.outcome else {}).get(seat, -1.0))
        payoff.append(value)
        wins.append(value > 0)
        attempts = int((m.get("attempts") or {}).get(seat, 0))
        bad = int((m.get("invalid_moves") or {}).get(seat, 0))
        invalid += [False] * (attempts - bad) + [True] * bad
        per[f"{r.instance_id}/{'flip' if r.flip else 'plain'}"] = value
    return ({"payoff_per_hand": mean(payoff), "hands_won": rate(wins), "invalid_move_share": rate(invalid)},
            per, played)


def measure(ctx: Context, alias: str, name: str, size: dict[str, Any],
            strategy_info: Callable[[str, Played], dict[str, Any]] | None = None) -> Measured:
    """The held-out hands, paired per (seed, seat), with the moves per card and what
    `strategy_info(alias, played)` says of the strategy (default: the scored strategy at the
    decisions met)."""
    metrics, per, played = evaluate(ctx, alias, name, size)
    extra = (strategy_info(alias, played) if strategy_info
             else {"strategy": scored_strategy(ctx, alias, played.records)})
    return Measured(metrics, {"payoff per hand": per}, played.walls("heldout"),
                    sorted({r.instance_id for r in played.records}),
                    {"moves_by_card": moves_by_card(played.records), **extra})


def warm_start(ctx: Context, size: dict[str, Any], demonstrator: str = TRAIN_OPPONENT,
               prefix: str = "kuhn", batch_size: int = 4,
               epochs: float | None = None) -> tuple[str, dict[str, Any], Played]:
    """SFT on `demonstrator`'s moves in hands against itself (training seeds of their own): a
    random legal player's here, Kuhn's equilibrium in `textarena-kuhn-card`. In the size's view:
    the steps train `demo_steps` x 4 moves in either (a conversation-view row holds a player's
    whole hand, a rendered one a single move); with `epochs`, that many passes over every row in
    batches of `batch_size` instead (`textarena-kuhn-fit`)."""
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.export import sft_rows
    from sparring.train.trainers import train_sft

    shown = view(size)
    suffix = "" if shown == "rendered" else f"-{shown}"
    cfg = {"game": "textarena", "view": shown, "game_args": game(size), "dataset": _seeds("train", size["demos"], DEMO_START),
           "agents": {"a": {"role": "player", "model": demonstrator}, "b": {"role": "player", "model": demonstrator}},
           "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": False},
           "run": {"seed": 0, "max_live": MAX_LIVE}}
    demos = ctx.play(cfg, f"{prefix}-demonstrations{suffix}")
    rows = sft_rows(demos.records)
    moves_per_row = sum(int(r["meta"].get("turns", 1)) for r in rows) / max(1, len(rows))
    steps = (max(1, math.ceil(epochs * len(rows) / batch_size)) if epochs
             else max(1, round(size["demo_steps"] / moves_per_row)))
    settings = TrainSettings(model=ctx.model, method="sft", learning_rate=5e-4, max_steps=steps,
                             batch_size=batch_size, max_length=1024, lora=LoraSettings(r=8, alpha=16))
    result = train_sft(rows, settings, ctx.out / "adapters" / f"{prefix}-warm{suffix}")
    return str(result.adapter), {"rows": result.rows, "steps": result.steps, "loss": result.loss,
                                 "games": len(demos.records), "view": shown, "batch_size": batch_size,
                                 "moves_per_row": round(moves_per_row, 2)}, demos


def arm_config(ctx: Context, size: dict[str, Any], start: str, arm: str,
               arms: dict[str, tuple[dict[str, Any], str]] = ARMS, opponent: str = TRAIN_OPPONENT) -> dict[str, Any]:
    """The online config of one arm of `arms` (its opponents and baseline): GRPO on sparring's trainer
    from `start`, a fixed arm against `opponent`."""
    opponents, baseline = arms[arm]
    learner = {"role": "player", "model": "learner",
               "sampling": {"temperature": 1.0, "max_new_tokens": size["tokens"]}}
    fixed = opponents["mode"] == "fixed"
    experiment = {"game": "textarena", "view": view(size), "game_args": game(size), "dataset": _seeds("train", size["train"]),
                  "models_file": str(ctx.models_file.resolve()),
                  "agents": {"learner": learner, **({"opponent": {"role": "player", "model": opponent}}
                                                   if fixed else {})},
                  "tournament": ({"type": "custom", "matchups": [["learner", "opponent"]]} if fixed
                                 else {"type": "self_play", "participants": ["learner"]}),
                  "run": {"seed": 0, "max_live": MAX_LIVE}}
    return {"algorithm": "grpo", "trainer": "sparring", "model": ctx.model, "adapter": start,
            "learner_agent": "learner", "experiment": experiment, "seats": [0, 1],
            "num_generations": size["generations"],
            # the same games per step in every arm: self-play trains both seats of each
            "prompts_per_step": size["prompts"], "max_steps": size["steps"], "learning_rate": LEARNING_RATE,
            # refused moves are trained too (with their game's advantage): a seat whose every move was
            # refused has no accepted turn, so without them its forfeit would never reach the loss
            "beta": 0.0, "format_penalty": 0.1, "train_rejected": True, "baseline": baseline, "opponents": opponents,
            "save_steps": 10, "seed": 0, "lr_scheduler_type": "constant", **AS_MEASURED}


@experiment("textarena-kuhn")
def run(ctx: Context) -> Experiment:
    require_extra("textarena-kuhn", "textarena", "textarena", "TextArena")
    size = {**SIZES[ctx.size], "view": VIEW}
    begin = time.perf_counter()
    warm, warm_info, demos = warm_start(ctx, size)
    warm_s = time.perf_counter() - begin
    start_alias = ctx.register("kuhn-start", warm)
    start = measure(ctx, start_alias, "kuhn-start", size)
    # the same warm start fitted in the rendered view, on the same held-out hands: whether the view
    # changes what the start learns is measured, not assumed
    rendered = {**size, "view": "rendered"}
    began = time.perf_counter()
    warm_r, warm_r_info, _ = warm_start(ctx, rendered)
    warm_r_s = time.perf_counter() - began
    start_r = measure(ctx, ctx.register("kuhn-start-rendered", warm_r), "kuhn-start-rendered", rendered)
    exp = Experiment(name="textarena-kuhn", description="TextArena Kuhn Poker, one hand a game: from one SFT start, "
                     "GRPO against a random legal player, self-play with a running baseline per role (RAE) and "
                     "self-play without it; held-out seeds against a fixed card rule no arm trained against.",
                     model=ctx.label, primary="payoff_per_hand",
                     training_ids=sorted({r.instance_id for r in demos.records}), heldout_ids=start.instances,
                     target="self-play with RAE above the start: paired payoff-per-hand interval above 0")
    exp.stages.append(Stage("start", 0, start.metrics, {"train": warm_s, **start.walls}, info={**warm_info, **start.info}))
    exp.stages.append(Stage("start-rendered", 0, start_r.metrics, {"train": warm_r_s, **start_r.walls},
                            info={**warm_r_info, **start_r.info}))
    exp.paired["payoff per hand start - start-rendered"] = paired(start_r.per["payoff per hand"],
                                                                   start.per["payoff per hand"])
    ctx.progress(exp)
    per_arm: dict[str, dict[str, list[Any]]] = {}
    for k, arm in enumerate(ARMS, start=1):
        result = run_arm(ctx, exp, f"kuhn-{arm}", arm_config(ctx, size, warm, arm),
                         partial(measure, ctx, name=f"kuhn-{arm}", size=size),
                         stage=arm, step=k, start=start, info={"steps": size["steps"]})
        per_arm[arm] = result.curves()
    plot_training(per_arm, ctx.out / "curves" / "textarena-kuhn-training.png", TRAINING_PANELS)
    exp.notes.append(f"start: SFT in the {VIEW} view ({warm_info['steps']} steps of 4 rows, "
                     f"{warm_info['moves_per_row']} moves a row) on {warm_info['rows']} rows of {TRAIN_OPPONENT}'s "
                     f"moves in {warm_info['games']} hands against itself (training seeds {DEMO_START}..); "
                     f"start-rendered: the same in the rendered view ({warm_r_info['steps']} steps of 4 moves); "
                     "every arm plays and trains in the " + VIEW + " view")
    exp.notes.append(f"each arm: {size['steps']} GRPO steps of {size['generations'] * size['prompts']} games "
                     f"(sparring's trainer, lr {LEARNING_RATE}, beta 0, format penalty 0.1 per refused move, refused "
                     "moves trained), "
                     f"training seeds 0..{size['train'] - 1}")
    exp.notes.append(f"held-out: {size['heldout']} test seeds x 2 seats against {HELDOUT_OPPONENT}, greedy; "
                     "paired by (seed, seat): the same cards for every policy")
    exp.wall_s = time.perf_counter() - begin
    return exp
