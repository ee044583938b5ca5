"""Experiment trackers: the trainers' curves through transformers' `report_to`, and the loops' own
numbers (held-out win rate, agreement, judge accuracy, rewards per iteration) to the same trackers.

Every tracker stays an optional extra (`pip install 'sparring[tensorboard]'`, `[wandb]`, ...):
`report_to` is checked before anything is loaded against what the installed transformers
supports and what is installed, so a typo or a missing package is one clear message instead of an
error after the model has loaded. `MetricLog` writes a loop's per-iteration metrics; each tracker
is one small class registered with `@register_tracker`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError
from sparring.registry import Registry

TRACKERS: Registry[type[Any]] = Registry("tracker", modules=["sparring.train.tracking"])
register_tracker = TRACKERS.register
PROJECT_ENV = "SPARRING_TRACKER_PROJECT"  # wandb / trackio / mlflow project (default "sparring")


def check_report_to(names: list[str], key: str = "report_to") -> list[str]:
    """`names` if transformers supports each and each is installed; else a ConfigError naming
    the tracker and the extra that installs it. `all` means every installed one."""
    if not names:
        return []
    from transformers.integrations import get_available_reporting_integrations
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    if names == ["all"]:
        return list(get_available_reporting_integrations())
    unknown = [n for n in names if n not in INTEGRATION_TO_CALLBACK]
    if unknown:
        raise ConfigError(f"unknown tracker {unknown[0]!r}; transformers supports: "
                          f"{', '.join(sorted(INTEGRATION_TO_CALLBACK))}", key=key)
    available = set(get_available_reporting_integrations())
    missing = [n for n in names if n not in available]
    if missing:
        raise ConfigError(f"tracker {missing[0]!r} is not installed: pip install 'sparring[{missing[0]}]' "
                          f"(or pip install {missing[0]})", key=key)
    return list(names)


def report_args(report_to: list[str], run_name: str | None, out: Path) -> dict[str, Any]:
    """The training-arguments keywords: the trackers, and the run named after the sparring run."""
    return {"report_to": check_report_to(report_to) or "none", "run_name": run_name or out.name}


def project() -> str:
    return os.environ.get(PROJECT_ENV) or "sparring"


@register_tracker("tensorboard")
class TensorBoardTracker:
    """Scalars under `OUT/tensorboard` (`tensorboard --logdir OUT` shows them beside the trainers')."""

    def __init__(self, out: Path, run_name: str):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(out / "tensorboard"))

    def log(self, metrics: dict[str, float], step: int) -> None:
        for k, v in metrics.items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


@register_tracker("wandb")
class WandbTracker:
    def __init__(self, out: Path, run_name: str):
        import wandb

        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT") or project(), name=run_name,
                              dir=str(out), job_type="loop", reinit="create_new")

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(dict(metrics), step=step)

    def close(self) -> None:
        self.run.finish()


@register_tracker("trackio")
class TrackioTracker:
    def __init__(self, out: Path, run_name: str):
        import trackio

        self.trackio = trackio
        trackio.init(project=project(), name=run_name)

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.trackio.log(dict(metrics), step=step)

    def close(self) -> None:
        self.trackio.finish()


@register_tracker("mlflow")
class MLflowTracker:
    def __init__(self, out: Path, run_name: str):
        import mlflow

        self.mlflow = mlflow
        mlflow.set_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME") or project())
        self.run = mlflow.start_run(run_name=run_name, nested=mlflow.active_run() is not None)

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.mlflow.log_metrics(dict(metrics), step=step, run_id=self.run.info.run_id)

    def close(self) -> None:
        self.mlflow.end_run()


class MetricLog:
    """A loop's own metrics, one step per iteration, to every tracker of `report_to` that has a
    class here (the others still get the trainers' curves through transformers)."""

    def __init__(self, report_to: list[str], out: Path, run_name: str):
        self.names = [n for n in check_report_to(report_to) if n in TRACKERS]
        self.out, self.run_name = Path(out), run_name
        self._open: list[Any] | None = None

    def log(self, metrics: dict[str, Any], step: int) -> None:
        numbers = {k: float(v) for k, v in metrics.items()
                   if isinstance(v, int | float) and not isinstance(v, bool) and v == v}
        if not self.names or not numbers:
            return
        if self._open is None:
            self._open = [TRACKERS.get(n)(self.out, self.run_name) for n in self.names]
        for tracker in self._open:
            tracker.log(numbers, step)

    def close(self) -> None:
        for tracker in self._open or []:
            tracker.close()
        self._open = None
