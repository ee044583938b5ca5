"""The statscore: a model's mean score (0-100) over a suite's static tasks, run by EleutherAI's
lm-evaluation-harness (`pip install 'sparring[statscore]'`), beside the clemscore of its games.

Playpen reports the same pair (`playpen eval MODEL`: clemscore, and statscore, "the average
performance on the static benchmark datasets"), so a model trained on games can show whether it
lost general ability. Scoring is lm-eval's, not ours: each task runs through
`lm_eval.simple_evaluate` on an `HFLM` built from the model's `hf` spec (its LoRA adapter passed as
`peft=`); we only pick each task's metric, bring it to 0-100 and average:

    task score = the task's metric (lm-eval's own aggregate) x its scale
    statscore  = mean of the task scores over the tasks that ran (a task that failed, e.g. its
                 dataset cannot be downloaded, is reported as an error and listed as missing,
                 never averaged in as 0)

Intervals are 95% percentile bootstraps over the per-document values lm-eval logs
(`log_samples`), resampled within each task as the clemscore's are within each game. Those
per-document values are also written out (`STATIC_ITEMS`), so two models on the same documents
can be compared pair by pair (the transfer experiment's before/after).
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError, SparringError, one_line
from sparring.evaluation.clemscore import clemscore
from sparring.evaluation.static_tasks import StaticTask, Statscore, include_paths, task_config
from sparring.stats.stats_tests import bootstrap_ci

INSTALL_HINT = "pip install 'sparring[statscore]' installs it (EleutherAI's lm-evaluation-harness)"


def lm_eval_missing() -> str | None:
    """Why the statscore cannot run here (lm-eval not installed), or None."""
    if importlib.util.find_spec("lm_eval") is None:
        return f"statscore skipped: lm-eval is not installed; {INSTALL_HINT}"
    return None


class StaticTaskError(SparringError):
    """One static task could not run; the others still do."""


def _adapter_of(args: Any) -> str | None:
    """The LoRA adapter an `hf` spec plays with by default (a `MODEL@STAGE` entry), else None."""
    name = args.default_adapter
    if name and name != "base":
        return str(Path(args.adapters[name]).expanduser())
    return None


def hflm(spec: Any, adapter: str | None, batch_size: int) -> Any:
    """lm-eval's `HFLM` for a sparring `hf` model spec (bundled model resolved to its local
    directory; `adapter`, else the spec's default adapter, as `peft=`)."""
    from lm_eval.models.huggingface import HFLM

    from sparring.models.bundled import resolve_bundled
    from sparring.models.hf import HFModel
    from sparring.models.hf_load import resolve_device, resolve_dtype

    args = HFModel.Args(**spec.args)
    if args.gguf_file:
        raise SparringError(f"statscore: model {spec.name!r} loads a GGUF file, which lm-eval's HFLM does not; "
                            "convert it to a model directory first")
    source = resolve_bundled(args.model)
    pretrained = str(source) if source is not None else str(Path(args.model).expanduser()) \
        if Path(args.model).expanduser().is_dir() else args.model
    device = resolve_device(args.device)
    peft = adapter or _adapter_of(args)
    if peft is not None and not (Path(peft) / "adapter_config.json").is_file():
        raise SparringError(f"{peft} is not an adapter directory (no adapter_config.json)")
    if args.quantization:
        raise SparringError(f"statscore: model {spec.name!r} is quantized ({args.quantization}), and the statscore "
                            "loads models unquantized: benchmark a spec without `quantization`, or pass --no-statscore")
    try:
        return HFLM(pretrained=pretrained, revision=args.revision or "main", tokenizer=args.tokenizer, peft=peft,
                    device=str(device), dtype=resolve_dtype(args.dtype, device), batch_size=batch_size,
                    trust_remote_code=args.trust_remote_code)
    except (OSError, ValueError) as e:  # not found, not reachable, not a causal LM
        raise SparringError(f"statscore: lm-eval cannot load model {spec.name!r} ({pretrained}"
                            f"{' + ' + peft if peft else ''}): {one_line(e, 400)}") from None


