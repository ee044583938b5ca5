#!/usr/bin/env python
"""One failing request must not break a batch: the same 32 requests (concurrency 8) against the
local fake OpenAI-compatible server, healthy and with one request answered 400, sent through the
engine's `execute` as a runner tick would send them.

    python benchmarks/bench_api_errors.py

Prints wall time and server calls for both; the ratio with/without the 400 should be ~1 (the bad
request fails alone, nothing is re-sent). Before per-row errors: 1.7 s healthy vs 8.9 s and 41
server calls with one 400 (the batch was cancelled and re-run request by request).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))

from fake_api_server import FakeAPIServer  # noqa: E402

from sparring.engine.runner import execute  # noqa: E402
from sparring.models.openai_backend import OpenAIModel  # noqa: E402
from sparring.types import GenerateRequest, Message  # noqa: E402


def run(server: FakeAPIServer, fail: bool) -> tuple[float, int, int]:
    server.reset()
    server.behaviour.latency_s = 0.2
    if fail:
        server.fail("status", status=400, message="bad request: this prompt is malformed")
    model = OpenAIModel("bench", model="fake", base_url=server.openai_base_url, concurrency=8, max_retries=2,
                        backoff_initial_s=0.05, api_key_env="SPARRING_BENCH_UNSET_KEY")
    requests = [GenerateRequest(messages=[Message(role="user", content=f"request {i}")]) for i in range(32)]
    start = time.perf_counter()
    results = execute(model, "generate", requests)
    wall = time.perf_counter() - start
    model.close()
    failed = sum(isinstance(r, BaseException) for r in results)
    return wall, len(server.requests), failed


def build_parser() -> argparse.ArgumentParser:
    """No options (--help only; tests/test_doc_commands.py checks the documented command lines against it)."""
    return argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def main() -> None:
    build_parser().parse_args()
    server = FakeAPIServer().start()
    try:
        run(server, fail=False)  # warm-up: client, event loop, server
        healthy = run(server, fail=False)
        broken = run(server, fail=True)
    finally:
        server.stop()
    print("32 requests, concurrency 8, 0.2 s server latency")
    print(f"  healthy:        {healthy[0]:.2f} s, {healthy[1]} server calls, {healthy[2]} failed")
    print(f"  one 400 reply:  {broken[0]:.2f} s, {broken[1]} server calls, {broken[2]} failed")
    print(f"  time ratio {broken[0] / healthy[0]:.2f} (target ~1.0), extra server calls {broken[1] - healthy[1]} "
          "(target 0: a 400 is not retried, nothing is re-sent)")


if __name__ == "__main__":
    main()
