"""Peak memory of a step's scoring and training passes, for the step-cost breakdown (issue #59).

Why: a run that runs out of memory should be told apart from one that is merely slow before it
is killed, and a change to how games are trained (one sequence per game instead of one per call)
is judged on its peak as well as its time. On CUDA the peak is PyTorch's own count of allocated
bytes (`torch.cuda.max_memory_allocated`, reset per pass); on Linux CPUs it is the process's
resident-set high-water mark (`VmHWM` in /proc/self/status), which the kernel resets on writing
5 to /proc/self/clear_refs (documented in proc(5)): everything the process holds, the model
included. Elsewhere there is no figure (None). `in_use_mb` is what is held when a pass starts (CUDA's
allocated bytes, the resident set `VmRSS`), so that a pass's peak can also be told as what the pass
itself added on top of what the process already held (the model, a rollout's caches).
"""

from __future__ import annotations

from pathlib import Path

_CLEAR = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.is_initialized()


def kind() -> str | None:
    """What `peak_mb` measures here: 'cuda allocated', 'process RSS' or None."""
    if _cuda():
        return "cuda allocated"
    return "process RSS" if _STATUS.is_file() else None


def reset() -> bool:
    """Start a new peak from the memory in use now; False where that is not possible (not Linux,
    or not allowed): the high-water mark would then be the process's whole life's, so no figure."""
    if _cuda():
        import torch

        torch.cuda.reset_peak_memory_stats()
        return True
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def _status_mb(key: str) -> float | None:
    """A `/proc/self/status` memory line (`VmHWM`, `VmRSS`) in MiB; None where it cannot be read."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        return None
    return None


def peak_mb() -> float | None:
    """The peak since the last `reset`, in MiB (None where it cannot be read)."""
    if _cuda():
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    return _status_mb("VmHWM")


def in_use_mb() -> float | None:
    """What is held now, in MiB, on `peak_mb`'s measure (None where it cannot be read)."""
    if _cuda():
        import torch

        return torch.cuda.memory_allocated() / 2**20
    return _status_mb("VmRSS")