def _leaves(result: Mapping[str, Any], name: str) -> list[str]:
    """The tasks whose documents make up `name` (itself, or a group's subtasks, recursively)."""
    subs = (result.get("group_subtasks") or {}).get(name)
    if not subs:
        return [name]
    return [leaf for s in subs for leaf in _leaves(result, s)]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and not math.isnan(float(value)):
        return float(value)
    return None


def _metric_key(row: Mapping[str, Any], spec: StaticTask, key: str) -> str:
    keys = [k for k in row if "," in k and "_stderr" not in k]
    if spec.metric is None:
        if not keys:
            raise StaticTaskError(f"statscore task {key}: lm-eval reported no metric for {spec.task!r}")
        return keys[0]
    want = f"{spec.metric},{spec.filter}"
    if want not in row:
        raise StaticTaskError(f"statscore task {key}: lm-eval task {spec.task!r} has no metric {spec.metric!r} "
                              f"with filter {spec.filter!r}; it reports {', '.join(keys) or 'none'}")
    return want


def task_figures(result: Mapping[str, Any], spec: StaticTask, key: str) -> tuple[dict[str, Any], dict[str, float]]:
    """From one `simple_evaluate` result: the task's figures and its per-document values (0-100)."""
    name = spec.task
    row = (result.get("results") or {}).get(name)
    if row is None:
        raise StaticTaskError(f"statscore task {key}: lm-eval returned no result for {name!r}")
    mkey = _metric_key(row, spec, key)
    metric, filt = mkey.split(",", 1)
    value = _number(row[mkey])
    leaves = _leaves(result, name)
    items: dict[str, float] = {}
    samples = result.get("samples") or {}
    for leaf in leaves:
        for s in samples.get(leaf, []):
            v = _number(s.get(metric)) if s.get("filter", "none") == filt else None
            if v is not None:
                items[f"{leaf}:{s['doc_id']}" if len(leaves) > 1 else str(s["doc_id"])] = v * spec.scale
    n_samples = result.get("n-samples") or {}
    n = sum(int((n_samples.get(leaf) or {}).get("effective", 0)) for leaf in leaves)
    vals = list(items.values())
    score = value * spec.scale if value is not None else math.nan
    # per-document values stand for the score only where the task's aggregate is their mean
    per_item = bool(vals) and value is not None and abs(sum(vals) / len(vals) - score) <= 1e-6 * max(1.0, abs(score))
    ci = bootstrap_ci(vals) if per_item else (math.nan, math.nan)
    config = (result.get("configs") or {}).get(leaves[0]) or {}
    figures = {"status": "ok", "task": name, "metric": metric, "filter": filt, "value": value,
               "score": score, "ci": list(ci), "n": n or len(vals), "per_item": per_item,
               "n_shot": (result.get("n-shot") or {}).get(leaves[0]),
               "dataset": config.get("dataset_path"), "lm_eval_version": result.get("lm_eval_version")}
    return figures, (items if per_item else {})


_HUB_ID = re.compile(r"'([\w.-]+/[\w.-]+)'")


def _load_error(err: BaseException, spec: StaticTask, key: str, cfg: str | dict[str, Any]) -> StaticTaskError:
    """A dataset or task lm-eval could not load, as one line naming the task and the dataset."""
    text = one_line(err, 400)
    if isinstance(err, KeyError) and "not a registered" in text:
        return StaticTaskError(f"statscore task {key}: lm-eval has no task or group {spec.task!r} "
                               "(`lm-eval ls tasks` lists them; a task of your own goes in statscore.include_path "
                               "or file)")
    found = _HUB_ID.search(text)
    hub = cfg.get("dataset_path") if isinstance(cfg, dict) else None
    hub = found.group(1) if found else hub
    which = f"its dataset {hub!r} (Hugging Face Hub)" if hub else "its dataset"
    return StaticTaskError(f"statscore task {key} (lm-eval task {spec.task!r}): {which} could not be loaded: {text}. "
                           "Download it once where the Hub is reachable (datasets caches it), or leave the task out "
                           "of the suite's statscore block")


