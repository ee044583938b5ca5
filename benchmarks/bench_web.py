#!/usr/bin/env python
"""The web app on a big run: a synthetic 10,000-episode debate run (each record with a story
shown to both debaters), then the time to list the run page's first page.

    python benchmarks/bench_web.py [--episodes 10000] [--story-words 600]

Prints the file size and the first-page time cold (the byte-offset index is built: every line
scanned once, transcripts skipped), warm (index cached, keyed by file size/mtime), after one
appended episode (only the new line is scanned), sorted by judge probability, and opening one
episode. Target: the first page in < 300 ms (cold and warm).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "web"))

from synthetic import record, write_run  # noqa: E402

from sparring.engine.config import open_store, read_config  # noqa: E402


def timed(client, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    r = client.get(url)
    return (time.perf_counter() - start) * 1000, r.status_code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--story-words", type=int, default=600)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*httpx.*")  # starlette's TestClient notice
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        t0 = time.perf_counter()
        run = write_run(runs / "big", args.episodes, story_words=args.story_words, failed=args.episodes // 100)
        size = (run / "episodes.jsonl").stat().st_size
        print(f"synthetic run: {args.episodes:,} episodes + {args.episodes // 100} failures, "
              f"{size / 1e6:.1f} MB of episodes.jsonl (built in {time.perf_counter() - t0:.1f} s)")
        client = TestClient(create_app(runs), base_url="http://127.0.0.1")
        client.get("/runs")  # session cookie, templates compiled
        cold, s1 = timed(client, "/runs/big")
        warm, s2 = timed(client, "/runs/big")
        with open_store(run, read_config(run)) as store:
            store.add_done(record(args.episodes + 10**6, random.Random(1), story_words=args.story_words,
                                  experiment="big"))
        grown, s3 = timed(client, "/runs/big")
        sort, s4 = timed(client, "/runs/big?sort=judge_p&desc=1&page=7&q=plain")
        ep, s5 = timed(client, f"/runs/big/episodes/ep{args.episodes // 2:06d}?view=everything")
        assert {s1, s2, s3, s4, s5} == {200}, (s1, s2, s3, s4, s5)
        print(f"first page, cold (index built):      {cold:7.1f} ms   (target < 300 ms)")
        print(f"first page, warm (index cached):     {warm:7.1f} ms")
        print(f"first page after 1 appended episode: {grown:7.1f} ms")
        print(f"filtered + sorted page 7:            {sort:7.1f} ms")
        print(f"one episode, everything view:        {ep:7.1f} ms")


if __name__ == "__main__":
    main()
