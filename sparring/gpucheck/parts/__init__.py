"""The parts of the GPU self-check. Each part is one function that returns its figures and raises
on failure; the runner runs each in its own process under its own time cap, so one failing or
hanging part does not stop the others. On a GPU every model runs on CUDA in bf16 (the `hf`
backend's and the trainers' defaults); `--cpu` runs the same code at toy size (CI).

The models are built from configs with random weights (no weights travel): the tiny 2-layer Llama
of the tests, and a ~0.5B model shaped like Qwen2.5-0.5B (hidden 896, 24 layers, GQA 14/2 heads),
both with the bundled tokenizer.

The parts live in modules by kind (`inference`, `training`, `commands`); importing them registers
each in `PARTS`, in the order the runner runs them.
"""

from importlib import import_module

from sparring.gpucheck.parts.base import PARTS, Ctx

for _kind in ("inference", "training", "commands"):  # importing registers the parts, in this order
    import_module(f"{__name__}.{_kind}")

__all__ = ["PARTS", "Ctx"]
