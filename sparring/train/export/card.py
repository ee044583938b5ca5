"""The dataset card (`OUT/README.md`): where the rows come from and what they contain."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from sparring.records.reader import read_manifest


def _words(row: dict[str, Any]) -> int:
    parts = row.get("messages") or (row.get("prompt", []) + row.get("chosen", []) + row.get("completion", []))
    return sum(len(m["content"].split()) for m in parts)


def dataset_card(kind: str, rows: list[dict[str, Any]], run_dirs: list[Path], filters: dict[str, Any],
                 options: dict[str, Any]) -> str:
    roles = Counter(r["meta"].get("role") for r in rows)
    agents = Counter(r["meta"].get("agent") for r in rows)
    words = sorted(_words(r) for r in rows) or [0]
    sources = []
    for d in run_dirs:
        man = read_manifest(d)
        sources.append(f"| `{d}` | {man.get('experiment', '?')} | `{man.get('config_hash', '?')}` | "
                       f"{(man.get('counts') or {}).get('done', '?')} |")
    lines = [
        f"# {kind.upper()} data exported by sparring", "",
        f"{len(rows)} rows in TRL's conversational {kind.upper()} format "
        f"(`datasets.load_dataset(\"json\", data_files=...)` loads it as is).", "",
        "## Source runs", "", "| run directory | experiment | config hash | episodes |", "|---|---|---|---|",
        *sources, "", "## Selection", "", "```json", json.dumps({"filters": filters, **options}, indent=2),
        "```", "", "## Counts", "",
        "| role | rows |", "|---|---|", *[f"| {k} | {v} |" for k, v in sorted(roles.items(), key=str)], "",
        "| agent | rows |", "|---|---|", *[f"| {k} | {v} |" for k, v in sorted(agents.items(), key=str)], "",
        "## Length (whitespace words per row)", "",
        f"min {words[0]}, median {words[len(words) // 2]}, max {words[-1]}, total {sum(words)}", "",
    ]
    if kind == "dpo" and rows:
        prefs = sorted(r["preference"] for r in rows)
        lines += [f"Soft preference targets: min {prefs[0]:.3f}, median {prefs[len(prefs) // 2]:.3f}, "
                  f"max {prefs[-1]:.3f}.", ""]
    if kind == "kto" and rows:
        lines += [f"Desirable rows: {sum(r['label'] for r in rows)} of {len(rows)}.", ""]
    return "\n".join(lines)
