"""`scripts/run_grpo.py` / `sparring train online`: an online RL run (GRPO or PPO) from its config -
loaded, checked, its output folder claimed or resumed, then trained by sparring's own trainer
(`trainer/`, `trainer: sparring`) or by TRL's `GRPOTrainer` (`trl/grpo.py`, `trainer: trl`).

In both, each optimizer step takes `prompts_per_step` prompts (an instance + the learner's seat), plays
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

import os
from pathlib import Path

from sparring.config_io import load_yaml_model
from sparring.errors import SparringError
from sparring.train import distributed
from sparring.train.fingerprint import OutputState
from sparring.train.online.config import OnlineConfig
from sparring.train.online.learner import experiment_models_file
from sparring.train.online.rollout import LEARNER

# Keys that may change between a run and its resumption (`max_steps`: train on for longer).
RESUMABLE = ("name", "description", "output_dir", "max_steps", "max_minutes", "logging_steps", "save_steps",
             "save_total_limit", "report_to", "run_name")


def load_online(name_or_path: str) -> tuple[OnlineConfig, str]:
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
    config = load_yaml_model(OnlineConfig, path)
    return (config if config.name else config.model_copy(update={"name": path.stem})), str(path)


def output_dir(config: OnlineConfig) -> Path:
    return Path(config.output_dir or Path(os.environ.get("SPARRING_RUNS_DIR") or "runs") / config.name)


def state_for(config: OnlineConfig, file: str) -> OutputState:
    """OUT/state.json: the config the run in OUT was started with."""
    snapshot = {k: v for k, v in config.model_dump(mode="json").items() if k not in RESUMABLE}
    return OutputState(output_dir(config), snapshot, f"GRPO run (config {file})", "--restart")


def check_config(config: OnlineConfig, file: str) -> None:
    agents = config.experiment.get("agents") or {}
    if agents.get(config.learner_agent, {}).get("model") != LEARNER:
        raise SparringError(f"{file}: experiment.agents.{config.learner_agent}.model must be {LEARNER!r} "
                            "(the learner's weights are injected under that name)")


def run_online(config: OnlineConfig, file: str = "<config>", restart: bool = False) -> Path:
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
        from sparring.train.online.trl.grpo import train_trl

        return train_trl(config, file, arena, out)
    finally:
        arena.close()
