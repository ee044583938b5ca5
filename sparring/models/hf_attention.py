"""Which scaled-dot-product attention kernels generation may use on CUDA.

PyTorch (2.11 on an H100, measured by `scripts/gpu_check.sh`) sends attention with a padding mask
to cuDNN first, and cuDNN builds an execution plan for every new shape. Generation meets a new
key/value length at every decoding step, so each step of a length not seen before in the process
pays for a plan: on an H100 the engine's first batch of 32 debate speeches (prompts of 322-375
tokens, 64 new tokens each) took 6.8 s, the same batch replayed 1.5 s. Outside cuDNN (flash,
memory-efficient, math kernels) nothing is planned per shape. `torch.nn.attention.sdpa_kernel` is
PyTorch's public switch for this; the `hf` backend's `cudnn_attention: true` keeps cuDNN allowed.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any


def generation_attention(device: Any, cudnn: bool = False) -> AbstractContextManager[Any]:
    """A context for one generate/score call: on CUDA without `cudnn`, attention may use every
    kernel but cuDNN's; elsewhere (CPU, or cuDNN allowed) nothing changes."""
    import torch

    if torch.device(device).type != "cuda" or cudnn:
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
