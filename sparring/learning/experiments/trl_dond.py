"""Experiment: the TRL path trains — Deal or No Deal against `fair-negotiator` through TRL's own
`SFTTrainer` and `GRPOTrainer(environment_factory=...)`, the learner making its moves as tool calls.

The bundled model writes no tool call from its own template (0 in 8 samples, docs/scale-out.md),
so GRPO through tools has nothing to reinforce from it. The warm start comes first:

1. **Demonstrations:** the scripted `demonstrator` (sparring/games/negotiation/partner.py: it asks
   what the partner wants, then proposes to keep every item it values except all of the partner's
   favourite) plays the learner's seat of every training scenario, both seats, through the
   environment class's tools (`sparring.integrations.trl.demos`); the games that ended in a deal
   worth points to it are kept (rejection sampling on the game's reward).
2. **Warm start:** TRL's `SFTTrainer` on those conversations (LoRA, only the calls trained:
   `assistant_only_loss` through the template's generation marks), merged into the base.
3. **GRPO:** TRL's `GRPOTrainer` with the training scenarios' environment class as its
   `environment_factory` (the reward: own points minus 0.1 a refused move, from `get_reward`),
   a new LoRA on the warm start, merged.

The start and the trained policy play the held-out scenarios (the generated test split, the same
scenarios `dond-rl` measures on, disjoint from the training ones: checked) against `fair-negotiator`
in both seats through the same tools (`sparring.integrations.trl.play`, sampled at the temperature
`dond-rl` measures at); paired per (scenario, seat). The same game and partner as `dond-rl` (sparring's
trainer, text moves): its page has the figures beside these.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from sparring.learning.context import Context
from sparring.learning.dond_eval import FAIR, dataset
from sparring.learning.registry import experiment
from sparring.learning.results import Estimate, Experiment, Stage, mean, paired, rate

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"train": 4, "heldout": 2, "sft_rows": 8, "steps": 1, "generations": 2, "prompts": 1,
              "max_turns": 4, "tokens": 32, "completion": 256},
    # full: the demonstrations of 64 training scenarios x 2 seats, SFT on 64 of the kept games (one
    # epoch, 16 steps of 4: a game is ~850 tokens, ~700 of them the rules and the tools' schemas);
    # 8 GRPO steps of 4 games (one scenario and seat a step); 32 held-out scenarios x 2 seats.
    # Measured alone (2026-12-03): a GRPO step of 8 games took 433-473 s, 80% of it TRL's rollout
    # (54% prefill: every tool round re-reads the whole conversation), so 4 games a step fit the hour.
    "full": {"train": 64, "heldout": 32, "sft_rows": 64, "steps": 8, "generations": 4, "prompts": 1,
             "max_turns": 8, "tokens": 48, "completion": 512},
}
SFT_LR = 5e-4      # LoRA SFT (TRAINING-NOTES: 16 LoRA steps at 5e-4 moved TextWorld's held-out play)
GRPO_LR = 2e-4     # dond-rl's rate (sparring's trainer), the same budget per step
TEMPERATURE = 0.8  # the held-out games' sampling, as dond-rl measures
FORMAT_PENALTY = 0.1
DEMONSTRATOR = "sparring.games.negotiation.partner:demonstrator"


def experiment_config(ctx: Context, split: str, n: int, size: dict[str, Any]) -> dict[str, Any]:
    return {"game": "dond", "game_args": {"objective": "self", "max_turns": size["max_turns"], "reveal_proposals": True},
            "dataset": dataset(split, n), "models_file": str(ctx.models_file.resolve()),
            "agents": {"learner": {"role": "negotiator", "model": ctx.label},
                       "partner": {"role": "negotiator", "model": FAIR}},
            "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}, "run": {"seed": 0}}


def _lora() -> Any:
    from peft import LoraConfig

    return LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")


def _tokenizer(source: str) -> Any:
    from transformers import AutoTokenizer

    from sparring.integrations.trl.tokenizer import with_tool_template

    tok = with_tool_template(AutoTokenizer.from_pretrained(source))
    tok.padding_side = "left"
    return tok


def _save_merged(model: Any, tok: Any, out: Path) -> Path:
    merged = model.merge_and_unload()
    merged.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def warm_start(ctx: Context, source: str, rows: list[dict[str, Any]], size: dict[str, Any], out: Path) -> dict[str, Any]:
    """TRL's SFTTrainer on the kept demonstrations (calls only), merged into the base at `out`."""
    import datasets
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    tok = _tokenizer(source)
    data = datasets.Dataset.from_list([{"messages": r["messages"], "tools": r["tools"]} for r in rows])
    args = SFTConfig(output_dir=str(out / "trainer"), use_cpu=True, bf16=False, num_train_epochs=1,
                     per_device_train_batch_size=4, learning_rate=SFT_LR, lr_scheduler_type="constant",
                     assistant_only_loss=True, max_length=None, logging_steps=1, report_to=[], save_strategy="no",
                     seed=0, disable_tqdm=False)
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(source), args=args, train_dataset=data,
                         processing_class=tok, peft_config=_lora())
    begin = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - begin
    _save_merged(trainer.model, tok, out / "model")
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"rows": len(rows), "steps": trainer.state.global_step, "train_s": seconds,
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None}


