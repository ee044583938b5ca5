"""What an online RL config's experiment says about its learner, read the same way by GRPO and PPO
(and by the dry run) before any weights load: the learner's sampling temperature and the models
file its `model` may be named in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.errors import ConfigError
from sparring.train.online.config import OnlineConfig


def learner_temperature(arena: Any, config: OnlineConfig, file: str) -> float:
    """The learner's sampling temperature; greedy sampling is refused: every episode of a group
    would be the same game, so every advantage would be zero and nothing would train."""
    agent = arena.agents.get(config.learner_agent)
    if agent is None:
        raise ConfigError(f"experiment.agents has no learner agent {config.learner_agent!r}",
                          file=file, key="learner_agent")
    temperature = float(agent.sampling.temperature)
    if temperature == 0.0 and config.num_generations > 1:
        raise ConfigError(f"the learner's sampling temperature is 0 (greedy; "
                          f"also the default) with num_generations={config.num_generations}: the "
                          f"{config.num_generations} episodes of a group would be identical and have zero "
                          "advantage. Set a temperature > 0 (e.g. 1.0)",
                          file=file, key=f"experiment.agents.{config.learner_agent}.sampling.temperature")
    return temperature


def experiment_models_file(config: OnlineConfig, file: str) -> str | None:
    """The experiment's `models_file` (relative paths as the experiment loader finds them), where `model` may be named
    (None when there is none; a missing file is reported where the experiment is resolved)."""
    name = config.experiment.get("models_file")
    if not name:
        return None
    from sparring.engine.loader import find_models_file

    base = Path(file).parent if Path(file).is_file() else Path.cwd()
    path = Path(find_models_file(str(name), base))
    return str(path) if path.is_file() else None
