"""`scripts/run_grpo.py`: TRL `GRPOTrainer` whose rollouts are whole games played by the engine.

Each optimizer step takes `prompts_per_step` prompts (an instance + the learner's seat), plays
`num_generations` episodes of each through the batched runner with the learner generating with
its current weights, and computes group-relative advantages from the episode outcomes; only the
learner's sampled tokens carry loss (`sequence.py`). LoRA by default; CPU in fp32. The per-step
reward curve goes to `OUT/rewards.jsonl` and `OUT/report.md`; every rollout's statistics (groups,
zero-advantage share, one sequence's trained vs sampled text) are printed and go to
`OUT/rollouts.jsonl`. Checkpoints go to `OUT/trainer` every `save_steps`; a rerun resumes from the
last one, unless the config changed (`OUT/state.json`), which stops with the changed keys until
`--restart`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.config_io import load_yaml_model
from sparring.errors import SparringError
from sparring.train import distributed
from sparring.train.fingerprint import OutputState
from sparring.train.online.grpo.config import GRPOConfig
from sparring.train.online.grpo.rollout import LEARNER, EpisodeRollout, episode_reward, prompt_rows
from sparring.train.online.grpo.vllm_rollout import trl_vllm_args
from sparring.train.online.learner import experiment_models_file, learner_temperature
from sparring.train.online.steplog import read_step_log, trim_step_log

# Keys that may change between a run and its resumption (`max_steps`: train on for longer).
RESUMABLE = ("name", "description", "output_dir", "max_steps", "max_minutes", "logging_steps", "save_steps",
             "save_total_limit", "report_to", "run_name")


def load_grpo(name_or_path: str) -> tuple[GRPOConfig, str]:
    from importlib import resources

    path = Path(name_or_path).expanduser()
    if not path.is_file():
        for candidate in (Path.cwd() / "configs" / "train" / f"{name_or_path}.yaml",
                          Path(str(resources.files("sparring") / "configs" / "train" / f"{name_or_path}.yaml"))):
            if candidate.is_file():
                path = candidate
                break
        else:
            raise SparringError(f"no GRPO configuration {name_or_path!r} (looked in configs/train/)")
    config = load_yaml_model(GRPOConfig, path)
    return (config if config.name else config.model_copy(update={"name": path.stem})), str(path)


def output_dir(config: GRPOConfig) -> Path:
    return Path(config.output_dir or Path(os.environ.get("SPARRING_RUNS_DIR") or "runs") / config.name)


def state_for(config: GRPOConfig, file: str) -> OutputState:
    """OUT/state.json: the config the run in OUT was started with."""
    snapshot = {k: v for k, v in config.model_dump(mode="json").items() if k not in RESUMABLE}
    return OutputState(output_dir(config), snapshot, f"GRPO run (config {file})", "--restart")


def check_config(config: GRPOConfig, file: str) -> None:
    agents = config.experiment.get("agents") or {}
    if agents.get(config.learner_agent, {}).get("model") != LEARNER:
        raise SparringError(f"{file}: experiment.agents.{config.learner_agent}.model must be {LEARNER!r} "
                            "(the learner's weights are injected under that name)")


def run_grpo(config: GRPOConfig, file: str = "<config>", restart: bool = False) -> Path:
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    out = output_dir(config)
    check_config(config, file)
    if config.adapter:  # before anything is played or loaded
        from sparring.train.policy import check_adapter

        check_adapter(config.adapter, config.model, experiment_models_file(config, file))
    state = state_for(config, file)

    def prepare() -> None:  # one process moves, checks and writes OUT/state.json
        if restart:
            state.restart()
        state.check()
        state.start()

    distributed.on_main(prepare, "checking the output directory")
    # The arena resolves `learner` to a placeholder until the first rollout injects the live model.
    base_dir = Path(file).parent if Path(file).is_file() else Path.cwd()  # relative paths: beside the config
    from sparring.train.online.trainer.opponents import league_agents

    experiment = league_agents(config.experiment, config.learner_agent, config.opponents)
    arena = Arena.from_config({"name": config.name, **experiment}, models={LEARNER: ScriptedModel(LEARNER)},
                              base_dir=base_dir)
    try:
        if config.engine == "sparring":
            from sparring.train.online.trainer.run import train_online

            return train_online(config, file, arena, out)
        return _train(config, file, arena, out)
    finally:
        arena.close()


def _train(config: GRPOConfig, file: str, arena: Any, out: Path) -> Path:
    import datasets
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLConfig
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
                             gamma=config.gamma)
    per_step = config.prompts_per_step * rollout.slots
    if config.prompts_per_step % distributed.world_size():  # each process plays whole groups
        raise SparringError(f"{file}: prompts_per_step = {config.prompts_per_step} groups per step cannot be "
                            f"split evenly over {distributed.world_size()} processes")
    cuda = use_cuda()
    args = TRLConfig(output_dir=str(out / "trainer"), per_device_train_batch_size=per_step // distributed.world_size(),
                     num_generations=rollout.slots, max_steps=config.max_steps, temperature=temperature,
                     learning_rate=config.learning_rate, beta=config.beta, logging_steps=config.logging_steps,
                     disable_dropout=config.disable_dropout,
                     **checkpoint_args(config.save_steps, config.save_total_limit), seed=config.seed,
                     bf16=cuda, use_cpu=not cuda, **checkpointing_arg(config.gradient_checkpointing),
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


def turn_credit_args(config: GRPOConfig) -> dict[str, Any]:
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


def grpo_report(out: Path, config: GRPOConfig) -> Path:
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