def run_task(lm: Any, spec: StaticTask, key: str, block: Statscore, suite_dir: Path,
             limit: int | None = None) -> tuple[dict[str, Any], dict[str, float]]:
    """Run one static task on `lm`: its figures and per-document values. StaticTaskError on failure."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    cfg = task_config(spec, suite_dir, key)
    n = limit or spec.limit or block.limit
    start = time.perf_counter()
    try:
        result = lm_eval.simple_evaluate(
            model=lm, tasks=[cfg], task_manager=TaskManager(include_path=include_paths(block, suite_dir) or None),
            limit=n, num_fewshot=spec.num_fewshot, log_samples=True, batch_size=block.batch_size,
            apply_chat_template=block.apply_chat_template, bootstrap_iters=0)
    except (ConfigError, SparringError):
        raise
    except (KeyError, OSError) as e:  # ConnectionError, datasets' DatasetNotFoundError: OSErrors
        raise _load_error(e, spec, key, cfg) from None
    except ValueError as e:  # lm-eval's word on a task config it cannot use
        raise StaticTaskError(f"statscore task {key} (lm-eval task {spec.task!r}): {one_line(e, 400)}") from None
    if result is None:
        raise StaticTaskError(f"statscore task {key}: lm-eval returned nothing")
    figures, items = task_figures(result, spec, key)
    figures.update(limit=n, wall_s=round(time.perf_counter() - start, 1))
    return figures, items


def summarize(tasks: Mapping[str, Mapping[str, Any]], items: Mapping[str, Mapping[str, float]],
              seed: int = 0) -> dict[str, Any]:
    """The statscore of one model from its task figures: mean of the ok tasks' scores, with a
    bootstrap interval over their per-document values (when every task has them)."""
    ok = [k for k, t in tasks.items() if t.get("status") == "ok" and not math.isnan(float(t["score"]))]
    missing = [k for k in tasks if k not in ok]
    if not ok:
        return {"statscore": math.nan, "ci": [math.nan, math.nan], "scored": [], "missing": missing}
    point = sum(float(tasks[k]["score"]) for k in ok) / len(ok)
    if all(items.get(k) for k in ok):
        _, ci = clemscore([list(items[k].values()) for k in ok], seed=seed)
    else:
        ci = (math.nan, math.nan)
    return {"statscore": point, "ci": list(ci), "scored": ok, "missing": missing}


def run_statscore(spec: Any, block: Statscore, suite_dir: Path, *, adapter: str | None = None,
                  limit: int | None = None, seed: int = 0, console: Any = None) -> dict[str, Any]:
    """Every static task of `block` on one model: {status, note, tasks, items, statscore, ci, ...}."""
    why = lm_eval_missing()
    if why:
        return {"status": "skipped", "note": why, "tasks": {}, "items": {}}
    if spec.backend != "hf":
        return {"status": "skipped", "tasks": {}, "items": {},
                "note": f"statscore skipped: model {spec.name!r} uses the {spec.backend!r} backend; lm-eval scores "
                        "a local transformers model (backend hf)"}
    from sparring.models.hf import HFModel

    adapter = adapter or _adapter_of(HFModel.Args(**spec.args))  # the one lm-eval plays with, for bench.json
    lm = hflm(spec, adapter, block.batch_size)
    tasks: dict[str, dict[str, Any]] = {}
    items: dict[str, dict[str, float]] = {}
    for key, task in block.tasks.items():
        try:
            tasks[key], items[key] = run_task(lm, task, key, block, suite_dir, limit)
        except StaticTaskError as e:
            if console is not None:
                from rich.markup import escape

                console.print(f"[red]{escape(str(e))}[/red]")
            tasks[key] = {"status": "error", "task": task.task, "error": str(e)}
    del lm
    status = "ok" if all(t["status"] == "ok" for t in tasks.values()) else "incomplete"
    return {"status": status, "note": "", "adapter": adapter, "tasks": tasks, "items": items,
            **summarize(tasks, items, seed)}


def write_items(path: Path, items: Mapping[str, Mapping[str, float]]) -> Path:
    """Per-document values (task -> document -> 0-100) of one model, for paired comparisons."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_items(path: Path) -> dict[str, dict[str, float]]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


__all__ = ["INSTALL_HINT", "StaticTaskError", "hflm", "lm_eval_missing", "read_items", "run_statscore",
           "run_task", "summarize", "task_figures", "write_items"]
