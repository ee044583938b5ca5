"""A closed model's freed host memory goes back to the operating system (glibc keeps freed
mid-sized tensors otherwise: a learning-suite stage carried a 10 GB evaluation cache into training)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from sparring.models import host_memory
from sparring.models.hf import HFModel

FRESH_PROCESS = """
import os, torch
from sparring.models import host_memory
MB = 1 << 20
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
torch.zeros(64 * MB // 4).sum()  # a large block freed first raises glibc's mmap threshold, as a model load does
before = resident()
cache = [torch.ones(64 * 1024) for _ in range(1200)]  # 256 KB each, like prefix-cache states: ~300 MB
grown = resident() - before
del cache
released = host_memory.release_freed_memory()
print(grown // MB, released, (resident() - before) // MB)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_freed_tensors_of_a_cache_are_returned():
    # a fresh process: in the test session's own, earlier tests leave freed memory that glibc hands
    # back to the cache's tensors, so the cache need not grow the resident set at all
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    grown, released, left = done.stdout.split()
    assert int(grown) > 250
    assert released == "True"
    assert int(left) < 100


def test_closing_a_model_releases_its_memory(tiny_objects, monkeypatch):
    calls: list[bool] = []
    monkeypatch.setattr(host_memory, "release_freed_memory", lambda: calls.append(True) or True)
    model = HFModel.from_objects(*tiny_objects, prefix_cache_mb=16)
    model.close()
    model.close()  # a second close does nothing
    assert calls == [True]
