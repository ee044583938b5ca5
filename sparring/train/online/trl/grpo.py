"""The TRL path of an online run (`trainer: trl`): TRL's `GRPOTrainer` whose rollouts are whole
games played by the engine (`rollout.EpisodeRollout` as its `rollout_func`), the learner's sampled
tokens the only ones with loss. The per-step reward curve goes to `OUT/rewards.jsonl` and
`OUT/report.md`; every rollout's statistics to `OUT/rollouts.jsonl`; checkpoints to `OUT/trainer`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.errors import SparringError
from sparring.train import distributed
from sparring.train.online.config import OnlineConfig
from sparring.train.online.learner import experiment_models_file, learner_temperature
from sparring.train.online.rollout import EpisodeRollout, episode_reward, prompt_rows
from sparring.train.online.steplog import read_step_log, trim_step_log
from sparring.train.online.trl.vllm import trl_vllm_args


def train_trl(config: OnlineConfig, file: str, arena: Any, out: Path) -> Path:
    import datasets
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    from sparring.train.arguments import check_settings, checkpointing_arg, tuning_args
    from sparring.train.checkpoints import (
        TimeLimit,
        TrainingStopped,
        checkpoint_args,
        checkpoint_step,
        last_checkpoint,
    )
    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy, lora_config, use_cuda
    from sparring.train.tracking import MetricLog

    temperature = learner_temperature(arena, config, file)  # before any weights are loaded
    check_settings(config, "grpo")
    rows = prompt_rows(sorted(arena.instances), config.seats)
    if not rows:
        raise SparringError(f"{file}: the experiment's dataset has no instances")
    out.mkdir(parents=True, exist_ok=True)
    # with `adapter`: a trainable PeftModel and no new LoRA (lora_config gives None); TRL then keeps a
    # frozen copy of it as the KL reference when beta > 0
    settings = TrainSettings(model=config.model, lora=config.lora, adapter=config.adapter,
                             models_file=experiment_models_file(config, file))
    model, tokenizer = load_policy(settings)
    console = Console(stderr=True, soft_wrap=True, quiet=not distributed.is_main())
    steps_log = out / "rollouts.jsonl"

    def on_step(stats: dict[str, Any]) -> None:
        if not distributed.is_main():
            return
        with open(steps_log, "a", encoding="utf-8") as f:
            f.write(json.dumps(stats, ensure_ascii=False) + "\n")
        console.print(step_line(stats), markup=False)

    rollout = EpisodeRollout(arena, config.learner_agent, tokenizer, config.num_generations,
                             config.format_penalty, config.seed, sequences_per_episode=config.sequences_per_episode,
                             train_rejected=config.train_rejected, on_step=on_step, credit=config.credit,
                             gamma=config.gamma, turn_baseline=config.turn_baseline)
    per_step = config.prompts_per_step * rollout.slots
    if config.prompts_per_step % distributed.world_size():  # each process plays whole groups
        raise SparringError(f"{file}: prompts_per_step = {config.prompts_per_step} groups per step cannot be "
                            f"split evenly over {distributed.world_size()} processes")
    cuda = use_cuda()
    args = TRLGRPOConfig(output_dir=str(out / "trainer"), per_device_train_batch_size=per_step // distributed.world_size(),
                     num_generations=rollout.slots, max_steps=config.max_steps, temperature=temperature,
                     learning_rate=config.learning_rate, beta=config.beta, logging_steps=config.logging_steps,
                     disable_dropout=config.disable_dropout,
                     **checkpoint_args(config.save_steps, config.save_total_limit), seed=config.seed,
                     bf16=cuda, use_cpu=not cuda, **checkpointing_arg(config.gradient_checkpointing is not False),
                     **trl_vllm_args(config.vllm), **tuning_args(config, out, "grpo"),
                     # turn credit hands TRL advantages already normalised within each group
                     **turn_credit_args(config))
    curve = out / "rewards.jsonl"
    # the rollout's own numbers (zero-advantage share, trained tokens) beside TRL's reward curves
    tracked = MetricLog(config.report_to if distributed.is_main() else [], out, config.run_name or config.name)

    class RewardLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if logs and "reward" in logs and state.is_world_process_zero:
                last = rollout.history[-1] if rollout.history else {}
                # with turn credit TRL's "reward" is the normalised credit (mean 0): log the episodes' own
                reward = last.get("mean_reward") if config.credit == "turn" else logs["reward"]
                point = {"step": state.global_step, "reward": reward, "reward_std": logs.get("reward_std"),
                         "kl": logs.get("kl"), "zero_advantage_fraction": last.get("zero_advantage_fraction"),
                         "trained_tokens": last.get("trained_tokens"), "dropped_calls": last.get("dropped_calls"),
                         "loss": logs.get("loss"), "entropy": logs.get("entropy")}
                if costs.costs:
                    point.update(costs.costs[-1].summary(roof or None))
                    console.print(f"GRPO step {state.global_step} {line(point)}", markup=False)
                with open(curve, "a", encoding="utf-8") as f:
                    f.write(json.dumps(point) + "\n")
                tracked.log({f"sparring/{k}": v for k, v in point.items() if k != "step" and v is not None},
                            state.global_step)

    from sparring.train.step_cost import ForwardMeter, line, roof_tokens_per_s, step_cost_callback

    costs = step_cost_callback(meter := ForwardMeter(),
                               trained=lambda: (rollout.history[-1] if rollout.history else {}).get("trained_tokens", 0),
                               rollout=lambda: (rollout.history[-1] if rollout.history else {}).get("rollout_total_s", 0.0))
    trainer = GRPOTrainer(model=model, reward_funcs=[episode_reward], args=args,  # type: ignore[list-item]
                          train_dataset=datasets.Dataset.from_list(rows), processing_class=tokenizer,
                          peft_config=lora_config(settings), rollout_func=rollout,  # type: ignore[arg-type]
                          callbacks=[costs, RewardLog(), limit := TimeLimit(config.max_minutes)])
    rollout.meter = meter
    roof = roof_tokens_per_s(trainer.model) if distributed.is_main() else 0.0
    resume = last_checkpoint(out / "trainer")
    if resume:
        rollout.calls = checkpoint_step(resume)  # new seeds, not step 1's again
        if distributed.is_main():
            trim_logs(out, rollout.calls)
    try:
        trainer.train(resume_from_checkpoint=resume)
    finally:
        tracked.close()
    distributed.save_trained(trainer, tokenizer, out / "adapter")
    report = distributed.on_main(lambda: grpo_report(out, config), "the GRPO report")
    if limit.stopped:
        raise TrainingStopped(f"GRPO stopped by the time limit at step {trainer.state.global_step} of "
                              f"{config.max_steps}; the checkpoint is in {out / 'trainer'}; rerun the same command "
                              f"to continue (report so far: {report})")
    return report


def turn_credit_args(config: OnlineConfig) -> dict[str, Any]:
    """Turn credit hands TRL advantages already normalised within each group: TRL must only
    subtract the group mean (0), not rescale."""
    return {"scale_rewards": "none"} if config.credit == "turn" else {}


def step_line(stats: dict[str, Any]) -> str:
    """The per-rollout log line: groups with zero advantage, and one sequence's trained text
    next to the learner's sampled text (they are equal by construction; the log shows it)."""
    line = (f"GRPO rollout {stats['rollout']}: {stats['episodes']} episodes in {stats['groups']} group(s); "
            f"zero-advantage groups {stats['zero_advantage_groups']}/{stats['groups']} "
            f"(fraction {stats['zero_advantage_fraction']:.2f}); rewards {stats['rewards']}; "
            f"{stats['sequences']} sequences, {stats['trained_tokens']} trained tokens, "
            f"{stats['dropped_calls']} dropped calls")
    ex = stats.get("example")
    if ex:
        line += (f"\n  sequence of episode {ex['episode_id']} (calls {ex['calls']}): env_mask=1 text == sampled "
                 f"replies: {ex['equal']}\n    trained: {ex['trained_text']!r}\n    sampled: {ex['sampled_text']!r}"
                 f"\n    the game recorded: {ex['game_text']!r}")
    return line


