"""Shared fixtures for the model-backend tests: the local fake OpenAI/Anthropic HTTP server."""

from __future__ import annotations

import pytest

try:  # works whether or not tests/ is a package
    from .fake_api_server import FakeAPIServer
except ImportError:
    from fake_api_server import FakeAPIServer


@pytest.fixture(scope="module")
def fake_api_server():
    """One real HTTP server on 127.0.0.1 (OS-assigned port) per test module."""
    server = FakeAPIServer().start()
    yield server
    server.stop()


@pytest.fixture
def api(fake_api_server):
    """The module's server with default behaviour and empty request log for each test."""
    fake_api_server.reset()
    yield fake_api_server
    fake_api_server.reset()



@pytest.fixture
def closing():
    """`keep(model)`: returns `model` and closes it after the test."""
    made = []
    yield lambda model: made.append(model) or model
    for model in made:
        model.close()


FAST = {"timeout_s": 5.0, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "api_key_env": "SPARRING_TEST_UNSET_KEY"}


@pytest.fixture
def make_model(api, closing):
    """`make(**args)`: an `openai` backend on the fake server (fast retries, no key)."""
    from sparring.models.openai_backend import OpenAIModel

    return lambda **kw: closing(OpenAIModel("test-openai", **{"model": "fake-model", "base_url": api.openai_base_url,
                                                              **FAST, **kw}))
