"""Bradley–Terry ratings on the Elo scale with bootstrap intervals (Chatbot-Arena style).

Online Elo depends on game order; the Bradley–Terry MLE does not, and a bootstrap over episodes
gives honest intervals. P(i beats j) = 1 / (1 + base^((R_j - R_i) / scale)); ratings are
centred so that the mean (or `anchor_player`) sits at `anchor`. Ties count as half a win each.
A small L2 penalty (in natural-log strength units) keeps ratings finite when a player won or lost
every game; set `l2=0` for the plain MLE.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse


@dataclass(frozen=True)
class Comparison:
    """One pairwise result: `score` is a's result in [0, 1] (1 win, 0.5 tie, 0 loss).

    `group` is the bootstrap unit (usually the episode id; several comparisons of one episode are
    resampled together)."""

    a: str
    b: str
    score: float
    group: str = ""
    weight: float = 1.0


@dataclass
class RatingTable:
    ratings: dict[str, float]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    games: dict[str, int] = field(default_factory=dict)
    connected: bool = True
    n_bootstrap: int = 0
    scale: float = 400.0
    anchor: float = 1000.0

    def ordered(self) -> list[str]:
        return sorted(self.ratings, key=lambda p: -self.ratings[p])

    def to_dict(self) -> dict:
        return {
            "method": "bradley_terry_mle", "scale": self.scale, "anchor": self.anchor,
            "n_bootstrap": self.n_bootstrap, "connected": self.connected,
            "players": {p: {"rating": self.ratings[p],
                            "ci_low": self.ci.get(p, (math.nan, math.nan))[0],
                            "ci_high": self.ci.get(p, (math.nan, math.nan))[1],
                            "games": self.games.get(p, 0)} for p in self.ordered()},
        }


def _win_matrix(n: int, ia: np.ndarray, ib: np.ndarray, wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
    w = np.zeros((n, n))
    np.add.at(w, (ia, ib), wa)
    np.add.at(w, (ib, ia), wb)
    return w


def _fit_theta(w: np.ndarray, l2: float, max_iter: int = 200, tol: float = 1e-10) -> np.ndarray:
    """Natural-log strengths maximising sum_ij W_ij log sigmoid(t_i - t_j) - l2/2 |t|^2.

    `w` is (B, n, n): B independent fits (bootstrap replicates) solved together by damped Newton,
    which is exact and far faster than B separate optimiser runs. Results are mean-centred.
    """
    b, n, _ = w.shape
    t = np.zeros((b, n))
    games = w + w.transpose(0, 2, 1)
    eye = np.eye(n)
    gauge = np.ones((n, n)) / n  # fixes the shift freedom; the gradient is orthogonal to it
    for _ in range(max_iter):
        s = 1.0 / (1.0 + np.exp(-(t[:, :, None] - t[:, None, :])))
        g = -(w - games * s).sum(axis=2) + l2 * t
        if np.abs(g).max() < tol:
            break
        h = games * s * (1.0 - s)
        hess = -h + eye * h.sum(axis=2)[:, :, None] + (l2 + 1e-12) * eye + gauge
        step = np.linalg.solve(hess, g[:, :, None])[:, :, 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        t = t - step * np.minimum(1.0, 2.0 / np.maximum(big, 1e-300))  # damped: at most 2 per iter
    return t - t.mean(axis=1, keepdims=True)


def _connected(n: int, w: np.ndarray) -> bool:
    if n <= 1:
        return True
    adj = (w + w.T) > 0
    seen, stack = {0}, [0]
    while stack:
        i = stack.pop()
        for j in np.nonzero(adj[i])[0]:
            if int(j) not in seen:
                seen.add(int(j))
                stack.append(int(j))
    return len(seen) == n


def bradley_terry(comparisons: Iterable[Comparison], *, players: Sequence[str] | None = None,
                  scale: float = 400.0, base: float = 10.0, anchor: float = 1000.0,
                  anchor_player: str | None = None, l2: float = 1e-2, n_bootstrap: int = 1000,
                  seed: int = 0, level: float = 0.95) -> RatingTable:
    """Fit ratings and (if `n_bootstrap` > 0) percentile bootstrap intervals over comparison groups.

    Self-comparisons (a == b) carry no information and are ignored. Players listed in `players`
    without any comparison appear with rating nan and 0 games.
    """
    comps = [c for c in comparisons if c.a != c.b and c.weight > 0]
    names = sorted({c.a for c in comps} | {c.b for c in comps})
    listed = list(players or [])
    games = {p: 0 for p in listed}
    for c in comps:
        games[c.a] = games.get(c.a, 0) + 1
        games[c.b] = games.get(c.b, 0) + 1
    table = RatingTable(ratings={p: math.nan for p in listed}, games=games, scale=scale, anchor=anchor,
                        n_bootstrap=0)
    if not names:
        return table
    idx = {p: i for i, p in enumerate(names)}
    ia = np.array([idx[c.a] for c in comps])
    ib = np.array([idx[c.b] for c in comps])
    score = np.clip(np.array([c.score for c in comps], dtype=float), 0.0, 1.0)
    weight = np.array([c.weight for c in comps], dtype=float)
    wa, wb = weight * score, weight * (1.0 - score)
    n = len(names)
    w = _win_matrix(n, ia, ib, wa, wb)
    table.connected = _connected(n, w)
    factor = scale / math.log(base)
    ref = idx.get(anchor_player) if anchor_player is not None else None

    def to_ratings(theta: np.ndarray) -> np.ndarray:
        centre = theta[ref] if ref is not None else theta.mean()
        return anchor + factor * (theta - centre)

    theta = _fit_theta(w[None], l2)[0]
    point = to_ratings(theta)
    table.ratings.update({p: float(point[i]) for p, i in idx.items()})

    if n_bootstrap > 0:
        group_names = sorted({c.group for c in comps})
        gidx = {g: k for k, g in enumerate(group_names)}
        gi = np.array([gidx[c.group] for c in comps])
        rng = np.random.default_rng(seed)
        n_groups = len(group_names)
        # Each group adds its wins to cells of W: one sparse (groups, n*n) map; a block of
        # replicates is then one sparse-dense product (blocks bound memory on large runs).
        cells = sparse.csr_matrix((np.concatenate([wa, wb]), (np.concatenate([gi, gi]),
                                                              np.concatenate([ia * n + ib, ib * n + ia]))),
                                  shape=(n_groups, n * n)).T.tocsr()
        boots = np.empty((n_bootstrap, n))
        block = max(1, min(n_bootstrap, 2_000_000 // max(n_groups, n * n)))
        for start in range(0, n_bootstrap, block):
            b = min(block, n_bootstrap - start)
            draws = rng.integers(0, n_groups, size=(b, n_groups), dtype=np.int64)
            draws += np.arange(b)[:, None] * n_groups
            counts = np.bincount(draws.ravel(), minlength=b * n_groups).reshape(b, n_groups)
            boot_w = np.asarray(cells @ counts.T.astype(float)).T.reshape(b, n, n)
            boots[start:start + b] = [to_ratings(th) for th in _fit_theta(boot_w, l2)]
        alpha = (1.0 - level) / 2.0
        lo, hi = np.quantile(boots, [alpha, 1.0 - alpha], axis=0)
        table.ci = {p: (float(lo[i]), float(hi[i])) for p, i in idx.items()}
        table.n_bootstrap = n_bootstrap
    return table


def mean_reward_comparisons(rewards: dict[str, float], seat_agents: dict[str, str],
                            group: str) -> list[Comparison]:
    """Pairwise comparisons from one episode's rewards (higher reward wins; equal = tie)."""
    out: list[Comparison] = []
    players = sorted(p for p in rewards if p in seat_agents)
    for i, p in enumerate(players):
        for q in players[i + 1:]:
            rp, rq = rewards[p], rewards[q]
            s = 1.0 if rp > rq else 0.0 if rp < rq else 0.5
            out.append(Comparison(seat_agents[p], seat_agents[q], s, group))
    return out
