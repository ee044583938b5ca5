"""A key/value cache for `generate` that preallocates instead of concatenating every step.

Why: transformers' DynamicCache grows with `torch.cat`, copying every layer's whole cache at
each decoding step. With long game prompts and wide batches that copy dominates a CPU step
(about half of it for 32 rows of 600 tokens with SmolLM2), so batching stopped paying. Here each
layer keeps a buffer with room for the prompt plus `max_new_tokens`, writes new states in place
and hands attention a view of the filled part. Unlike StaticCache, attention never runs over
unfilled positions and generate() does not try to torch.compile it.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """A DynamicLayer whose tensors are views into a buffer sized for the whole generation."""

    is_initialized: bool  # DynamicLayer's (mypy does not read transformers: pyproject.toml)

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self._length = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.dtype, self.device = key_states.dtype, key_states.device
            b, h, _, d = key_states.shape
            self._keys = key_states.new_empty((b, h, self.capacity, d))
            self._values = value_states.new_empty((b, h, self.capacity, value_states.shape[-1]))
            self.is_initialized = True
        end = self._length + key_states.shape[-2]
        if end > self.capacity:  # more steps than planned (a caller's own loop): grow by doubling
            self.capacity = max(end, 2 * self.capacity)
            keys = self._keys.new_empty((*self._keys.shape[:2], self.capacity, self._keys.shape[3]))
            values = self._values.new_empty((*self._values.shape[:2], self.capacity, self._values.shape[3]))
            keys[:, :, : self._length] = self._keys[:, :, : self._length]
            values[:, :, : self._length] = self._values[:, :, : self._length]
            self._keys, self._values = keys, values
        self._keys[:, :, self._length : end] = key_states
        self._values[:, :, self._length : end] = value_states
        self._length = end
        self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
        return self.keys, self.values

    def adopt(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        self.dtype, self.device = keys.dtype, keys.device
        self._keys, self._values, self._length, self.capacity = keys, values, length, keys.shape[2]
        self.keys, self.values = keys[:, :, :length], values[:, :, :length]
        self.is_initialized = True

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove < 0:
            self._length = max(0, self._length + tokens_to_remove)
            self.keys, self.values = self._keys[:, :, : self._length], self._values[:, :, : self._length]

    def _remap_rows(self, fn) -> None:
        """Apply a row operation to the buffers (beam search, contrastive search) and refresh views."""
        if self.is_initialized:
            self._keys, self._values = fn(self._keys), fn(self._values)
            self.keys, self.values = self._keys[:, :, : self._length], self._values[:, :, : self._length]

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._remap_rows(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._remap_rows(lambda t: t[indices, ...])

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._remap_rows(lambda t: t.index_select(0, beam_idx.to(t.device)))


class PreallocatedCache(Cache):
    """One PreallocatedLayer per decoder layer, optionally starting from given states."""

    def __init__(self, num_layers: int, capacity: int):
        super().__init__(layers=[PreallocatedLayer(capacity) for _ in range(num_layers)])

    @classmethod
    def adopt(cls, buffers: list[tuple[torch.Tensor, torch.Tensor]], length: int) -> PreallocatedCache:
        """A cache over existing [batch, heads, capacity, dim] buffers whose first `length`
        positions are filled (no copy)."""
        self = cls(len(buffers), buffers[0][0].shape[2])
        for layer, (k, v) in zip(self.layers, buffers, strict=True):
            layer.adopt(k, v, length)  # type: ignore[union-attr]  # our own layers (PreallocLayer)
        return self


def cache_kwarg(model: Any) -> str:
    """The keyword a model's forward takes its key/value cache by: `cache` in current transformers
    5.x (`past_key_values` is deprecated there), `past_key_values` in the 5.0 releases our lower
    bound allows. Read from the forward's signature (a PEFT wrapper: its base model's)."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"
