"""A loop's warm start (`warm_start:`), the stage before the first iteration: ALIAS@0's adapter.

Three sources: SFT on human games (`file`, lm-selfplay's warm start), SFT on a demonstrator's games
(`demonstrator`: the loop's own self-play games with that model in the policy's seat, not branched;
the debate DPO recipe's warm start, since the bundled model never samples what the judge rewards),
or an adapter trained elsewhere (`adapter`, taken as it is). `warm_start.train` changes the
trainer settings of the two that train.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.errors import SparringError


def demonstration_experiment(loop: Any) -> dict[str, Any]:
    """The experiment config of the demonstrations: the self-play games with the demonstrator in
    the policy's seat, not branched and without best-of-N (every game is one demonstration)."""
    w = loop.config.warm_start
    assert w is not None and w.demonstrator is not None
    cfg = loop.selfplay_with(w.demonstrator, f"{loop.config.name}-demonstrations")
    cfg.pop("branch", None)
    cfg["agents"][loop.config.policy_agent].pop("best_of_n", None)
    return cfg


def warm_stage(loop: Any) -> dict[str, Any]:
    """Train (or take) ALIAS@0's adapter for `loop` (a `Loop`): its path, rows, steps and loss,
    and the demonstrations' run directory where there are some."""
    from sparring.train.policy import check_adapter
    from sparring.train.trainers import train_sft

    w, config = loop.config.warm_start, loop.config
    assert w is not None
    if w.adapter is not None:  # trained elsewhere: ALIAS@0 is the base model with it
        check_adapter(w.adapter, config.train.model, loop._models_file())
        return {"adapter": str(Path(w.adapter).expanduser().resolve()), "rows": 0, "steps": 0, "loss": None}
    extra: dict[str, Any] = {}
    if w.demonstrator is not None:
        from sparring.records.reader import iter_records
        from sparring.train.export import ExportFilters, sft_rows

        run_dir = loop._run(demonstration_experiment(loop), "demonstrations")
        rows = sft_rows(list(iter_records(run_dir)), ExportFilters(agent=config.policy_agent, keep="all"))
        extra["run_dir"] = str(run_dir)
        if not rows:
            raise SparringError(f"warm_start: the demonstrator {w.demonstrator!r} gave no training rows (no turn of "
                                f"the {config.policy_agent!r} seat was accepted)")
    else:
        from sparring.train.export.human import human_sft_rows

        assert w.file is not None
        rows = human_sft_rows(w.human, w.file, split=w.split, limit=w.limit)
        if not rows:
            raise SparringError(f"warm_start: no human games could be replayed from {w.file}")
    settings = w.settings(config.train, run_name=loop._run_name("warm"), models_file=loop._models_file())
    result = train_sft(rows, settings, loop.dir / "warm" / "adapter")
    loop._stopped(result, "warm start")
    return {"adapter": str(result.adapter.resolve()), "rows": result.rows, "steps": result.steps,
            "loss": result.loss, **extra}