def grpo(ctx: Context, source: str, env_class: Any, size: dict[str, Any], out: Path) -> dict[str, Any]:
    """TRL's GRPOTrainer through `env_class`'s tools from the merged warm start at `source`."""
    import os

    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental
    tok = _tokenizer(source)
    batch = size["generations"] * size["prompts"]
    args = GRPOConfig(output_dir=str(out / "trainer"), use_cpu=True, bf16=False, max_steps=size["steps"],
                      per_device_train_batch_size=batch, num_generations=size["generations"],
                      max_completion_length=size["completion"], max_tool_calling_iterations=size["max_turns"],
                      generation_kwargs={"max_new_tokens": size["tokens"]},
                      temperature=1.0, learning_rate=GRPO_LR, lr_scheduler_type="constant", beta=0.0,
                      logging_steps=1, report_to=[], save_strategy="no", seed=0, disable_tqdm=False)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(source), processing_class=tok,
                          environment_factory=env_class, train_dataset=env_class.dataset(), args=args,
                          peft_config=_lora())
    begin = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - begin
    _save_merged(trainer.model, tok, out / "model")
    logs = [h for h in trainer.state.log_history if "reward" in h]
    keys = ("reward", "reward_std", "tools/call_frequency", "tools/failure_frequency", "completions/mean_length")
    return {"steps": trainer.state.global_step, "train_s": seconds,
            "curves": {k: [h.get(k) for h in logs] for k in keys}}


def measure(ctx: Context, name: str, source: str, env_class: Any,
            size: dict[str, Any]) -> tuple[dict[str, Estimate], dict[str, float], dict[str, Any]]:
    """The policy at `source` against the partner on every held-out scenario and seat: its metrics,
    own points per (scenario, seat), and what it wrote."""
    from rich.progress import Progress
    from transformers import AutoModelForCausalLM

    from sparring.integrations.trl.play import play_with_tools

    model = AutoModelForCausalLM.from_pretrained(source)
    model.eval()
    begin = time.perf_counter()
    rows = env_class.dataset()
    with Progress(console=ctx.console, transient=True) as bar:
        task = bar.add_task(f"{name}: held-out games", total=len(rows))
        games = play_with_tools(env_class, model, _tokenizer(source), rows, max_moves=size["max_turns"],
                                max_new_tokens=size["tokens"], temperature=TEMPERATURE, seed=0,
                                progress=lambda n: bar.advance(task, n))
    outcome = [g.record.outcome.metrics if g.record is not None and g.record.outcome is not None else {}
               for g in games]
    own = [float(g.reward) for g in games]
    metrics = {"own_points": mean(own), "deal": rate([bool(m.get("deal")) for m in outcome]),
               "mutual_deal_rate": rate([bool(m.get("scored_both")) for m in outcome]),
               "games_with_call": rate([g.calls > 0 for g in games]),
               "call_share": rate([g.replies and (g.calls - g.failed_calls) / g.replies or 0.0 for g in games])}
    ends: dict[str, int] = {}
    for g in games:
        ends[g.ended] = ends.get(g.ended, 0) + 1
    per = {f"{g.instance_id}/{g.seat}": float(g.reward) for g in games}
    no_call = [g.messages[-1].get("content", "") for g in games if g.ended == "no call"]
    return metrics, per, {"play_s": time.perf_counter() - begin, "ends": ends, "games": len(games),
                          "calls": sum(g.calls for g in games), "failed_calls": sum(g.failed_calls for g in games),
                          "no_call_replies": no_call[:5],  # what ended a game without a call (the first 5)
                          "example": games[0].messages if games else []}


