"""`sparring verifiers package EXPERIMENT -o DIR`: a pip-installable verifiers environment package.

verifiers and prime-rl find an environment by its taskset id, the name of an installed module; this
writes one for any experiment (a shipped name or a YAML file) of any registered game:

    DIR/pyproject.toml          the distribution (`pip install DIR`; depends on sparring[verifiers])
    DIR/README.md               how to evaluate it and train on it
    DIR/<module>/__init__.py    three lines: the classes made from the experiment (`build.environment`)
    DIR/<module>/experiment.yaml  the experiment, its held agents' model set to `SEAT_MODEL`
    DIR/<module>/models.yaml    the experiment's models file, when it names one (a scripted partner)

`seats`: the agents verifiers plays (default: every agent); the others are played inside the engine
by their own models. Nothing here imports verifiers: the package is written without it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparring import __version__
from sparring.errors import SparringError, UnknownNameError
from sparring.gameapi import GAMES
from sparring.integrations.seats import SEAT_MODEL, camel, experiment_data, hold_seats
from sparring.integrations.verifiers.arena import seating

MODULE_TEMPLATE = '''"""{name}: {game} ({experiment}) as a verifiers environment, written by `sparring verifiers package`.

Agents played by verifiers: {seats}. The rules, re-prompts, judge and rewards are sparring's
engine's, from experiment.yaml beside this file (each trace's reward `outcome` is its seat's reward).
"""

from pathlib import Path

from sparring.integrations.verifiers.build import environment

ENVIRONMENT = environment(Path(__file__).with_name("experiment.yaml"), {name!r}, __name__)
{stem}Taskset = ENVIRONMENT.taskset
{stem}Env = ENVIRONMENT.env
SeatHarness = ENVIRONMENT.harness


def load_environment(**env):
    """This environment as a verifiers `Env`; `env`: keys of its `[env]` block (taskset={{"split": "test"}})."""
    return ENVIRONMENT.load(**env)


__all__ = ["{stem}Taskset", "{stem}Env", "SeatHarness", "load_environment"]
'''

PYPROJECT_TEMPLATE = '''[project]
name = "{name}"
version = "0.1.0"
description = "{game} ({experiment}) from sparring as a verifiers environment"
requires-python = ">=3.11"
dependencies = ["sparring[verifiers]>={version}"]

[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[tool.setuptools]
packages = ["{module}"]

[tool.setuptools.package-data]
{module} = ["*.yaml"]
'''

README_TEMPLATE = '''# {name}

{game} ({experiment}) from sparring as a verifiers v1 environment, written by `sparring verifiers
package`. Agents played by verifiers: {seats}, each seat a config field `env.<seat>`; a seat is
trained unless it is the judge, pinned to a model (`env.<seat>.model`) or listed in `env.frozen`. Tasks are the experiment's scheduled episodes on `env.taskset.split`
(`train` to train, `test` held out).

```bash
pip install -e .
vf-eval {name} -m MODEL --client.base-url URL -n 4 --env.taskset.split test --no-push
```

Each seat's trace carries the reward `outcome` (the game's reward for that seat, as sparring's engine
scores it) and `info["sparring"]` (episode id, player, status).
'''


@dataclass(frozen=True)
class Package:
    """A written package: its directory, distribution and taskset id, module, held agents and seats."""

    path: Path
    name: str
    module: str
    agents: list[str]
    seats: list[str]


def package_name(experiment: str) -> str:
    """`sparring-<experiment>`, lowercase letters, digits and dashes."""
    slug = re.sub(r"[^0-9a-z]+", "-", experiment.lower()).strip("-") or "game"
    return f"sparring-{slug}"


def write_package(source: str | Path | dict[str, Any], out: str | Path, *, name: str | None = None,
                  seats: list[str] | None = None, force: bool = False) -> Package:
    """Write the environment package of experiment `source` into `out`."""
    try:
        data, path = experiment_data(source)
    except UnknownNameError:
        if isinstance(source, str) and source in GAMES:
            shipped = ", ".join(experiments_of(GAMES.canonical(source))) or "none is shipped"
            raise SparringError(f"{source!r} is a game; package one of its experiments ({shipped}) "
                                "or your own YAML file") from None
        raise
    data = hold_seats(data, seats or None, where=str(path))
    facts = seating(data, path)  # the experiment resolves: game, agents, models, prompts
    name = name or package_name(facts.name)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name):
        raise SparringError(f"package name {name!r}: use letters, digits, - and _ (it is also the taskset id)")
    module = name.replace("-", "_").lower()
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise SparringError(f"{out} is not empty (pass --force to overwrite)")
    (out / module).mkdir(parents=True, exist_ok=True)
    models_file = data.get("models_file")
    if isinstance(models_file, str):
        source_file = Path(models_file).expanduser()
        if not source_file.is_file():
            raise SparringError(f"the experiment's models_file {models_file!r} is not a file")
        shutil.copyfile(source_file, out / module / "models.yaml")
        data["models_file"] = "models.yaml"
    _absolute_data_path(data, path)
    data["name"] = facts.name
    held = sorted({a for a, cfg in (data.get("agents") or {}).items() if cfg.get("model") == SEAT_MODEL})
    fields = [f for p, f in facts.fields.items() if facts.roles[p] in facts.held_roles]
    words = {"name": name, "game": facts.game, "experiment": facts.name,
             "seats": f"{', '.join(held)} (seats {', '.join(fields)})",
             "stem": camel(name), "module": module, "version": __version__}
    (out / module / "experiment.yaml").write_text(
        f"# {facts.name} for the verifiers package {name}: agents {', '.join(held)} are played by verifiers.\n"
        + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out / module / "__init__.py").write_text(MODULE_TEMPLATE.format(**words), encoding="utf-8")
    (out / "pyproject.toml").write_text(PYPROJECT_TEMPLATE.format(**words), encoding="utf-8")
    (out / "README.md").write_text(README_TEMPLATE.format(**words), encoding="utf-8")
    return Package(path=out, name=name, module=module, agents=held, seats=fields)


def experiments_of(game: str) -> list[str]:
    """The shipped experiments of `game`, by name."""
    from sparring.config_io import read_yaml
    from sparring.engine.loader import available_configs

    out = []
    for name, path in available_configs().items():
        data = read_yaml(path)
        if isinstance(data, dict) and data.get("game") and GAMES.canonical(str(data["game"])) == game:
            out.append(name)
    return out


def _absolute_data_path(data: dict[str, Any], path: Path) -> None:
    """A relative `dataset.args.path` as the experiment read it (from the working directory, else
    beside the experiment file), so the package reads the same file from wherever it is installed."""
    args = (data.get("dataset") or {}).get("args") or {}
    value = args.get("path")
    if isinstance(value, str) and not Path(value).expanduser().is_absolute():
        for base in (Path.cwd(), path.parent):
            if (base / value).exists():
                args["path"] = str((base / value).resolve())
                return
