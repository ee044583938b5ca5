#!/usr/bin/env python
"""The web app on a big run: a synthetic 10,000-episode debate run (each record with a story
shown to both debaters), then the time of the run page's requests.

    python benchmarks/bench_web.py [--episodes 10000] [--story-words 600] [--runs 10000]

Each request is reported as wall time, the CPU time of the whole process meanwhile (all threads:
robust to a busy machine, unlike wall time) and the number of JSON lines whose summary was
parsed on the request path. The headline is the first filtered and sorted page of a run this
server has never shown: loaded from the summary sidecar the store wrote when the run closed (a
restarted server, or any closed run), and without it (every line's summary parsed and checked,
as for a run of an older version); then the same page with the index in memory, after one
appended episode (only the new line parsed), the unsorted first page, and one episode. Then the
runs list of a directory of `--runs` runs. Targets: the first page < 300 ms; the filtered +
sorted page at 10,000 episodes <= 150 ms.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "web"))

from synthetic import record, write_run  # noqa: E402

from sparring.engine.config import open_store, read_config  # noqa: E402


def timed(client, url: str, index=None) -> tuple[float, float, int, int]:
    """(wall ms, CPU ms of the whole process, lines parsed meanwhile, status). `index`: the run's
    index, or a function that gives it after the request (a server that has not built it yet)."""
    parsed = index.parsed if index is not None and not callable(index) else 0
    start, cpu = time.perf_counter(), time.process_time()
    r = client.get(url)
    wall, cpu = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
    if callable(index):
        index = index()
    return wall, cpu, (index.parsed - parsed) if index is not None else -1, r.status_code


def settle(index) -> None:
    """Let the background passes (summaries, sidecar writes) finish, so they are not timed."""
    time.sleep(0.6)
    index.summarize_all(save=False)
    index.save()


def line(label: str, t: tuple[float, float, int, int], note: str = "") -> None:
    parsed = f"{t[2]:>6,} lines parsed" if t[2] >= 0 else " " * 19
    print(f"{label:<46} {t[0]:7.1f} ms wall {t[1]:7.1f} ms CPU {parsed}  {note}")


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--story-words", type=int, default=600)
    ap.add_argument("--runs", type=int, default=10_000, help="run directories for the runs-list timing (0: skip)")
    return ap


def main() -> None:
    args = build_parser().parse_args()
    warnings.filterwarnings("ignore", message=".*httpx.*")  # starlette's TestClient notice
    from fastapi.testclient import TestClient

    from sparring.records.sidecar import INDEX_DIR
    from sparring.web.app import create_app

    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
          f"(wall times grow with it; CPU times and lines parsed do not)")
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        t0 = time.perf_counter()
        run = write_run(runs / "big", args.episodes, story_words=args.story_words, failed=args.episodes // 100)
        size = (run / "episodes.jsonl").stat().st_size
        print(f"synthetic run: {args.episodes:,} episodes + {args.episodes // 100} failures, "
              f"{size / 1e6:.1f} MB of episodes.jsonl (built in {time.perf_counter() - t0:.1f} s)")
        sorted_url = "/runs/big?sort=judge_p&desc=1&page=7&q=plain"

        def server():  # a new web app on the runs directory (a fresh start: nothing cached)
            gc.collect()  # the previous app's index is garbage: not traversed by the next one's collections
            client = TestClient(create_app(runs), base_url="http://127.0.0.1")
            client.get("/runs")  # session cookie, templates compiled
            return client, client.app.state.web.indexes  # type: ignore[attr-defined]

        # 1. The run as the store closed it (its summary sidecar written), on a (re)started server.
        client, indexes = server()
        restart = timed(client, sorted_url, lambda: indexes.get(run))
        del client, indexes
        client, indexes = server()
        plain = timed(client, "/runs/big", lambda: indexes.get(run))
        # 2. No sidecar (a run of an older version, or one killed before it closed): every line parsed.
        shutil.rmtree(run / INDEX_DIR)
        del client, indexes
        client, indexes = server()
        cold_plain = timed(client, "/runs/big", lambda: indexes.get(run))
        settle(indexes.get(run))  # the summaries are parsed and the sidecar written in the background
        shutil.rmtree(run / INDEX_DIR)
        del client, indexes
        client, indexes = server()
        cold = timed(client, sorted_url, lambda: indexes.get(run))
        index = indexes.get(run)
        settle(index)
        built = timed(client, sorted_url, index)
        other = timed(client, "/runs/big?sort=duration&page=3&q=quoting", index)
        with open_store(run, read_config(run)) as store:
            store.add_done(record(args.episodes + 10**6, random.Random(1), story_words=args.story_words,
                                  experiment="big"))
        grown = timed(client, sorted_url, index)
        ep = timed(client, f"/runs/big/episodes/ep{args.episodes // 2:06d}?view=everything")
        settle(index)  # nothing is still being written when the directory is removed
        statuses = {t[3] for t in (restart, plain, cold_plain, cold, built, other, grown, ep)}
        assert statuses == {200}, statuses
        print("filtered + sorted page 7 (q=plain, by judge probability), target <= 150 ms:")
        line("  first, never viewed, sidecar (restart)", restart, "<- the store wrote the summaries at close")
        line("  first, never viewed, no sidecar", cold, "<- every line's summary parsed and checked")
        line("  again (index in memory)", built)
        line("  another sort + filter (in memory)", other)
        line("  after 1 appended episode", grown, "<- only the new line parsed")
        print("first page (unsorted), target < 300 ms:")
        line("  never viewed, sidecar", plain)
        line("  never viewed, no sidecar", cold_plain, "<- offsets scanned, the page's 50 rows parsed")
        line("one episode, everything view", ep)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
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
        cold = timed(client, "/runs")
        by_created = timed(client, "/runs?sort=created&page=2")
        time.sleep(LIST_TTL_S + 0.1)  # the listing is stale: re-listed (in the background), one stat per run
        relist = timed(client, "/runs?sort=name&page=3")
        first_search = timed(client, "/runs?q=m3&page=2")
        search = timed(client, "/runs?q=exp-3&sort=episodes&page=2")
        statuses = {t[3] for t in (cold, by_created, relist, first_search, search)}
        assert statuses == {200}, statuses
        line("runs list, first visit", cold, "<- one stat per run, the page's 50 rows read")
        line("runs list, sorted by created", by_created, "<- every manifest read once")
        line("runs list, sorted by name, page 3, stale", relist)
        line("runs list, first search", first_search, "<- every config read once, unless read ahead")
        line("runs list, another search, by episodes", search)


if __name__ == "__main__":
    main()
