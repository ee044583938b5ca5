"""The GPU self-check kit: what travels is computed against the GPU image's package list, the kit
stays under its size limit (an optional wheel that does not fit is left out and said so), and a
failing part is reported with its traceback without stopping the others. The whole check runs at
toy size on the CPU in `.ci/run` (`scripts/gpu_check.sh run --cpu`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.gpucheck import kit
from sparring.gpucheck.parts import PARTS, Ctx
from sparring.gpucheck.runner import markdown, run_part


def test_the_kit_carries_what_the_image_lacks_and_nothing_it_has():
    need = kit.needed(kit.IMAGE)
    assert {"trl", "datasets", "pydantic", "pydantic-core"} <= set(need)
    assert not {"torch", "transformers", "peft", "accelerate", "numpy", "pyarrow", "openai", "anthropic"} & set(need)
    import importlib.metadata as md

    assert need["trl"] == md.version("trl")  # the version sparring is tested with here
    bare = kit.needed(["torch"])  # an image with torch only: the rest of the training path travels
    assert {"transformers", "peft", "accelerate", "trl"} <= set(bare)


def test_an_optional_wheel_that_does_not_fit_is_left_out_and_said_so(tmp_path, monkeypatch):
    sizes = {"bitsandbytes": 40 * 2**20}

    def fake_download(spec: str, dest: Path) -> Path:
        name = spec.split("==")[0]
        path = dest / f"{name.replace('-', '_')}-{spec.split('==')[-1] if '==' in spec else '9.9'}-py3-none-any.whl"
        path.write_bytes(b"0" * sizes.get(name, 1000))
        return path

    monkeypatch.setattr(kit, "download", fake_download)
    monkeypatch.setattr(kit, "copy_tokenizer", lambda dest: dest.mkdir(parents=True) or ["tokenizer.json"])
    manifest = kit.prepare(tmp_path / "kit", max_mib=30)
    assert "bitsandbytes" in manifest["not_carried"] and "40 MiB" in manifest["not_carried"]["bitsandbytes"]
    assert not list((tmp_path / "kit" / "wheels").glob("bitsandbytes*"))
    assert json.loads((tmp_path / "kit" / "manifest.json").read_text())["mib"] < 30
    manifest = kit.prepare(tmp_path / "kit", max_mib=60)
    assert "bitsandbytes" not in manifest["not_carried"]
    assert any(w["name"] == "bitsandbytes" for w in manifest["wheels"])


def test_a_failing_part_is_reported_with_its_traceback(tmp_path, monkeypatch):
    def broken(ctx: Ctx) -> dict:
        raise ValueError("the GPU is on fire")

    monkeypatch.setitem(PARTS, "broken", (broken, 5))
    run_part("broken", tmp_path, cpu=True)
    result = json.loads((tmp_path / "parts" / "broken.json").read_text())
    assert result["status"] == "fail" and "ValueError: the GPU is on fire" in result["traceback"]
    text = markdown({"mode": "gpu", "date": "today", "total_s": 1.0, "passed": 1, "failed": ["broken"],
                     "parts": {"matmul": {"status": "pass", "wall_s": 1, "figures": {"tflops": 700.0}},
                               "broken": {**result, "wall_s": 0.1}}})
    assert "| matmul | pass | 1 | tflops 700.0 |" in text and "## broken: fail" in text
    assert "the GPU is on fire" in text


@pytest.mark.slow
def test_the_light_parts_run_and_write_both_reports(tmp_path):
    from sparring.gpucheck.runner import run_all

    report = run_all(tmp_path / "out", cpu=True, only=["versions", "matmul", "hf_tiny"], work=tmp_path / "work",
                     echo=False)
    assert report["failed"] == [], report
    assert (tmp_path / "out" / "gpu_check.md").is_file()
    data = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert data["parts"]["matmul"]["figures"]["tflops"] > 0
    assert data["parts"]["hf_tiny"]["figures"]["prefix_cache_hits"] > 0
