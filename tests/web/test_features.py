"""What users reach for on the browse pages: downloads of a run's episodes and metrics, the runs
list searched, sorted and paged, previous / next episode, a turn-by-turn replay, a skip link and
a favicon, and every page fitting a phone (checked in the browser test)."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import write_run  # noqa: E402

from sparring.records.reader import iter_records  # noqa: E402


def test_a_run_page_offers_its_files_and_they_download(client, runs_dir):
    page = client.get("/runs/big").text
    for f in ("episodes.jsonl", "failures.jsonl", "metrics.csv"):
        assert f'href="/runs/big/download/{f}"' in page
    r = client.get("/runs/big/download/episodes.jsonl")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    assert "big-episodes.jsonl" in r.headers["content-disposition"]
    assert r.content == (runs_dir / "big" / "episodes.jsonl").read_bytes()
    assert len([json.loads(x) for x in r.text.splitlines()]) == 120
    m = client.get("/runs/big/download/metrics.csv")
    assert m.status_code == 200 and m.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(m.text)))
    assert len(rows) == 123 and {r["status"] for r in rows} == {"complete", "failed"}
    by_id = {r["id"]: r for r in rows}
    rec = next(iter_records(runs_dir / "big"))
    assert float(by_id[rec.id]["metric.p_correct"]) == rec.outcome.metrics["p_correct"]
    assert float(by_id[rec.id]["reward.Judge"]) == rec.outcome.rewards["Judge"]
    assert by_id[rec.id]["agent.Debater_A"] == rec.seats["Debater_A"].agent
    assert client.get("/runs/big/download/config.yaml").status_code == 404
    assert client.get("/runs/big/download/..%2F..%2Fetc%2Fpasswd").status_code == 404


def test_metrics_csv_cells_never_run_as_formulas(client, runs_dir):
    path = runs_dir / "evil" / "episodes.jsonl"
    lines = path.read_text().splitlines()
    obj = json.loads(lines[0])
    obj["matchup"] = "=HYPERLINK(\"http://x\")"
    path.write_text("\n".join([json.dumps(obj), *lines[1:]]) + "\n")
    text = client.get("/runs/evil/download/metrics.csv").text
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text


def test_previous_and_next_episode(client, runs_dir):
    ids = [r.id for r in iter_records(runs_dir / "big")]
    first = client.get(f"/runs/big/episodes/{ids[0]}?view=Judge").text
    assert 'id="prev-episode"' not in first
    assert f'href="/runs/big/episodes/{ids[1]}?view=Judge"' in first
    mid = client.get(f"/runs/big/episodes/{ids[5]}").text
    assert f'/runs/big/episodes/{ids[4]}?view=public"' in mid and f'/runs/big/episodes/{ids[6]}?view=public"' in mid


def test_replay_steps_through_the_public_events(client, runs_dir):
    rec = next(iter_records(runs_dir / "big"))
    public = [e for e in rec.events if e.visible_to is None]
    assert len(public) == 3
    start = client.get(f"/runs/big/episodes/{rec.id}?view=replay&step=0").text
    assert 'id="replay-next"' in start and 'id="replay-prev"' not in start and public[0].content not in start
    one = client.get(f"/runs/big/episodes/{rec.id}?view=replay&step=1").text
    assert public[0].content in one and public[1].content not in one and "step 1 of 3" in one
    end = client.get(f"/runs/big/episodes/{rec.id}?view=replay&step=99").text
    assert all(e.content in end for e in public) and 'id="replay-outcome"' in end and 'id="replay-next"' not in end
    assert "hidden note for A" not in end  # only what everyone saw
    assert 'href="?view=replay"' in one  # a tab of its own


def test_runs_list_search_sort_and_pages(client, runs_dir):
    for i in range(60):
        write_run(runs_dir / f"extra-{i:03d}", 1, seed=i)
    r = client.get("/runs")
    assert "63 of 63 run(s)" in r.text and "page 1 of 2" in r.text
    assert r.text.count('<a href="/runs/') == 50
    two = client.get("/runs?page=2&sort=name&desc=0")
    names = re.findall(r'<a href="/runs/([^"?]+)">', two.text)
    assert names == sorted(names, key=str.lower) and len(names) == 13
    found = client.get("/runs?q=extra-01").text
    assert "10 of 63 run(s)" in found
    desc = re.findall(r'<a href="/runs/([^"?]+)">', client.get("/runs?sort=name&desc=1&per=25").text)
    assert desc == sorted(desc, key=str.lower, reverse=True) and len(desc) == 25
    assert client.get("/runs?sort=bogus&page=x&per=7").status_code == 200
    assert "No run matches" in client.get("/runs?q=nothing-like-this").text


def test_runs_list_is_cached_and_sees_new_runs(client, runs_dir, monkeypatch):
    from sparring.web import catalog

    monkeypatch.setattr(catalog, "LIST_TTL_S", 0.0)
    calls = []
    real = catalog.add_manifest
    def slow_read(r, p):  # a slow disk widens the window in which a request and the read-ahead meet
        calls.append(p.name)
        time.sleep(0.02)
        real(r, p)

    monkeypatch.setattr(catalog, "add_manifest", slow_read)
    for _ in range(3):
        client.get("/runs?sort=episodes")
        time.sleep(0.05)
    assert calls.count("big") == 1  # unchanged runs are not read again
    write_run(runs_dir / "newer", 1)
    for _ in range(100):  # a stale listing is served while the directory is listed again
        if 'href="/runs/newer"' in client.get("/runs").text:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the new run never appeared")


def test_skip_link_and_favicon(client):
    page = client.get("/runs").text
    assert '<a class="skip" href="#main">' in page and '<main id="main"' in page
    assert 'rel="icon" href="/static/favicon.svg"' in page
    assert client.get("/static/favicon.svg").headers["content-type"].startswith("image/svg+xml")
    assert client.get("/favicon.ico", follow_redirects=False).status_code == 301


def test_play_page_text_has_its_spaces(client):
    text = re.sub(r"<[^>]+>", "", client.get("/play").text)
    assert "As a negotiator, your seat" in text and "negotiatoryour" not in text


def test_report_rows_link_to_the_episodes(client, runs_dir):
    from urllib.parse import urljoin

    from sparring.analysis.report import write_report

    write_report(runs_dir / "big")
    report = client.get("/runs/big/report/").text
    links = re.findall(r'<a class="episodes" href="([^"]+)" target="_top">', report)
    assert links, "no links to the episodes in the report"
    agent_link = next(u for u in links if "q=" not in u)
    page = client.get(urljoin("http://127.0.0.1/runs/big/report/", agent_link.replace("&amp;", "&")))
    assert page.status_code == 200 and "<h1>big</h1>" in page.text
    n = int(re.search(r"(\d+) episode\(s\)", page.text).group(1))
    assert 0 < n < 123  # filtered to that agent's episodes
    pair = next(u for u in links if "q=" in u)
    page = client.get(urljoin("http://127.0.0.1/runs/big/report/", pair.replace("&amp;", "&")))
    assert page.status_code == 200 and 0 < int(re.search(r"(\d+) episode\(s\)", page.text).group(1)) <= 123


def test_runs_list_default_order_is_the_latest_change_and_reads_only_the_page(client, runs_dir, monkeypatch):
    import os

    from sparring.web import catalog

    for i in range(30):
        write_run(runs_dir / f"old-{i:02d}", 1, seed=i)
        os.utime(runs_dir / f"old-{i:02d}", (1_000_000 + i, 1_000_000 + i))
    monkeypatch.setattr(catalog, "in_background", lambda fn, *a: None)  # no read-ahead: count what a page reads
    read = []
    real = catalog.add_manifest
    monkeypatch.setattr(catalog, "add_manifest", lambda r, p: read.append(p.name) or real(r, p))
    page = client.get("/runs?per=25").text
    names = re.findall(r'<a href="/runs/([^"?]+)">', page)
    assert set(names[:3]) == {"live", "evil", "big"}  # written last
    assert names[3:] == [f"old-{i:02d}" for i in range(29, 7, -1)]  # newest change first
    assert sorted(read) == sorted(names)  # only the rows shown were read
    assert "120 / 123" in page

