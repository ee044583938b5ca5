"""A token budget per training forward derived from memory (`micro_batch_tokens: auto`, issue #59).

Why: a training pass holds activations for every position it computes (the shared prefix once,
each row's suffix padded to the longest), and the memory this takes per position depends on the
model (layers, width, vocabulary: the logits of a 49k vocabulary alone are ~200 KB a position in
fp32), the attention kernel and the device. A fixed `micro_batch_size` is right for one game and
kills another: eight TicTacToe games of ~1.5k tokens in one forward took more than 24 GB. So the
trainer measures instead of guessing: one forward of `PROBE` positions of the policy as it will
train (its adapter, dropout and activation checkpointing as configured), the bytes autograd keeps
for the backward per position, and the budget is `SHARE` of the memory available now divided by
that. A checkpointed pass keeps only each layer's input, but on a CPU whose allocator keeps what a
pass frees (`host_memory.keeps_freed_memory`) the recomputed layers' activations pile up in the
resident set as if kept: there the probe prices the pass without checkpointing. Attention through
PyTorch's SDPA (transformers' default where a model supports it) keeps no T x T matrices, so the
cost per position is flat in the length and a short probe prices long batches. The probe builds logits at every position, the trainer's passes only where loss is: the
budget errs on the safe side (SmolLM2-135M with LoRA: 2.17 MiB a position, ~0.38 of it logits).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

PROBE = 256   # positions of the probe's forward (no backward runs)
SHARE = 0.5   # of the memory available when the run starts


@dataclass(frozen=True)
class Budget:
    positions: int | None      # the most positions one forward/backward computes (None: no figure)
    bytes_per_position: float | None
    available_bytes: int | None
    reason: str = ""           # why there is no budget
    priced_as_kept: bool = False  # checkpointed, priced as a pass that keeps its activations

    def describe(self) -> str:
        if self.positions is None or self.bytes_per_position is None or self.available_bytes is None:
            return f"no token budget per forward ({self.reason}): micro_batch_size alone"
        kept = (", priced without activation checkpointing: this CPU's allocator keeps what the recomputed layers "
                "free (return_freed_memory gives it back)") if self.priced_as_kept else ""
        return (f"token budget per forward: {self.positions} positions ({self.bytes_per_position / 2**20:.2f} MiB a "
                f"position measured, {SHARE:.0%} of {self.available_bytes / 2**30:.1f} GiB available{kept})")


def available_bytes(device: Any) -> int:
    """Memory free for the run now: the GPU's free memory, or the host's available memory."""
    import torch

    if torch.device(device).type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    import psutil

    return int(psutil.virtual_memory().available)


def bytes_per_position(model: Any, device: Any, positions: int = PROBE) -> float:
    """What one forward of `model` in training mode keeps for its backward, per position: the
    storages autograd saves (`torch.autograd.graph.saved_tensors_hooks`, PyTorch's public hook),
    the model's own weights left out, plus the fp32 logits and their log-softmax the loss builds.
    Exact and the same on every device (a process's resident set would count memory the allocator
    keeps after freeing it). No backward runs; the model is left as it was."""
    import torch

    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    vocab = int(model.get_input_embeddings().weight.shape[0])
    ids = torch.randint(0, vocab, (1, positions), generator=torch.Generator().manual_seed(0)).to(device)
    was_training = model.training
    model.train()
    try:
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            logits = model(input_ids=ids).logits
            torch.log_softmax(logits.float(), dim=-1)[..., 0].sum()
        del logits
    finally:
        model.train(was_training)
    return sum(saved.values()) / positions


def checkpointing(model: Any) -> bool:
    """Whether the model recomputes its layers in the backward (transformers' flag, by the name the
    installed version gives it, as `policy.prepare_training` enables it)."""
    name = "is_activation_checkpointing" if hasattr(model, "activation_checkpointing_enable") \
        else "is_gradient_checkpointing"
    return bool(getattr(model, name, False))


@contextmanager
def without_checkpointing(model: Any) -> Iterator[None]:
    """The model's checkpointing off for the block and on again after it, as it was enabled."""
    from sparring.train.policy import prepare_training

    if hasattr(model, "activation_checkpointing_disable"):
        model.activation_checkpointing_disable()
    else:
        model.gradient_checkpointing_disable()
    try:
        yield
    finally:
        prepare_training(model, no_dropout=False, checkpointing=True)


def token_budget(model: Any, device: Any, share: float = SHARE, keeps_freed: bool = False) -> Budget:
    """The budget for `model` as it will train. `keeps_freed`: the device's allocator keeps what a
    pass frees (a CPU, `host_memory.keeps_freed_memory`), so a checkpointed model is priced as one
    that keeps its activations."""
    as_kept = keeps_freed and checkpointing(model)
    if as_kept:
        with without_checkpointing(model):
            per = bytes_per_position(model, device)
    else:
        per = bytes_per_position(model, device)
    if per <= 0:
        return Budget(None, None, None, "the probe saved nothing for a backward: no trainable weights?")
    free = available_bytes(device)
    return Budget(max(PROBE, int(share * free / per)), per, free, priced_as_kept=as_kept)


def positions_per_forward(setting: int | str | None, model: Any, device: Any, console: Any = None,
                          keeps_freed: bool = False) -> int | None:
    """`micro_batch_tokens` as the trainer uses it: a number as given, `auto` measured (and said)."""
    if setting != "auto":
        return setting if isinstance(setting, int) else None
    budget = token_budget(model, device, keeps_freed=keeps_freed)
    if console is not None:
        console.print(budget.describe())
    return budget.positions
