"""Report figures as PNG bytes, drawn with matplotlib's object API on the Agg canvas.

No pyplot: figures are never registered globally, so plotting selects no backend at import,
leaks no figures, and is safe from worker threads. Every function takes plain data (what
stats.json holds) and returns None when there is nothing to draw.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_BLUE, _ORANGE, _GREY = "#3b6ea8", "#d9822b", "#888888"


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def to_png(fig: Figure, dpi: int = 110) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def ratings_plot(players: dict[str, dict[str, Any]], title: str = "Bradley–Terry ratings (95% CI)",
                 anchor: float = 1000.0) -> bytes | None:
    """Horizontal points with bootstrap intervals, best at the top."""
    rows = [(p, v) for p, v in players.items() if v.get("games") and not math.isnan(_nan(v.get("rating")))]
    if not rows:
        return None
    rows.sort(key=lambda pv: pv[1]["rating"])
    fig = Figure(figsize=(6.4, 0.45 * len(rows) + 1.2))
    ax = fig.add_subplot()
    ys = range(len(rows))
    r = [v["rating"] for _, v in rows]
    lo = [v["rating"] - _nan(v.get("ci_low")) if not math.isnan(_nan(v.get("ci_low"))) else 0 for _, v in rows]
    hi = [_nan(v.get("ci_high")) - v["rating"] if not math.isnan(_nan(v.get("ci_high"))) else 0 for _, v in rows]
    ax.errorbar(r, list(ys), xerr=[lo, hi], fmt="o", color=_BLUE, ecolor=_GREY, capsize=4)
    ax.axvline(anchor, color=_GREY, lw=0.8, ls="--")
    ax.set_yticks(list(ys), [p for p, _ in rows])
    ax.set_xlabel("rating (Elo scale)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return to_png(fig)


def heatmap(agents: Sequence[str], values: Sequence[Sequence[float | None]],
            counts: Sequence[Sequence[int]] | None = None, title: str = "Win rate (row vs column)",
            vmin: float = 0.0, vmax: float = 1.0) -> bytes | None:
    """Annotated matrix; empty cells (never met) are left blank."""
    if not agents or all(v is None for row in values for v in row):
        return None
    n = len(agents)
    grid = [[math.nan if v is None else float(v) for v in row] for row in values]
    fig = Figure(figsize=(1.1 * n + 2.4, 0.9 * n + 1.6))
    ax = fig.add_subplot()
    im = ax.imshow(grid, cmap="RdYlGn", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n), list(agents), rotation=30, ha="right")
    ax.set_yticks(range(n), list(agents))
    for i in range(n):
        for j in range(n):
            if not math.isnan(grid[i][j]):
                label = f"{grid[i][j]:.2f}" + (f"\nn={counts[i][j]}" if counts else "")
                ax.text(j, i, label, ha="center", va="center", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title(title)
    return to_png(fig)


def reliability_plot(curves: dict[str, dict[str, Any]], title: str = "Judge calibration") -> bytes | None:
    """Reliability diagram: observed accuracy against stated confidence, one line per curve,
    with bin counts as marker sizes and the ECE in the legend."""
    curves = {k: c for k, c in curves.items() if c.get("n")}
    if not curves:
        return None
    fig = Figure(figsize=(5.2, 4.6))
    ax = fig.add_subplot()
    lo = min(b["lo"] for c in curves.values() for b in c["bins"])
    ax.plot([lo, 1], [lo, 1], color=_GREY, ls="--", lw=0.8, label="perfect calibration")
    for name, c in curves.items():
        pts = [(b["confidence"], b["accuracy"], b["count"]) for b in c["bins"] if b["count"]]
        xs, ys, ns = zip(*pts, strict=True)
        total = sum(ns)
        line = ax.plot(xs, ys, marker="o", label=f"{name} (ECE {c['ece']:.3f}, n={c['n']})")[0]
        ax.scatter(xs, ys, s=[20 + 300 * k / total for k in ns], color=line.get_color(), alpha=0.35)
    ax.set_xlim(lo - 0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("judge confidence")
    ax.set_ylabel("fraction correct")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return to_png(fig)


def bar_ci(labels: Sequence[str], values: Sequence[float | None],
           cis: Sequence[Sequence[float | None]] | None = None, *, title: str, ylabel: str,
           ref: float | None = None, ylim: tuple[float, float] | None = None) -> bytes | None:
    """Bars with (optional) interval whiskers and an optional reference line (e.g. chance)."""
    whiskers = cis or [(math.nan, math.nan)] * len(labels)
    data = [(lab, _nan(v), ci) for lab, v, ci in zip(labels, values, whiskers, strict=False)]
    data = [d for d in data if not math.isnan(d[1])]
    if not data:
        return None
    fig = Figure(figsize=(max(4.0, 0.9 * len(data) + 2.0), 3.6))
    ax = fig.add_subplot()
    xs = range(len(data))
    ax.bar(list(xs), [d[1] for d in data], color=_BLUE, alpha=0.85)
    for x, (_, v, ci) in zip(xs, data, strict=True):
        if ci and ci[0] is not None and ci[1] is not None and not math.isnan(_nan(ci[0])):
            ax.errorbar([x], [v], yerr=[[v - ci[0]], [ci[1] - v]], color="black", capsize=4)
    if ref is not None:
        ax.axhline(ref, color=_ORANGE, ls="--", lw=1)
    tilt = len(data) > 4 and not any("\n" in d[0] for d in data)
    ax.set_xticks(list(xs), [d[0] for d in data], rotation=20 if tilt else 0, ha="right" if tilt else "center")
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return to_png(fig)


def grouped_bars(groups: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str,
                 ylabel: str, ylim: tuple[float, float] | None = None) -> bytes | None:
    """Several named series side by side for each group (e.g. correct vs incorrect per metric)."""
    if not groups or all(math.isnan(_nan(v)) for vs in series.values() for v in vs):
        return None
    fig = Figure(figsize=(max(4.5, 1.3 * len(groups) + 2.0), 3.6))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(series))
    for k, (name, vals) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, [0.0 if math.isnan(_nan(v)) else _nan(v) for v in vals], width=width, label=name)
    ax.set_xticks(range(len(groups)), list(groups))
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return to_png(fig)


def panel_bars(groups: Sequence[str], panels: dict[str, Sequence[float | None]], *,
               title: str) -> bytes | None:
    """One small bar chart per named quantity (own y-axis each), all over the same groups."""
    panels = {k: v for k, v in panels.items() if any(not math.isnan(_nan(x)) for x in v)}
    if not groups or not panels:
        return None
    fig = Figure(figsize=(3.3 * len(panels) + 0.6, 3.4))
    for k, (name, vals) in enumerate(panels.items()):
        ax = fig.add_subplot(1, len(panels), k + 1)
        ax.bar(range(len(groups)), [0.0 if math.isnan(_nan(v)) else _nan(v) for v in vals],
               color=[_BLUE, _ORANGE, "#5a9e6f", "#a05195", "#888888", "#c9a227"][: len(groups)] * 2)
        ax.set_xticks(range(len(groups)), list(groups), rotation=30, ha="right")
        ax.set_title(name, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    return to_png(fig)


def scatter(points: Sequence[tuple[float, float]], *, title: str, xlabel: str, ylabel: str,
            frontier: Sequence[tuple[float, float]] | None = None) -> bytes | None:
    """Outcome scatter (e.g. raw negotiation utilities), optionally with a reference frontier."""
    if not points:
        return None
    fig = Figure(figsize=(4.8, 4.4))
    ax = fig.add_subplot()
    ax.scatter([p[0] for p in points], [p[1] for p in points], alpha=0.4, color=_BLUE)
    if frontier:
        f = sorted(frontier)
        ax.plot([p[0] for p in f], [p[1] for p in f], color=_ORANGE, lw=1, label="frontier")
        ax.legend(fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return to_png(fig)
