"""The static task set of a benchmark suite: which lm-evaluation-harness tasks make its statscore.

A suite's `statscore:` block names tasks by a key of ours (the row in the tables) and says, per
task, which lm-eval task (or group) runs, which of its metrics (and filter) is the task's score,
and how to bring that metric to 0-100. A task is either one lm-eval ships (`task: ifeval`), one
in a folder of task YAMLs (`include_path`), or one whose YAML file lies beside the suite
(`file: static/facts.yaml`); in such a file, relative `dataset_kwargs.data_files` are read next to
the file, so a suite and its local data move together (lm-eval itself reads them from the working
directory).

Why our own block rather than a list of names: Playpen's statscore is the mean of one number per
task, and lm-eval reports several per task (ifeval: four accuracies; mmlu_pro: per filter), so
the suite has to say which one counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from sparring.config_io import read_yaml
from sparring.errors import ConfigError
from sparring.types import Strict


class StaticTask(Strict):
    """One static task: an lm-eval task or group and the metric that is its score."""

    task: str = Field(description="lm-eval task or group name (`lm-eval ls tasks`), or the `task:` of `file`")
    file: str | None = Field(None, description="an lm-eval task YAML, relative to the suite file")
    metric: str | None = Field(None, description="the lm-eval metric that is the task's score (default: "
                               "the first one lm-eval reports)")
    filter: str = Field("none", description="lm-eval filter of that metric (e.g. custom-extract)")
    scale: float = Field(100.0, gt=0, description="factor that brings the metric to 0-100 (1 for a "
                         "metric that already is, e.g. eq_bench's eqbench)")
    limit: int | None = Field(None, ge=1, description="at most this many documents (default: the "
                              "statscore block's limit, else all)")
    num_fewshot: int | None = Field(None, ge=0, description="override the task's own few-shot count")
    description: str = ""


class Statscore(Strict):
    """The `statscore:` block of a suite."""

    description: str = ""
    source: str = Field("", description="where the task set comes from (shown in bench.md)")
    tasks: dict[str, StaticTask]
    limit: int | None = Field(None, ge=1, description="default document limit of every task")
    batch_size: int = Field(8, ge=1, description="lm-eval batch size")
    apply_chat_template: bool = Field(False, description="prompt through the model's chat template "
                                      "(as Playpen does: its static tasks are played as chat games)")
    include_path: list[str] = Field(default_factory=list, description="folders of lm-eval task YAMLs, "
                                    "relative to the suite file")


def _resolve_files(value: Any, base: Path) -> Any:
    """`data_files` (a path, a list, or split -> path(s)) with relative paths made absolute."""
    if isinstance(value, str):
        return value if "://" in value or Path(value).expanduser().is_absolute() else str((base / value).resolve())
    if isinstance(value, list):
        return [_resolve_files(v, base) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_files(v, base) for k, v in value.items()}
    return value


def task_config(spec: StaticTask, suite_dir: Path, key: str) -> str | dict[str, Any]:
    """What lm-eval's `tasks=[...]` gets for `spec`: its name, or the config read from its file
    (data files resolved next to it). A file with YAML tags (`!function`) goes in `include_path`."""
    if spec.file is None:
        return spec.task
    path = Path(spec.file).expanduser()
    path = path if path.is_absolute() else (suite_dir / path)
    where = f"statscore.tasks.{key}.file"
    if not path.is_file():
        raise ConfigError(f"statscore task file not found: {path}", key=where)
    try:
        cfg = read_yaml(path)
    except ConfigError as e:
        raise ConfigError(f"{e.message} (a task YAML with `!function` tags belongs in a folder named by "
                          "statscore.include_path, not in `file:`)", file=str(path)) from None
    if not isinstance(cfg, dict) or "task" not in cfg:
        raise ConfigError("an lm-eval task YAML needs a mapping with a `task:` name", file=str(path))
    if cfg["task"] != spec.task:
        raise ConfigError(f"the file defines task {cfg['task']!r}, the suite asks for {spec.task!r}",
                          file=str(path), key="task")
    kwargs = cfg.get("dataset_kwargs")
    if isinstance(kwargs, dict) and "data_files" in kwargs:
        cfg["dataset_kwargs"] = {**kwargs, "data_files": _resolve_files(kwargs["data_files"], path.parent)}
    return cfg


def include_paths(block: Statscore, suite_dir: Path) -> list[str]:
    out = []
    for p in block.include_path:
        path = Path(p).expanduser()
        path = path if path.is_absolute() else suite_dir / path
        if not path.is_dir():
            raise ConfigError(f"statscore include_path folder not found: {path}", key="statscore.include_path")
        out.append(str(path.resolve()))
    return out


__all__ = ["StaticTask", "Statscore", "include_paths", "task_config"]
