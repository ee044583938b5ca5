"""Where a training step spends the machine: the step-cost breakdown every online trainer prints
per step and in its summary, and `benchmarks/bench_step_cost.py` compares across trainers (TRL's
SFT, DPO and GRPO steps measured by `ForwardMeter`, sparring's own trainer counting its passes).

A step's wall time splits into
- `rollout`: playing the games (the learner generating, partners, the game itself);
- `scoring`: passes without gradients over the step's sequences (old-policy log-probabilities,
  the reference model's for a KL term, PPO's values);
- `training`: forward + backward passes and optimizer updates;
- `other`: the rest (building sequences, advantages, logging).
Memory: `peak_memory_mb`, the most held during a scoring or training pass (`peak_memory.py`: CUDA's
allocated bytes on a GPU, the process's resident set on a Linux CPU), and `peak_added_mb`, the most a
pass added on top of what was held when it started (on a CPU the process's peak counts the model,
the rollout's caches and what the allocator kept: the added figure is the pass's own activations,
gradients and optimizer state, less whatever it reused of the memory the allocator kept).
Tokens: `forward_tokens` = tokens fed through the model by scoring and training passes (each pass
counted, padding excluded), `padded_tokens` = the same with padding, `trained_tokens` = tokens
carrying loss. Two ratios make steps of different sizes comparable: model tokens per trained
token, and training tokens/s ÷ the machine's training roof (fp32 matmul FLOP/s ÷ 6 × parameters,
`sparring.learning.speed`), probed in the same run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

PARTS = ("rollout", "scoring", "training", "other")


@dataclass
class StepCost:
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    forward_tokens: int = 0      # through scoring + training forwards, padding excluded
    padded_tokens: int = 0       # the same, padding included
    training_tokens: int = 0     # through training forwards (each epoch counted), padding excluded
    trained_tokens: int = 0      # carrying loss
    passes: dict[str, int] = field(default_factory=lambda: {"scoring": 0, "training": 0})
    peak_memory_mb: float | None = None  # during scoring and training passes (`peak_memory.py`)
    peak_added_mb: float | None = None   # the most a pass added above what was held at its start
    _started: float = field(default_factory=time.perf_counter, repr=False)

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Time a part of the step (`rollout`, `scoring`, `training`); the passes' peak memory."""
        from sparring.train import peak_memory

        passes = name in ("scoring", "training") and peak_memory.reset()
        held = peak_memory.in_use_mb() if passes else None
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t
            if passes:
                self.note_peak(peak_memory.peak_mb(), held)

    def note_peak(self, mb: float | None, held: float | None = None, added: float | None = None) -> None:
        """A pass's peak `mb`; with `held` (what was in use when it started) what it added, or that
        figure directly as `added` (adding up steps)."""
        if mb is not None:
            self.peak_memory_mb = max(mb, self.peak_memory_mb or 0.0)
            if held is not None:
                added = mb - held
        if added is not None:
            self.peak_added_mb = max(added, self.peak_added_mb or 0.0)

    def count(self, kind: str, tokens: int, padded: int) -> None:
        """One pass (`scoring` or `training`) over `tokens` real tokens in a `padded`-token batch."""
        self.passes[kind] = self.passes.get(kind, 0) + 1
        self.forward_tokens += tokens
        self.padded_tokens += padded
        if kind == "training":
            self.training_tokens += tokens

    def close(self) -> StepCost:
        """Put the unaccounted wall time since the step started into `other`."""
        total = time.perf_counter() - self._started
        self.seconds["other"] = max(0.0, total - sum(v for k, v in self.seconds.items() if k != "other"))
        return self

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())

    def summary(self, roof_tokens_per_s: float | None = None) -> dict[str, Any]:
        """The numbers a step log carries (`cost/...`)."""
        out: dict[str, Any] = {f"cost/{k}_s": round(v, 3) for k, v in self.seconds.items()}
        out.update({"cost/total_s": round(self.total_s, 3), "cost/forward_tokens": self.forward_tokens,
                    "cost/padded_tokens": self.padded_tokens, "cost/trained_tokens": self.trained_tokens,
                    "cost/training_tokens": self.training_tokens,
                    "cost/scoring_passes": self.passes.get("scoring", 0),
                    "cost/training_passes": self.passes.get("training", 0)})
        if self.peak_memory_mb is not None:
            out["cost/peak_memory_mb"] = round(self.peak_memory_mb, 1)
        if self.peak_added_mb is not None:
            out["cost/peak_added_mb"] = round(self.peak_added_mb, 1)
        if self.trained_tokens:
            out["cost/model_tokens_per_trained_token"] = round(self.forward_tokens / self.trained_tokens, 3)
        train_s = self.seconds.get("training", 0.0)
        if train_s > 0 and self.training_tokens:
            rate = self.training_tokens / train_s
            out["cost/training_tokens_per_s"] = round(rate, 2)
            if roof_tokens_per_s:
                out["cost/training_roof_ratio"] = round(rate / roof_tokens_per_s, 4)
        return out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_started", None)
        return data


def total(costs: list[StepCost]) -> StepCost:
    """Several steps' costs added up (a run's summary)."""
    out = StepCost()
    for c in costs:
        for k, v in c.seconds.items():
            out.seconds[k] = out.seconds.get(k, 0.0) + v
        for k, n in c.passes.items():
            out.passes[k] = out.passes.get(k, 0) + n
        out.forward_tokens += c.forward_tokens
        out.padded_tokens += c.padded_tokens
        out.training_tokens += c.training_tokens
        out.trained_tokens += c.trained_tokens
        out.note_peak(c.peak_memory_mb, added=c.peak_added_mb)
    return out


