"""A closed model's freed host memory goes back to the operating system (glibc keeps freed
mid-sized tensors otherwise: a learning-suite stage carried a 10 GB evaluation cache into training)."""

from __future__ import annotations

import os
import platform
import sys

import pytest
import torch

from sparring.models import host_memory
from sparring.models.hf import HFModel

MB = 1 << 20


def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_freed_tensors_of_a_cache_are_returned():
    torch.zeros(64 * MB // 4).sum()  # a large block freed first raises glibc's mmap threshold, as a model load does
    before = resident()
    cache = [torch.ones(64 * 1024) for _ in range(1200)]  # 256 KB each, like prefix-cache states: ~300 MB
    assert resident() - before > 250 * MB
    del cache
    assert host_memory.release_freed_memory() is True
    assert resident() - before < 100 * MB


def test_closing_a_model_releases_its_memory(tiny_objects, monkeypatch):
    calls: list[bool] = []
    monkeypatch.setattr(host_memory, "release_freed_memory", lambda: calls.append(True) or True)
    model = HFModel.from_objects(*tiny_objects, prefix_cache_mb=16)
    model.close()
    model.close()  # a second close does nothing
    assert calls == [True]
