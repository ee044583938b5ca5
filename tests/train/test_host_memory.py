"""`return_freed_memory`: with glibc's thresholds fixed, blocks a pass frees go back to the system
instead of staying resident in the heap (the CPU training pass's peak, docs/benchmarks.md); each
case in a fresh process, since the setting is the process's own."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's allocator only")

PROBE = """
import sys
import torch
from sparring.train.host_memory import return_freed_memory
from sparring.train.peak_memory import in_use_mb
if sys.argv[1] == "return":
    assert return_freed_memory()
big = torch.ones(30 * 2**18)  # 30 MiB: glibc (defaults) raises its mmap threshold to it when it is freed
del big
blocks = [torch.ones(3 * 2**18) for _ in range(8)]  # 8 x 3 MiB, written: resident
pin = torch.ones(2**14)  # a block after them, so the heap cannot shrink from its top
held = in_use_mb()
del blocks
print(held - in_use_mb())  # MiB given back to the system
"""


def freed_mb(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=120, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def test_freed_blocks_go_back_to_the_system_only_when_asked():
    assert freed_mb("return") > 20  # the 24 MiB freed are unmapped
    assert freed_mb("keep") < 8     # glibc's defaults keep them in the heap for reuse



KEEPS = """
import sys
from sparring.train.host_memory import keeps_freed_memory, return_freed_memory
before = keeps_freed_memory("cpu")
if sys.argv[1] == "return":
    assert return_freed_memory()
print(before, keeps_freed_memory("cpu"))
"""


@pytest.mark.parametrize(("mode", "env", "said"), [
    ("keep", {}, "True True"),                    # glibc's defaults: a CPU pass's freed memory stays
    ("return", {}, "True False"),                 # given back once the trainer set the thresholds
    ("keep", {"MALLOC_MMAP_THRESHOLD_": "1048576", "MALLOC_TRIM_THRESHOLD_": "1048576"}, "False False"),
])
def test_whether_a_cpu_keeps_freed_memory_follows_the_process_setting(mode, env, said):
    import os

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}, **env}
    out = subprocess.run([sys.executable, "-c", KEEPS, mode], capture_output=True, text=True, timeout=120,
                         check=True, env=env)
    assert out.stdout.strip().splitlines()[-1] == said
