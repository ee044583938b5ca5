"""Have the C allocator give freed memory back to the system (Linux with glibc), so that a
training pass on a CPU holds what it needs and not what the allocator kept.

Why: PyTorch's CPU tensors come from glibc's malloc. glibc serves a block above its mmap
threshold with a mapping of its own, unmapped on free, and raises the threshold to the largest
such block freed (up to 32 MiB on 64-bit systems). After the first pass most activations are
below it and come from the heap, where a freed block stays resident for reuse and fragmentation
keeps the high-water mark up. Measured (2026-12-05, `benchmarks/bench_pass_memory.py`:
SmolLM2-135M with sparring's default LoRA, activation checkpointing, one forward and backward of
8 rows of ~1,075 tokens): the resident set rose 7.70 GiB with glibc's defaults and 1.51 GiB with
the thresholds fixed at 1 MiB. Fixing either threshold
turns the adjustment off (mallopt(3): `M_MMAP_THRESHOLD`, `M_TRIM_THRESHOLD`; the same as setting
`MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` before the process starts).

The price is time: every large block is a fresh mapping whose pages fault in again (TRL's LoRA
SFT steps on TicTacToe games took 1.7x as long; sparring's RL training passes about the same),
so it is off unless asked for (`return_freed_memory` in an online config) — for a run that would
otherwise not fit in memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from typing import Any

THRESHOLD = 1 << 20  # bytes: blocks from 1 MiB on get a mapping of their own, returned on free
M_TRIM_THRESHOLD = -1  # <malloc.h>
M_MMAP_THRESHOLD = -3
ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")  # glibc reads them at start
_returned = False  # this process fixed the thresholds (return_freed_memory succeeded)


def return_freed_memory(threshold: int = THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds at `threshold` bytes for this process (all threads,
    from now on). False where the C library is not glibc (macOS, musl, Windows): nothing changed."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    # mallopt returns 1 on success, 0 on error
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, threshold))
    global _returned
    _returned = _returned or done
    return done


def keeps_freed_memory(device: Any) -> bool:
    """Whether memory a training pass frees on `device` stays with the process: a CPU whose C
    allocator was not told to give it back (`return_freed_memory` here, or glibc's thresholds set
    in the environment). Then recomputing activations (checkpointing) frees and reallocates them
    at every layer without the resident set falling, and it peaks about as high as a pass that kept
    them (8 checkpointed TicTacToe games in one forward: 8.0 GiB against 7.6 without checkpointing,
    `benchmarks/bench_step_cost.py`). A GPU's caching allocator reuses what it freed: False."""
    import torch

    if torch.device(device).type != "cpu":
        return False
    return not (_returned or all(os.environ.get(k) for k in ENVIRONMENT))
