"""The classes of one sparring environment package, made from its experiment file.

verifiers finds an environment by its taskset id: the installed module of that name exports (in
`__all__`) one Taskset, one Env and, here, the Harness its seats default to. The seats a game has
depend on the experiment (debate's format, TextArena's player count), and verifiers reads each seat
as a field of the env's config class (`--env.<seat>.model`), so the classes are made per package,
at its import, by `environment()`; the package itself is three lines (`package.py` writes it).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import create_model

from sparring.integrations.seats import SEAT_MODEL, camel, experiment_data
from sparring.integrations.verifiers.arena import Seating, seating
from sparring.integrations.verifiers.env import GameEnv, GameEnvConfig
from sparring.integrations.verifiers.harness import SeatHarness
from sparring.integrations.verifiers.taskset import GameTaskset


def seat_agent_config() -> vf.AgentConfig:
    """A seat's defaults: the package's harness (unset = the taskset's), in-process (`subprocess`:
    the harness runs no program), the run's model and client unless pinned."""
    return vf.AgentConfig(runtime={"type": "subprocess"})


@dataclass(frozen=True)
class Environment:
    """One package's classes; `load(**env)` builds the verifiers `Env` (keys of the `[env]` block,
    e.g. `taskset={"split": "test"}`, `judge={"model": "...", "client": {...}}`)."""

    name: str
    seating: Seating
    taskset: type[GameTaskset]
    config: type[GameEnvConfig]
    env: type[GameEnv]
    harness: type[SeatHarness] = SeatHarness

    def load(self, **env: Any) -> vf.Env:
        return load_environment(self.name, **env)


def environment(experiment_file: str | Path, name: str, module: str | None = None) -> Environment:
    """The classes of package `name` (its taskset id) playing `experiment_file`; `module` is the
    package's module name (for the classes' `__module__`)."""
    path = Path(experiment_file)
    data, anchor = experiment_data(path)
    seats = seating(data, anchor)
    held = {p: f for p, f in seats.fields.items() if seats.roles[p] in seats.held_roles}
    if not held:
        raise ValueError(f"experiment {path} lets verifiers hold no seat: name the model {SEAT_MODEL!r} for an "
                         "agent (`sparring verifiers package` does)")
    seats = Seating(name=seats.name, game=seats.game, roles=seats.roles, fields=held,
                    evaluators=seats.evaluators, held_roles=seats.held_roles)
    stem, mod = camel(name), module or name.replace("-", "_")
    taskset = types.new_class(f"{stem}Taskset", (GameTaskset,), exec_body=lambda ns: ns.update(
        {"experiment_file": path, "__module__": mod, "__doc__": f"The episodes of {seats.name} ({seats.game})."}))
    roles: dict[str, Any] = {field: (vf.AgentConfig, seat_agent_config()) for field in held.values()}
    config = create_model(f"{stem}EnvConfig", __base__=GameEnvConfig, __module__=mod, **roles)
    env = types.new_class(f"{stem}Env", (GameEnv, vf.Env[config]), exec_body=lambda ns: ns.update(  # type: ignore[valid-type]
        {"seating": seats, "__module__": mod, "__doc__": f"{seats.game} ({seats.name}): seats {', '.join(held.values())}."}))
    return Environment(name=name, seating=seats, taskset=taskset, config=config, env=env)


def load_environment(name: str, **env: Any) -> vf.Env:
    """An installed sparring environment package (`name`, its taskset id, e.g. `sparring-dond`) as a
    verifiers `Env`, as verifiers' own loader builds it; `env`: keys of its `[env]` block."""
    taskset = dict(env.pop("taskset", None) or {})
    return vf.load_environment(vf.resolve_env_config({**env, "taskset": {**taskset, "id": name}}))
