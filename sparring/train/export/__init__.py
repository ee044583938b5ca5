"""Exporters: stored runs → SFT / DPO / KTO rows that TRL's trainers accept unchanged.

    from sparring.train.export import ExportFilters, export
    result = export("sft", ["runs/qs"], "data/qs-sft", ExportFilters(role="debater", keep="winners"))

Every row is derived from the episode record: what each player's model was shown and replied.
Rows go to `OUT/train.jsonl` (or `train.parquet`) with a dataset card `OUT/README.md`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sparring.errors import SparringError
from sparring.records.reader import iter_records
from sparring.train.export.card import dataset_card
from sparring.train.export.filters import ExportFilters
from sparring.train.export.kto import kto_rows
from sparring.train.export.pairs import dpo_rows, soft_target
from sparring.train.export.sft import sft_rows

Kind = Literal["sft", "dpo", "kto"]

__all__ = ["ExportFilters", "ExportResult", "dpo_rows", "export", "kto_rows", "rows_for", "sft_rows",
           "soft_target", "write_rows"]


@dataclass
class ExportResult:
    path: Path
    rows: int
    card: Path


def rows_for(kind: Kind, run_dirs: Iterable[str | Path], filters: ExportFilters | None = None,
             **dpo_options: Any) -> list[dict[str, Any]]:
    """The rows of `kind` from the runs (read with the one run reader)."""
    records: list[Any] = []
    for d in run_dirs:
        path = Path(d)
        if not (path / "episodes.jsonl").is_file():
            raise SparringError(f"{path} is not a run directory (no episodes.jsonl)")
        records.extend(iter_records(path))
    if kind == "sft":
        return sft_rows(records, filters)
    if kind == "dpo":
        return dpo_rows(records, filters, **dpo_options)
    if kind == "kto":
        return kto_rows(records, filters)
    raise SparringError(f"unknown export kind {kind!r}; expected sft, dpo or kto")


def write_rows(rows: list[dict[str, Any]], out_dir: str | Path, fmt: Literal["jsonl", "parquet"] = "jsonl") -> Path:
    """Rows to `out_dir/train.jsonl` (or `.parquet`), written whole or not at all."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SparringError(f"cannot create the output directory {out}: {e.strerror or e}") from None
    path = out / f"train.{fmt}"
    tmp = out / f".train.{fmt}.tmp"
    if fmt == "jsonl":
        with open(tmp, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        import datasets

        datasets.Dataset.from_list(rows).to_parquet(str(tmp))
    os.replace(tmp, path)
    return path


def export(kind: Kind, run_dirs: Iterable[str | Path], out_dir: str | Path, filters: ExportFilters | None = None,
           fmt: Literal["jsonl", "parquet"] = "jsonl", **dpo_options: Any) -> ExportResult:
    dirs = [Path(d) for d in run_dirs]
    f = filters or ExportFilters()
    rows = rows_for(kind, dirs, f, **dpo_options)
    if not rows:
        raise SparringError(f"no {kind.upper()} rows: the runs hold no episodes that pass the filters "
                            f"({f.model_dump(exclude_defaults=True) or 'none'})"
                            + ("; DPO rows need best-of-N candidates (agents with best_of_n)" if kind == "dpo" else ""))
    path = write_rows(rows, out_dir, fmt)
    card = Path(out_dir) / "README.md"
    card.write_text(dataset_card(kind, rows, dirs, f.model_dump(), {"format": fmt, **dpo_options}), encoding="utf-8")
    return ExportResult(path=path, rows=len(rows), card=card)
