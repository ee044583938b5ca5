"""Shared fixtures: tiny random HF models (fast) and the real bundled model (tests marked `bundled`)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def tiny_objects():
    """(model, tokenizer) of a 2-layer random Llama with the bundled tokenizer; wrap with
    `HFModel.from_objects(*tiny_objects, **args)` for other settings. Do not attach adapters to it."""
    from sparring.models.tiny import tiny_model

    return tiny_model(seed=0)


@pytest.fixture(scope="session")
def tiny_hf(tiny_objects):
    """An `hf` backend on the tiny random model (greedy text is gibberish but deterministic)."""
    from sparring.models.hf import HFModel

    return HFModel.from_objects(*tiny_objects, name="tiny")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny model saved to disk (config, safetensors, tokenizer), for load-by-path tests."""
    from sparring.models.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture(scope="session")
def bundled_hf():
    """The real bundled SmolLM2-135M-Instruct (converted once into the user cache, then reused)."""
    from sparring.models.hf import HFModel

    return HFModel(name="smollm2-135m", model="bundled:smollm2-135m", max_batch_size=32)


def pytest_configure(config):
    """Under pytest-xdist each worker gets its share of the cores for torch's threads (and the
    processes its tests start): n workers at the default thread count each would oversubscribe
    the machine n times. An OMP_NUM_THREADS of the caller's own is kept."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and "OMP_NUM_THREADS" not in os.environ:
        threads = max(1, len(os.sched_getaffinity(0)) // workers) if hasattr(os, "sched_getaffinity") else 1
        os.environ["OMP_NUM_THREADS"] = str(threads)
        if "torch" in sys.modules:  # already imported: the variable is read once, at import
            sys.modules["torch"].set_num_threads(threads)


def pytest_collection_modifyitems(config, items):
    """Tests on the real bundled model are slow by definition: `-m "not slow"` leaves them out.
    Slow tests run first (a stable sort): pytest-xdist's workers then start on the long ones and
    share the short ones at the end, instead of one worker finishing a long test alone."""
    for item in items:
        if item.get_closest_marker("bundled") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