# The per-step logs and the key that numbers their entries.
STEP_LOGS = {"rewards.jsonl": "step", "rollouts.jsonl": "rollout"}


def read_log(path: Path) -> list[dict[str, Any]]:
    """A per-step log (`rewards.jsonl` or `rollouts.jsonl`), one entry per step in step order."""
    return read_step_log(path, STEP_LOGS[path.name])


def trim_logs(out: Path, step: int) -> None:
    """Resuming from the checkpoint of `step`: drop the entries of later steps from both logs."""
    for name, key in STEP_LOGS.items():
        trim_step_log(out / name, step, key)


def grpo_report(out: Path, config: OnlineConfig) -> Path:
    points = read_log(out / "rewards.jsonl")
    lines = [f"# Online GRPO: {config.name}", "",
             f"{config.max_steps} steps, {config.prompts_per_step} prompt(s) x {config.num_generations} episodes "
             f"per step; game `{config.experiment.get('game')}`; adapter in `{out / 'adapter'}`.", "",
             "| step | mean episode reward | std | zero-advantage groups | KL to the start (beta > 0) |",
             "|---|---|---|---|---|",
             *[f"| {p['step']} | {p['reward']:.3f} | {p.get('reward_std') or 0:.3f} | "
               f"{_fraction(p.get('zero_advantage_fraction'))} | {_fraction(p.get('kl'), '.4g')} |" for p in points], ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _fraction(x: Any, fmt: str = ".2f") -> str:
    return "" if x is None else format(x, fmt)
