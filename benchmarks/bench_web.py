#!/usr/bin/env python
"""The web app on a big run: a synthetic 10,000-episode debate run (each record with a story
shown to both debaters), then the time to list the run page's first page.

    python benchmarks/bench_web.py [--episodes 10000] [--story-words 600]

Prints the file size and the first-page time cold (the byte-offset index is built: every line
scanned once, transcripts skipped), warm (index cached, keyed by file size/mtime), after one
appended episode (only the new line is scanned), a filtered and sorted page while the summary
index is still being built (every line's summary parsed and checked once, in the background
after the first page), the same page once it is built (a cached sorted order, filtered by each
entry's search text: no line is read), and opening one episode; then the runs list of a
directory of `--runs` runs, cold and warm. Targets: the first page < 300 ms (cold and warm);
the filtered + sorted page at 10,000 episodes <= 150 ms once the index is built.
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
    ap.add_argument("--runs", type=int, default=10_000, help="run directories for the runs-list timing (0: skip)")
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
        sorted_url = "/runs/big?sort=judge_p&desc=1&page=7&q=plain"
        building, s4 = timed(client, sorted_url)
        index = client.app.state.web.indexes.get(run)  # type: ignore[attr-defined]
        while not index.complete:  # the background pass (already done by the request above)
            time.sleep(0.05)
        built, s6 = timed(client, sorted_url)
        other, s7 = timed(client, "/runs/big?sort=duration&page=3&q=quoting")
        ep, s5 = timed(client, f"/runs/big/episodes/ep{args.episodes // 2:06d}?view=everything")
        assert {s1, s2, s3, s4, s5, s6, s7} == {200}, (s1, s2, s3, s4, s5, s6, s7)
        print(f"first page, cold (index built):      {cold:7.1f} ms   (target < 300 ms)")
        print(f"first page, warm (index cached):     {warm:7.1f} ms")
        print(f"first page after 1 appended episode: {grown:7.1f} ms")
        print(f"filtered + sorted page 7, first:     {building:7.1f} ms   (every summary parsed and checked once)")
        print(f"filtered + sorted page 7, indexed:   {built:7.1f} ms   (target <= 150 ms)")
        print(f"another sort + filter, indexed:      {other:7.1f} ms")
        print(f"one episode, everything view:        {ep:7.1f} ms")
    if args.runs:
        runs_list(args.runs)


def runs_list(n: int) -> None:
    """The runs list over `n` small run directories (manifest + config each)."""
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app
    from sparring.web.catalog import LIST_TTL_S

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        t0 = time.perf_counter()
        for i in range(n):
            d = runs / f"run-{i:05d}"
            d.mkdir()
            (d / "config.yaml").write_text(f"name: exp-{i % 37}\ngame: dond\nagents:\n  a: {{role: negotiator, "
                                           f"model: m{i % 5}}}\n")
            (d / "manifest.json").write_text(f'{{"status": "done", "created": "2026-01-01T00:{i % 60:02d}", '
                                             f'"experiment": "exp-{i % 37}", "counts": {{"done": {i % 9}}}}}')
        client = TestClient(create_app(runs), base_url="http://127.0.0.1")
        print(f"{n:,} run directories (made in {time.perf_counter() - t0:.1f} s)")
        cold, a = timed(client, "/runs")
        by_created, e = timed(client, "/runs?sort=created&page=2")
        time.sleep(LIST_TTL_S + 0.1)  # the listing is stale: re-listed (in the background), one stat per run
        relist, b = timed(client, "/runs?sort=name&page=3")
        first_search, c = timed(client, "/runs?q=m3&page=2")
        search, d = timed(client, "/runs?q=exp-3&sort=episodes&page=2")
        assert {a, b, c, d, e} == {200}, (a, b, c, d, e)
        print(f"runs list, first visit (one stat per run, the page's 50 rows read): {cold:7.1f} ms")
        print(f"runs list, sorted by created (every manifest read once):            {by_created:7.1f} ms")
        print(f"runs list, sorted by name, page 3, listing stale:                   {relist:7.1f} ms")
        print(f"runs list, first search (every config read once, unless read ahead): {first_search:7.1f} ms")
        print(f"runs list, another search, sorted by episodes, page 2:              {search:7.1f} ms")

if __name__ == "__main__":
    main()
