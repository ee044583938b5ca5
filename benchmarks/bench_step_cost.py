#!/usr/bin/env python
"""Where a training step spends the machine, before and after the step-cost work, in one run.

For each trainer it times steps of the configuration as it was shipped ("before") and as it is
now ("after"), with the same data, seeds and model, and prints every step's breakdown (rollout,
scoring passes, training passes, other: `sparring/train/step_cost.py`), tokens through the model
per trained token, training tokens/s as a share of this machine's training roof (fp32 matmul
FLOP/s ÷ 6 × parameters, probed now), and the after/before ratios the targets are stated in:

- grpo: one-decision Deal or No Deal against `fair-negotiator` (the learning suite's game), 4 games
  a step. Before: TRL's GRPOTrainer with beta 0.04 (a reference pass), LoRA dropout on. After:
  sparring's trainer, beta 0 (no reference), the rollout's log-probs (no scoring pass), the
  group's prompt run once, no dropout in the training pass, the adapter merged for the rollout,
  batches cut by cost. Groups: the same with 4 groups of 4 games a step (16 games generated
  together): its ratios are per game.
- ppo: TextWorld cooking (3 rooms, 2 ingredients, the whole history: ~1.4k-token games), the
  learner's games a step. Before: KL 0.05 (a reference pass), a scoring pass for the old
  log-probs and the values, every game padded in full, LoRA dropout on, the adapter unmerged.
  After: KL 0, the rollout's log-probs, a values-only pass, the shared prefix, no dropout in the
  training passes, the adapter merged for the rollout, batches cut by cost. Window: the same with
  an observation window (the recipe, the room and inventory, the last 3 exchanges) instead of the
  whole history (`--no-window`: left out). Needs Java and textworld-express (skipped without).
- sft: LoRA SFT, 4 rows a step of varied length. Before: padded batches. After: padding-free.
  No-dropout: padding-free with `lora.dropout` 0 (PEFT's default; sparring's SFT default stays
  0.05, a regulariser, so this prices it rather than removing waste).
- dpo: TRL DPO, 2 pairs a step (TRL 1.x disables padding-free DPO): the breakdown only.
- tictactoe, kuhn, dond: GRPO on TextArena TicTacToe and Kuhn Poker against `textarena-random` and
  on Deal or No Deal against `fair-negotiator` (issue #59), the same seeds and settings in two
  views: before = `view: rendered` (each move re-reads the whole game), after = `view:
  conversation` (the game only grows: a player's calls train as one sequence); with
  `--checkpointing` also recomputed = the conversation view with `gradient_checkpointing: true`
  (the training pass's peak memory, and the recompute's cost). TicTacToe and Kuhn need the
  textarena extra; kuhn-hand is Kuhn Poker with each observation cut to the hand's lines
  (`observation_from`, as `textarena-kuhn-hand`: TextArena's rules left out); kuhn, kuhn-hand and
  dond are not in the default `--only`:

    python benchmarks/bench_step_cost.py --only tictactoe,kuhn,dond --steps 2 --games 8 --warm-steps 8

    OMP_NUM_THREADS=2 python benchmarks/bench_step_cost.py                  # bundled model, ~15-25 min
    python benchmarks/bench_step_cost.py --model tiny --steps 1 --only sft,grpo   # a quick check
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name, a directory, or 'tiny'")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per configuration (after one untimed)")
    ap.add_argument("--only", default="grpo,ppo,sft,dpo,tictactoe", help="comma-separated parts")
    ap.add_argument("--games", type=int, default=4, help="games per GRPO and PPO step")
    ap.add_argument("--warm-steps", type=int, default=0, help="tictactoe, kuhn, dond: start from a LoRA SFT warm "
                    "start of this many steps on the partner's moves (the base model's games end at its first "
                    "refused moves); 0: the base model")
    ap.add_argument("--checkpointing", action="store_true", help="tictactoe, kuhn, dond: also the conversation "
                    "view with `gradient_checkpointing: true` (activations recomputed in the backward: the "
                    "peak memory of the training pass, and what the recompute costs)")
    ap.add_argument("--json", default=None, help="also write every step's figures to this file")
    ap.add_argument("--no-window", action="store_true", help="ppo: leave out the observation-window variant")
    ap.add_argument("--textworld-adapter", default=None, help="PPO's start: a TextWorld SFT adapter (default: "
                    "trained here on 16 gold games, a few minutes)")
    return ap


def median_cost(points: list[dict[str, Any]]) -> dict[str, float]:
    """Per figure, the median over the timed steps (the first step is a warm-up, left out)."""
    timed = points[1:] or points
    keys = sorted({k for p in timed for k in p if k.startswith("cost/")})
    return {k: statistics.median(float(p.get(k) or 0.0) for p in timed) for k in keys}


def show(part: str, variant: str, m: dict[str, float]) -> None:
    print(f"  {part:4s} {variant:10s} step {m.get('cost/total_s', 0):7.1f} s = rollout {m.get('cost/rollout_s', 0):6.1f}"
          f" + scoring {m.get('cost/scoring_s', 0):6.1f} + training {m.get('cost/training_s', 0):6.1f} + other "
          f"{m.get('cost/other_s', 0):5.1f}; {m.get('cost/forward_tokens', 0):7.0f} model tokens "
          f"({m.get('cost/padded_tokens', 0):.0f} padded) for {m.get('cost/trained_tokens', 0):.0f} trained = "
          f"{m.get('cost/model_tokens_per_trained_token', 0):6.1f} per trained token; training "
          f"{m.get('cost/training_tokens_per_s', 0):6.1f} tok/s = {m.get('cost/training_roof_ratio', 0):.2f} of the roof"
          + (f"; peak memory {m['cost/peak_memory_mb'] / 1024:.2f} GiB" if m.get("cost/peak_memory_mb") else "")
          + (f" ({m['cost/peak_added_mb'] / 1024:.2f} added by a pass)" if m.get("cost/peak_added_mb") else ""))


def ratios(part: str, before: dict[str, float], after: dict[str, float], per: float = 1.0) -> dict[str, float]:
    def r(key: str) -> float:
        b = before.get(key) or 0.0
        return (after.get(key) or 0.0) / b if b else float("nan")

    # per: games in an `after` step / games in a `before` step (the step and update ratios are then per game)
    out = {"step": r("cost/total_s") / per, "rollout": r("cost/rollout_s") / per,
           "update": ((after["cost/scoring_s"] + after["cost/training_s"])
                      / max(1e-9, before["cost/scoring_s"] + before["cost/training_s"]) / per),
           "tokens_per_trained": r("cost/model_tokens_per_trained_token")}
    rollout = "" if out["rollout"] != out["rollout"] else f"rollout {out['rollout']:.3f}, "  # nan: no rollout
    print(f"  {part}: after/before step {out['step']:.3f}, {rollout}update (scoring + training) {out['update']:.3f}, "
          f"model tokens per trained token {out['tokens_per_trained']:.3f}; training roof share "
          f"{before.get('cost/training_roof_ratio', 0):.2f} -> {after.get('cost/training_roof_ratio', 0):.2f}")
    return out


# -- online parts -----------------------------------------------------------------------------------
def online_config(work: Path, name: str, model: str, experiment: dict[str, Any], **extra: Any) -> Any:
    from sparring.train.online.config import OnlineConfig

    return OnlineConfig.model_validate({"name": name, "model": model, "learner_agent": "learner",
                                      "experiment": experiment, "output_dir": str(work / name), "save_steps": 0,
                                      "seed": 0, "lr_scheduler_type": "constant", **extra})


def run_online(config: Any, own_process: bool = False) -> list[dict[str, Any]]:
    """The run's step log. `own_process`: the run in a fresh process — a process's resident
    high-water mark (the peak memory on a CPU) never falls, and the allocator keeps what an earlier
    run freed, so runs in one process would each report the largest peak so far."""
    from sparring.train.online.launch import run_online
    from sparring.train.online.trl.grpo import read_log

    if own_process:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            pool.submit(run_online, config, "<benchmark>").result()
    else:
        run_online(config, "<benchmark>")
    out = Path(str(config.output_dir))
    if config.engine == "trl":
        return read_log(out / "rewards.jsonl")
    return [json.loads(x) for x in (out / f"{config.algorithm}.jsonl").read_text().splitlines()]


def grpo_part(work: Path, model: str, models_file: str, steps: int, games: int) -> dict[str, Any]:
    from sparring.learning.experiments.grpo import SIZES, game_config

    size = {**SIZES["full"], "tokens": 16}
    experiment = {**game_config(size, "train", 40, "learner"), "models_file": models_file}
    common = {"algorithm": "grpo", "num_generations": games, "prompts_per_step": 1, "max_steps": steps + 1,
              "learning_rate": 1e-4, "format_penalty": 0.1, "sequences_per_episode": 1,
              "gradient_checkpointing": False}
    before = run_online(online_config(work, "grpo-before", model, experiment, trainer="trl", beta=0.04,
                                      disable_dropout=False, **common))
    after = run_online(online_config(work, "grpo-after", model, experiment, trainer="sparring", beta=0.0, **common))
    groups = run_online(online_config(work, "grpo-groups", model, experiment, trainer="sparring", beta=0.0,
                                      **{**common, "prompts_per_step": 4}))
    return {"before": before, "after": after, "groups": groups}


def view_experiment(game: str, models_file: str) -> dict[str, Any]:
    """The game of a views part, as its learning experiment plays it (issue #59): TextArena
    TicTacToe and Kuhn Poker against `textarena-random` (as `textarena-tictactoe-rl` and
    `textarena-kuhn`'s fixed arm), Deal or No Deal against `fair-negotiator` (as `dond-rl`)."""
    if game == "dond":
        from sparring.learning.dond_eval import FAIR, dataset
        from sparring.learning.dond_eval import game_args as dond_args

        size = {"max_turns": 8}
        setup = {"game": "dond", "game_args": dond_args(size), "dataset": dataset("train", 40)}
        role, partner, tokens = "negotiator", FAIR, 32
    else:
        kuhn = {"env_id": "KuhnPokerBets-v0", "env_kwargs": {"max_rounds": 1}, "reward": "chips"}
        env = {"tictactoe": {"env_id": "TicTacToe-v0"}, "kuhn": kuhn,
               # as textarena-kuhn-hand plays it: each observation from the hand's line on (no rules)
               "kuhn-hand": {**kuhn, "observation_from": "### Starting round"}}[game]
        setup = {"game": "textarena", "game_args": env,
                 "dataset": {"name": "seeds", "split": "train", "args": {"n": 40}}}
        role, partner, tokens = "player", "textarena-random", 16
    return {**setup, "models_file": models_file,
            "agents": {"learner": {"role": role, "model": "learner",
                                   "sampling": {"temperature": 1.0, "max_new_tokens": tokens}},
                       "opponent": {"role": role, "model": partner}},
            "tournament": {"type": "custom", "matchups": [["learner", "opponent"]]}, "run": {"seed": 0}}


def warm_adapter(game: str, work: Path, model: str, models_file: str, steps: int) -> str | None:
    """A warm start, as the learning experiments start their RL from one (a base model's games end
    at its first refused moves, so they would price two-turn games): `steps` LoRA SFT steps on the
    partner's own moves, played against itself on 16 seeds the step games do not use."""
    if not steps:
        return None
    from sparring.engine.play import play
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.export import sft_rows
    from sparring.train.trainers import train_sft

    experiment = view_experiment(game, models_file)
    partner = experiment["agents"]["opponent"]
    demos = ({"name": "dond_generated", "split": "train", "args": {"n": 60, "seed": 1}, "limit": 16} if game == "dond"
             else {"name": "seeds", "split": "train", "args": {"n": 16, "start": 1000}})
    records = play({**experiment, "dataset": demos, "agents": {"a": partner, "b": {**partner}},
                    "tournament": {"type": "custom", "matchups": [["a", "b"]]}})
    settings = TrainSettings(model=model, method="sft", learning_rate=5e-4, max_steps=steps, batch_size=4,
                             max_length=2048, lora=LoraSettings(r=8, alpha=16))
    result = train_sft(sft_rows(records), settings, work / f"{game}-warm")
    print(f"{game}: warm start of {result.steps} SFT steps on {result.rows} moves of {len(records)} games")
    return str(result.adapter)


def views_part(game: str, work: Path, model: str, models_file: str, steps: int, games: int,
               warm_steps: int = 0, checkpointing: bool = False) -> dict[str, Any]:
    """GRPO on one game (both seats, refused moves trained, as its learning experiment), the same
    seeds, settings and start in the two views: before = `rendered` (every move re-reads the whole
    game, one sequence per call), after = `conversation` (a game only grows, so a player's calls
    join into one sequence: the game read once). The start: `warm_adapter`, or the base model."""
    experiment = view_experiment(game, models_file)
    adapter = warm_adapter(game, work, model, models_file, warm_steps)
    common = {**({"adapter": adapter} if adapter else {}), "algorithm": "grpo", "trainer": "sparring", "num_generations": games, "prompts_per_step": 1,
              "max_steps": steps + 1, "learning_rate": 1e-4, "beta": 0.0, "format_penalty": 0.1,
              "train_rejected": True, "seats": [0, 1], "gradient_checkpointing": False}
    variants = [("before", "rendered", False), ("after", "conversation", False)]
    variants += [("recomputed", "conversation", True)] if checkpointing else []
    return {name: run_online(online_config(work, f"{game}-{name}", model, {**experiment, "view": view},
                                           **{**common, "gradient_checkpointing": recompute}), own_process=True)
            for name, view, recompute in variants}


def sft_start(work: Path, model: str) -> str:
    """A TextWorld start as the learning suite's: LoRA SFT on gold games (16 steps on 16 won games).
    PPO starts from one there; from the base model the commands are rarely valid and do not end
    cleanly, so a game's turns do not extend one conversation and the step costs are not a PPO
    run's."""
    from sparring.learning.context import Context
    from sparring.learning.experiments.textworld_sft import SIZES, gold_rows, sft

    ctx = Context(out=work / "textworld-sft", size="full", model=model, label="bench")
    ctx.write_models()
    size = {**SIZES["full"], "train": 16}
    _, rows = gold_rows(ctx, size, "bench-gold")
    result, seconds = sft(ctx, rows, size, 0, min(16, len(rows)), "bench-sft")
    print(f"  ppo: start = SFT on {len(rows)} gold games, {seconds:.0f} s")
    return str(result.adapter)


def ppo_part(work: Path, model: str, models_file: str, steps: int, games: int,
             adapter: str | None = None, window: bool = True) -> dict[str, Any] | None:
    import shutil

    if shutil.which("java") is None:
        print("  ppo: skipped (TextWorld's simulator needs Java)")
        return None
    try:
        import textworld_express  # noqa: F401
    except ImportError:
        print("  ppo: skipped (pip install -e '.[textworld]')")
        return None
    from sparring.learning.experiments.textworld_sft import GAME_ARGS, WORLD

    experiment = {"game": "textworld_cooking", "game_args": {**GAME_ARGS, "max_steps": 24},
                  "dataset": {"name": "cookingworld", "split": "train", "limit": 32, "args": {"params": WORLD}},
                  "models_file": models_file,
                  "agents": {"learner": {"role": "player", "model": "learner",
                                         "sampling": {"temperature": 1.0, "max_new_tokens": 12, "stop": ["\n"]}}},
                  "tournament": {"type": "self_play", "participants": ["learner"]}, "run": {"seed": 0, "max_live": 8}}
    adapter = adapter or sft_start(work, model)
    common = {"algorithm": "ppo", "num_generations": 1, "prompts_per_step": games, "max_steps": steps + 1,
              "learning_rate": 1e-5, "sequences_per_episode": 1, "adapter": adapter}
    old = {"ppo_epochs": 1, "minibatch_size": 2, "kl_coef": 0.05}
    before = run_online(online_config(work, "ppo-before", model, experiment, ppo=old, rollout_logprobs=False,
                                      share_prefix=False, disable_dropout=False, merge_rollout=False,
                                      **common))
    after = run_online(online_config(work, "ppo-after", model, experiment, ppo={**old, "kl_coef": 0.0},
                                     rollout_logprobs=True, share_prefix=True, **common))
    if not window:
        return {"before": before, "after": after}
    # an observation window instead of the whole history: the recipe (once read), the room and the
    # inventory, and the last 3 exchanges; every command is then its own, shorter, sequence
    windowed_experiment = {**experiment, "game_args": {**experiment["game_args"], "history": 3, "keep_recipe": True,
                                          "show_state": True, "history_view": "short"}}
    windowed = run_online(online_config(work, "ppo-window", model, windowed_experiment, ppo={**old, "kl_coef": 0.0},
                                        rollout_logprobs=True, share_prefix=True, **common))
    return {"before": before, "after": after, "window": windowed}


# -- TRL's SFT and DPO ----------------------------------------------------------------------------------
def rows(n: int) -> tuple[list[dict], list[dict]]:
    """SFT rows of varied length (~200-600 tokens, as game turns are) and DPO pairs."""
    sft, dpo = [], []
    for i in range(n):
        prompt = [{"role": "system", "content": "You negotiate over books, hats and balls. " * 6},
                  {"role": "user", "content": "Your values: a book is worth 2, a hat 3, a ball 1. " * (4 + 5 * (i % 4))}]
        sft.append({"messages": prompt + [{"role": "assistant", "content": f"[propose] ({i % 3} books, 1 hats, 2 balls)"}]})
        dpo.append({"prompt": prompt, "chosen": [{"role": "assistant", "content": "[propose] (1 books, 1 hats, 0 balls)"}],
                    "rejected": [{"role": "assistant", "content": "I want everything. " * (1 + i % 3)}]})
    return sft, dpo


def trained_per_row(kind: str, model: str, data: list[dict]) -> float:
    """Mean tokens carrying loss per row: the assistant turns' (SFT), both replies' (DPO)."""
    from sparring.train.policy import load_tokenizer
    from sparring.train.trainers import preference_tokens, sft_example

    tok = load_tokenizer(model)
    if kind == "sft":
        return statistics.mean(sum(sft_example(tok, r)["assistant_masks"]) for r in data)
    _, ids = preference_tokens(tok, data, ("chosen", "rejected"))
    return statistics.mean(len(t["chosen_ids"]) + len(t["rejected_ids"]) for t in ids)


def trl_part(kind: str, work: Path, model: str, steps: int) -> dict[str, Any]:
    from sparring.train.config import TrainSettings
    from sparring.train.step_cost import ForwardMeter, step_cost_callback
    from sparring.train.trainers import train_dpo, train_sft

    sft_rows, dpo_rows = rows(4 * (steps + 1))
    batch = 4 if kind == "sft" else 2
    data = sft_rows if kind == "sft" else dpo_rows
    trained = round(batch * trained_per_row(kind, model, data))
    out: dict[str, Any] = {}
    variants = ({"before": {}, "after": {"padding_free": True},
                 "no-dropout": {"padding_free": True, "lora": {"dropout": 0.0}}} if kind == "sft" else {"before": {}})
    for name, extra in variants.items():
        callback = step_cost_callback(ForwardMeter(), trained=lambda: trained)
        settings = TrainSettings(model=model, max_steps=steps + 1, batch_size=batch, max_length=2048,
                                 logging_steps=10_000, save_steps=0, **({"method": "dpo"} if kind == "dpo" else {}),
                                 **extra)
        (train_sft if kind == "sft" else train_dpo)(data, settings, work / f"{kind}-{name}", callbacks=[callback])
        out[name] = [c.summary() for c in callback.costs]
    return out


VIEW_GAMES = ("tictactoe", "kuhn", "kuhn-hand", "dond")


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    from sparring.learning.speed import count_params
    from sparring.train.step_cost import matmul_flops

    work = Path(tempfile.mkdtemp(prefix="bench-step-cost-"))
    model = args.model
    if model == "tiny":
        from sparring.models.tiny import save_tiny_model

        model = str(save_tiny_model(work / "tiny"))
    flops = matmul_flops()
    roof = flops / (6 * count_params(model))
    print(f"machine: fp32 matmul {flops / 1e9:.0f} GFLOP/s -> training roof {roof:.0f} tokens/s for {args.model}")
    models_file = str(write_models(work, model))
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    results: dict[str, Any] = {"model": args.model, "flops": flops, "roof_tokens_per_s": roof, "parts": {}}
    for part in parts:
        print(f"== {part}")
        if part == "grpo":
            found = grpo_part(work, model, models_file, args.steps, args.games)
        elif part == "ppo":
            found = ppo_part(work, model, models_file, args.steps, args.games, args.textworld_adapter,
                             window=not args.no_window)
        elif part in VIEW_GAMES:
            found = views_part(part, work, model, models_file, args.steps, args.games, args.warm_steps,
                               args.checkpointing)
        elif part in ("sft", "dpo"):
            found = trl_part(part, work, model, args.steps)
        else:
            raise SystemExit(f"unknown part {part!r}: grpo, ppo, sft, dpo, {', '.join(VIEW_GAMES)}")
        if not found:
            continue
        medians = {}
        for variant, points in found.items():
            for p in points:
                if p.get("cost/training_s") and p.get("cost/training_tokens"):
                    p["cost/training_roof_ratio"] = p["cost/training_tokens"] / p["cost/training_s"] / roof
            medians[variant] = median_cost(points)
            show(part, variant, medians[variant])
        if "after" in medians:
            medians["ratios"] = ratios(part, medians["before"], medians["after"])
        if "recomputed" in medians:
            medians["ratios_recomputed"] = ratios(f"{part} (recomputed)", medians["before"], medians["recomputed"])
        if "window" in medians:
            medians["ratios_window"] = ratios(f"{part} (window)", medians["before"], medians["window"])
        if "groups" in medians:  # 4 groups a step: per game
            medians["ratios_groups"] = ratios(f"{part} (4 groups, per game)", medians["before"], medians["groups"],
                                              per=4.0)
        if "no-dropout" in medians:
            medians["ratios_no_dropout"] = ratios(f"{part} (no dropout)", medians["before"], medians["no-dropout"])
        results["parts"][part] = {"steps": found, "median": medians}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")


def write_models(work: Path, model: str) -> Path:
    """A models file with the base model as `learner`'s base and the shipped scripted partner."""
    import yaml

    from sparring.learning.context import shipped_scripted

    entry = {"backend": "hf", "args": {"model": model}} if Path(model).is_dir() else None
    models = {**shipped_scripted(), **({"bench-base": entry} if entry else {})}
    path = work / "models.yaml"
    path.write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    return path


if __name__ == "__main__":
    main()