def line(summary: dict[str, Any]) -> str:
    """One readable line of a step's cost (the per-step log and the run's summary)."""
    s = summary
    parts = ", ".join(f"{k} {s.get(f'cost/{k}_s', 0.0):.1f}s" for k in PARTS)
    text = f"cost: {s.get('cost/total_s', 0.0):.1f}s ({parts}); {s.get('cost/forward_tokens', 0)} model tokens"
    if "cost/model_tokens_per_trained_token" in s:
        text += f" for {s['cost/trained_tokens']} trained ({s['cost/model_tokens_per_trained_token']:.1f} per trained)"
    if "cost/training_roof_ratio" in s:
        text += f"; training {s['cost/training_tokens_per_s']:.0f} tok/s = {s['cost/training_roof_ratio']:.2f} of the roof"
    if "cost/peak_memory_mb" in s:
        text += f"; peak memory {s['cost/peak_memory_mb'] / 1024:.2f} GiB"
        if "cost/peak_added_mb" in s:
            text += f" ({s['cost/peak_added_mb'] / 1024:.2f} added by a pass)"
    return text


def matmul_flops(size: int = 1024, repeats: int = 5) -> float:
    """Best-of-`repeats` fp32 FLOP/s of one `size`² matmul on this machine (all torch threads)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best


def roof_tokens_per_s(model: Any, flops: float | None = None) -> float:
    """This machine's training roof for `model` (a loaded module): matmul FLOP/s ÷ (6 × parameters),
    the FLOP/s probed now unless given."""
    params = sum(p.numel() for p in model.parameters())
    return (flops or matmul_flops()) / (6 * params) if params else 0.0


class ForwardMeter:
    """Counts a model's forward passes into the current `StepCost`: without gradients a scoring
    pass (timed here), with gradients a training pass (its time is the step's, backward included).
    For trainers whose passes happen inside a library (TRL): hooks on the model's own forward, a
    public PyTorch API. Generation during a rollout is not a pass of the step: `paused()`.
    Recomputed activations (gradient checkpointing) run inside the backward and are not counted
    as passes; their time is in `training`."""

    def __init__(self, model: Any = None):
        self.cost = StepCost()
        self.pause_depth = 0
        self._peak = False  # whether the step's peak memory was reset at its start
        self._held: float | None = None  # what was in use when the step started
        self._t: list[float] = []
        self._handles: list[Any] = []
        if model is not None:
            self.attach(model)

    def attach(self, model: Any) -> ForwardMeter:
        """Count the passes of `model`, the module the trainer calls (TRL's `trainer.model`, which
        may wrap the one it was given); no longer those of a model attached before."""
        self.close()
        self._handles = [model.register_forward_pre_hook(self._pre, with_kwargs=True),
                         model.register_forward_hook(self._post, with_kwargs=True)]
        return self

    @contextmanager
    def paused(self) -> Iterator[None]:
        self.pause_depth += 1
        try:
            yield
        finally:
            self.pause_depth -= 1

    def _pre(self, module: Any, args: tuple, kwargs: dict) -> None:
        self._t.append(time.perf_counter())

    def _post(self, module: Any, args: tuple, kwargs: dict, output: Any) -> None:
        import torch

        started = self._t.pop() if self._t else time.perf_counter()
        if self.pause_depth:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        if ids is None or not hasattr(ids, "numel"):
            return
        padded = int(ids.numel())
        tokens = int(mask.sum()) if mask is not None and hasattr(mask, "sum") else padded
        kind = "training" if torch.is_grad_enabled() else "scoring"
        self.cost.count(kind, tokens, padded)
        if kind == "scoring":
            self.cost.seconds["scoring"] += time.perf_counter() - started

    def start_step(self) -> None:
        from sparring.train import peak_memory

        self.cost = StepCost()
        self._peak = peak_memory.reset()  # the step's peak: TRL's passes (and its rollout) run inside it
        self._held = peak_memory.in_use_mb() if self._peak else None

    def end_step(self, trained_tokens: int = 0, rollout_s: float = 0.0) -> StepCost:
        """Close the step: training = its wall time less rollout and scoring (backward and the
        optimizer included)."""
        c = self.cost
        c.trained_tokens = trained_tokens
        c.seconds["rollout"] = rollout_s
        wall = time.perf_counter() - c._started
        c.seconds["training"] = max(0.0, wall - rollout_s - c.seconds["scoring"])
        c.seconds["other"] = 0.0
        if self._peak:
            from sparring.train import peak_memory

            c.note_peak(peak_memory.peak_mb(), self._held)
        return c

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


def step_cost_callback(meter: ForwardMeter, trained: Any = None, rollout: Any = None) -> Any:
    """A transformers `TrainerCallback` that opens and closes `meter`'s step around every optimizer
    step; `trained()` / `rollout()` give the step's trained tokens and rollout seconds when the
    trainer knows them. The closed costs are in `.costs`."""
    from transformers import TrainerCallback

    class StepCostCallback(TrainerCallback):
        costs: list[StepCost] = []

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if model is not None:
                meter.attach(model)  # the model the trainer calls, whatever wrapped it

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            meter.close()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            meter.start_step()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.costs.append(meter.end_step(int(trained() if trained else 0), float(rollout() if rollout else 0.0)))

    callback = StepCostCallback()
    callback.costs = []
    return callback