@experiment("trl-dond")
def run(ctx: Context) -> Experiment:
    from sparring.integrations.trl.demos import tool_demonstrations
    from sparring.integrations.trl.environment import environment_class
    from sparring.integrations.trl.tokenizer import model_source
    from sparring.models.scripted import ScriptedModel

    size = SIZES[ctx.size]
    begin = time.perf_counter()
    out = ctx.out / "trl-dond"
    train_env = environment_class(experiment_config(ctx, "train", size["train"], size), learner="learner",
                                  format_penalty=FORMAT_PENALTY)
    heldout_env = environment_class(experiment_config(ctx, "test", size["heldout"], size), learner="learner")
    train_ids = sorted(train_env._game.arena().instances)
    heldout_ids = sorted(heldout_env._game.arena().instances)
    exp = Experiment(name="trl-dond", description="Deal or No Deal against fair-negotiator through TRL: SFTTrainer "
                     "on a demonstrator's tool calls (its deals), then GRPOTrainer with the game as its "
                     "environment_factory; held-out scenarios in both seats, moves as tool calls.", model=ctx.label,
                     primary="own_points", training_ids=train_ids, heldout_ids=heldout_ids,
                     target="tool calls > 0; held-out own points above the warm start (paired interval above 0)")
    base = model_source(ctx.base_entry()["args"]["model"])

    demo = ScriptedModel("dond-demonstrator", mode="callable", function=DEMONSTRATOR)
    t = time.perf_counter()
    demos = tool_demonstrations(train_env, demo)
    kept = [r for r in demos if r["reward"] > 0]
    random.Random(0).shuffle(kept)
    kept = kept[:size["sft_rows"]]
    demo_s = time.perf_counter() - t
    base_m, base_per, base_info = measure(ctx, "base", base, heldout_env, size)
    exp.stages.append(Stage("base", 0, base_m, {"play_heldout": base_info["play_s"]},
                            info={k: base_info[k] for k in ("ends", "calls", "failed_calls", "no_call_replies")}))
    ctx.progress(exp)

    sft = warm_start(ctx, base, kept, size, out / "sft")
    start_m, start_per, start_info = measure(ctx, "warm start", str(out / "sft" / "model"), heldout_env, size)
    exp.stages.append(Stage("warm-start", 0, start_m, {"demonstrations": demo_s, "train": sft["train_s"],
                                                        "play_heldout": start_info["play_s"]},
                            info={**sft, "demonstrations": len(demos), "deals": sum(r["reward"] > 0 for r in demos), "kept": len(kept),
                                  "demo_points": sum(r["reward"] for r in demos) / max(1, len(demos)),
                                  **{k: start_info[k] for k in ("ends", "calls", "failed_calls", "no_call_replies",
                                                                "example")}}))
    exp.paired["warm-start - base"] = paired(base_per, start_per)
    ctx.progress(exp)

    trained = grpo(ctx, str(out / "sft" / "model"), train_env, size, out / "grpo")
    after_m, after_per, after_info = measure(ctx, "grpo", str(out / "grpo" / "model"), heldout_env, size)
    exp.stages.append(Stage("grpo", size["steps"], after_m, {"train": trained["train_s"], "play_heldout": after_info["play_s"]},
                            info={**trained, **{k: after_info[k] for k in ("ends", "calls", "failed_calls",
                                                                            "no_call_replies", "example")}}))
    exp.paired["grpo - warm-start"] = paired(start_per, after_per)
    exp.notes.append(f"demonstrations: {len(demos)} games, {sum(r['reward'] > 0 for r in demos)} a deal worth points to the "
                     "demonstrator; "
                     f"SFT one epoch on {len(kept)} of them, LoRA r16, lr {SFT_LR}; GRPO {size['steps']} steps of "
                     f"{size['generations'] * size['prompts']} games, lr {GRPO_LR}, beta 0, at most {size['tokens']} new tokens "
                     f"a reply (as held out), reward own points - "
                     f"{FORMAT_PENALTY} a refused move; held-out sampled at T={TEMPERATURE}")
    exp.wall_s = time.perf_counter() - begin
    return exp
