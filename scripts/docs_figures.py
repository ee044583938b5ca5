#!/usr/bin/env python
"""Draw the documentation's learning curves and write its results tables from the measured
numbers in docs/learning/results.yaml:

    python scripts/docs_figures.py            # docs/img/learning/<experiment>.png + the tables
    python scripts/docs_figures.py --check    # exit 1 if a table is not the one results.yaml gives

The numbers are the held-out measurements of the learning suite, transcribed from each run's
learning.json / learning.md (each experiment's page in docs/learning/ says which run and commit);
the pictures are drawn from this file so that they can be redrawn without rerunning hours of
training, and the README table is generated so that it cannot drift from the pages
(tests/test_docs_results.py checks the tables). Screenshots of the web app come from the browser test:
`SPARRING_WEB_SCREENSHOTS=docs/img/web pytest tests/web/test_browser.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "learning" / "results.yaml"
IMAGES = ROOT / "docs" / "img" / "learning"
# where a results table lives (between <!-- results-table --> markers) and how it links the pages
TABLES = {ROOT / "README.md": "docs/", ROOT / "docs" / "learning" / "index.md": "../"}
START, END = "<!-- results-table -->\n", "<!-- /results-table -->"


def load(path: Path = RESULTS) -> list[dict[str, Any]]:
    """The experiments of the results file, each stage's metrics as (value, low, high)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    experiments = data["experiments"]
    for e in experiments:
        if not isinstance(e.get("splits", {}), dict):
            raise SystemExit(f"{path}: {e['name']}: splits must map stage labels to {{'low-high': deals}}")
        for s in e["stages"]:
            for key, triple in s.items():
                if key != "label" and not (isinstance(triple, list) and len(triple) == 3):
                    raise SystemExit(f"{path}: {e['name']}, stage {s.get('label')!r}: {key} must be "
                                     "[value, low, high]")
    return experiments


def _fmt(triple: list[float], digits: int) -> str:
    value, low, high = triple
    if low == high == value:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def table(experiments: list[dict[str, Any]], link: str = "docs/") -> str:
    """The results table: each experiment's headline metric before -> after; `link` leads from the
    table's file to docs/."""
    lines = ["| experiment | held-out metric (n) | before | after | target | time here | page |",
             "|---|---|---|---|---|---|---|"]
    for e in experiments:
        metric, digits = e["metric"], e.get("digits", 2)
        before = next(s for s in e["stages"] if s["label"] == e["before"])
        after = next(s for s in e["stages"] if s["label"] == e["after"])
        lines.append(f"| {e['title']} | {e['metric_label']} ({e['n']} {e['unit']}) | "
                     f"{_fmt(before[metric], digits)} ({e['before']}) | **{_fmt(after[metric], digits)}** "
                     f"({e['after']}) | {e['target']} | {e['minutes'] if isinstance(e['minutes'], str) else str(e['minutes']) + ' min'} | [{e['name']}]({link}{e['page']}) |")
    return "\n".join(lines) + "\n"


def draw(e: dict[str, Any], out: Path) -> Path:
    """One experiment's curve: the held-out metric of every stage in training order, 95% bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = e["metric"]
    stages = [s for s in e["stages"] if metric in s]
    xs = list(range(len(stages)))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    lines = [(metric, e["metric_label"])] + [(m["key"], m["label"]) for m in e.get("also", [])]
    for k, (key, label) in enumerate(lines):
        pts = [(x, s[key]) for x, s in zip(xs, stages, strict=True) if key in s]
        shift = 0.06 * k  # side by side, so that the bars do not hide each other
        ys = [v[0] for _, v in pts]
        err = [[v[0] - v[1] for _, v in pts], [v[2] - v[0] for _, v in pts]]
        ax.errorbar([x + shift for x, _ in pts], ys, yerr=err, marker="o", capsize=4, label=label,
                    linestyle="-" if e.get("connect", True) else "none")
    if len(lines) > 1:
        ax.legend(fontsize=8)
    if e.get("zero_line"):
        ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(xs, [s["label"] for s in stages], rotation=12, fontsize=8)
    ax.set_ylabel(e.get("y_label", e["metric_label"]), fontsize=9)
    ax.set_title(f"{e['title']} ({e['n']} held-out {e['unit']}, 95% intervals)", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def draw_splits(e: dict[str, Any], out: Path) -> Path:
    """Deal or No Deal: the deals of each stage by how they split the points (lower side, higher
    side), from the experiment's `splits` entry (stage label -> {"low-high": deals}), as grouped
    bars: a capitulation is a split (0, x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits: dict[str, dict[str, int]] = e["splits"]
    keys = sorted({k for hist in splits.values() for k in hist}, key=lambda k: tuple(int(x) for x in k.split("-")))
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(keys) + 2), 3.6))
    width = 0.8 / max(1, len(splits))
    for i, (label, hist) in enumerate(splits.items()):
        ax.bar([x + i * width for x in range(len(keys))], [hist.get(k, 0) for k in keys], width, label=label)
    ax.set_xticks([x + width * (len(splits) - 1) / 2 for x in range(len(keys))],
                  [f"({k.replace('-', ', ')})" for k in keys], rotation=45, fontsize=7)
    ax.set_ylabel("deals", fontsize=9)
    ax.set_xlabel("points of the lower side, of the higher side", fontsize=9)
    ax.set_title(f"{e['title']}: how deals split the points (held out)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def with_table(text: str, new: str, path: Path) -> str:
    """`text` with the table between the markers replaced by `new`."""
    if START not in text or END not in text:
        raise SystemExit(f"{path}: no {START.strip()} ... {END} markers")
    head, rest = text.split(START, 1)
    return head + START + new + rest[rest.index(END):]


def stale_tables(experiments: list[dict[str, Any]]) -> list[Path]:
    """The files whose results table is not the one results.yaml gives."""
    return [path for path, link in TABLES.items()
            if with_table(path.read_text(encoding="utf-8"), table(experiments, link), path)
            != path.read_text(encoding="utf-8")]


def main(
    results: Path = typer.Option(RESULTS, "--results", help="The results file."),
    output: Path = typer.Option(IMAGES, "--output", "-o", help="Folder for <experiment>.png."),
    check: bool = typer.Option(False, "--check", help="Only check the tables (exit 1 if one is stale)."),
) -> None:
    """Redraw docs/img/learning/*.png and rewrite the results tables of the README and
    docs/learning/index.md from docs/learning/results.yaml."""
    experiments = load(results)
    if check:
        stale = stale_tables(experiments)
        for path in stale:
            typer.echo(f"{path}: the results table differs from {results}; run python scripts/docs_figures.py")
        raise typer.Exit(1 if stale else 0)
    for e in experiments:
        typer.echo(f"wrote {draw(e, output / (e['name'] + '.png'))}")
        if e.get("splits"):
            typer.echo(f"wrote {draw_splits(e, output / (e['name'] + '-splits.png'))}")
    for path, link in TABLES.items():
        text = path.read_text(encoding="utf-8")
        path.write_text(with_table(text, table(experiments, link), path), encoding="utf-8")
        typer.echo(f"wrote the results table of {path}")


if __name__ == "__main__":
    typer.run(main)
