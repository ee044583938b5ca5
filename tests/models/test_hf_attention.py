"""The attention kernels the `hf` backend allows while generating: no cuDNN on CUDA by default
(it plans anew for every key/value length), nothing changed on the CPU."""

from __future__ import annotations

from contextlib import contextmanager

import torch

from sparring.models import hf_attention
from sparring.models.hf import HFModel
from sparring.types import GenerateRequest, Message, Sampling

FLAGS = ("cudnn_sdp_enabled", "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled")


def flags() -> dict[str, bool]:
    return {name: getattr(torch.backends.cuda, name)() for name in FLAGS}


def test_cuda_generation_leaves_out_cudnn_only_while_inside():
    before = flags()
    with hf_attention.generation_attention(torch.device("cuda")):
        inside = flags()
    assert inside == {"cudnn_sdp_enabled": False, "flash_sdp_enabled": True, "mem_efficient_sdp_enabled": True,
                      "math_sdp_enabled": True}
    assert flags() == before


def test_cpu_or_cudnn_allowed_changes_nothing():
    before = flags()
    for device, cudnn in (("cpu", False), ("cuda", True), (torch.device("cpu"), True)):
        with hf_attention.generation_attention(device, cudnn):
            assert flags() == before


def test_the_backend_enters_it_for_every_call_with_its_setting(tiny_objects, monkeypatch):
    seen: list[tuple[str, bool]] = []

    @contextmanager
    def record(device, cudnn=False):
        seen.append((torch.device(device).type, cudnn))
        yield

    monkeypatch.setattr(hf_attention, "generation_attention", record)
    model = HFModel.from_objects(*tiny_objects, prefix_cache_mb=0, cudnn_attention=True)
    request = GenerateRequest(messages=[Message(role="user", content="Hi")], sampling=Sampling(max_new_tokens=2))
    model.generate([request])
    assert seen == [("cpu", True)]
    assert HFModel.from_objects(*tiny_objects, prefix_cache_mb=0).args.cudnn_attention is False
