"""Browsing routes: every page renders, tables page/sort/filter, views show what they should and
no more, text is escaped, and nothing outside the runs directory is reachable."""

from __future__ import annotations

import re

from conftest import SCRIPT

from sparring.records.index import RunIndex


def test_runs_list_shows_each_run(client):
    r = client.get("/runs")
    assert r.status_code == 200
    for name in ("big", "evil", "live"):
        assert f'href="/runs/{name}"' in r.text
    row = re.search(r'<a href="/runs/big">big</a>.*?</tr>', r.text, re.S).group(0)
    assert "debate" in row and "120 / 123" in row and "model-judge" in row
    assert client.get("/", follow_redirects=False).status_code == 307


def test_run_page_paginates_sorts_and_filters(client):
    r = client.get("/runs/big")
    assert r.status_code == 200 and "123 episode(s)" in r.text and "page 1 of 3" in r.text
    assert r.text.count("/runs/big/episodes/") == 50
    r2 = client.get("/runs/big?page=3")
    assert r2.text.count("/runs/big/episodes/") == 23 and "RuntimeError: boom" in r2.text
    r3 = client.get("/runs/big?sort=judge_p&desc=1&per=25")
    probs = [float(x) for x in re.findall(r"<td>(0\.\d\d|1\.00)</td>", r3.text)]
    assert len(probs) == 25 and probs == sorted(probs, reverse=True)
    r4 = client.get("/runs/big?status=failed")
    assert "3 episode(s)" in r4.text
    r5 = client.get("/runs/big?agent=quoting&q=quoting")
    n = int(re.search(r"(\d+) episode\(s\)", r5.text).group(1))
    assert 0 < n < 123
    assert client.get("/runs/big?page=abc&per=-3&sort=nonsense").status_code == 200  # bad params: defaults


def test_live_run_progress(client):
    r = client.get("/runs/live")
    assert 'data-status="running"' in r.text
    assert client.get("/runs/live/progress.json").json() == {"status": "running", "done": 5, "failed": 0,
                                                             "expected": 5}


def test_report_files_are_served_and_nothing_else(client, runs_dir):
    assert "No report yet" in client.get("/runs/big").text
    (runs_dir / "big" / "report").mkdir()
    (runs_dir / "big" / "report" / "report.html").write_text("<h1>the report</h1>")
    assert "/runs/big/report/" in client.get("/runs/big").text
    assert client.get("/runs/big/report/").text == "<h1>the report</h1>"
    assert client.get("/runs/big/report/..%2Fconfig.yaml").status_code == 404
    assert client.get("/runs/big/report/../config.yaml").status_code == 404
    assert client.get("/runs/..%2F..%2Fetc").status_code == 404
    assert client.get("/runs/nope").status_code == 404


def _first_id(runs_dir, name="big"):
    return RunIndex(runs_dir / name).refresh(background=False).entries[0].id


def test_episode_views(client, runs_dir):
    eid = _first_id(runs_dir)
    base = f"/runs/big/episodes/{eid}"
    pages = {v: client.get(f"{base}?view={v}") for v in ("public", "Debater_A", "Debater_B", "Judge", "everything")}
    assert all(p.status_code == 200 for p in pages.values())
    assert client.get(base).text == pages["public"].text  # public is the default view
    assert "hidden note for A" not in pages["public"].text
    assert "hidden note for A" in pages["everything"].text and "visible to Debater_A" in pages["everything"].text
    # a player's view: exactly what its model was shown
    assert "You are Debater_A" in pages["Debater_A"].text and "You are Debater_B" not in pages["Debater_A"].text
    assert "You are Debater_B" in pages["Debater_B"].text and "You are Debater_A" not in pages["Debater_B"].text
    assert "You have not read the story" in pages["Judge"].text and "Story:" not in pages["Judge"].text
    assert "verdict" in pages["Judge"].text and "%" in pages["Judge"].text
    assert client.get(f"{base}?view=Nobody").status_code == 404
    assert client.get("/runs/big/episodes/nope").status_code == 404
    failed = RunIndex(runs_dir / "big").refresh(background=False).entries[-1]
    assert "RuntimeError: boom" in client.get(f"/runs/big/episodes/{failed.id}").text


def test_text_from_models_is_escaped(client, runs_dir):
    eid = _first_id(runs_dir, "evil")
    for view in ("public", "Debater_A", "everything"):
        html = client.get(f"/runs/evil/episodes/{eid}?view={view}").text
        assert SCRIPT not in html
        assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html


def test_everything_view_shows_corrections_and_best_of_n_candidates(client, runs_dir):
    import random

    from synthetic import record

    from sparring.types import Completion

    rec = record(500, random.Random(5), experiment="big")
    speech = rec.calls[0]
    speech.completions = [Completion(text="first <i>candidate</i>"), Completion(text="second candidate")]
    speech.chosen, speech.candidate_scores = 1, [0.25, 0.75]
    bad = speech.model_copy(update={"rejected": True, "meta": {"correction": "Please quote the story."},
                                    "completions": [Completion(text="rejected reply")], "chosen": None,
                                    "candidate_scores": None})
    rec.calls.insert(0, bad)
    with open(runs_dir / "big" / "episodes.jsonl", "ab") as f:
        f.write(rec.model_dump_json().encode() + b"\n")
    html = client.get(f"/runs/big/episodes/{rec.id}?view=everything").text
    assert "best-of-2 candidates" in html and "score 0.750" in html and "<strong>kept</strong>" in html
    assert "first &lt;i&gt;candidate&lt;/i&gt;" in html
    assert "rejected" in html and "Please quote the story." in html and "rejected reply" in html
    player = client.get(f"/runs/big/episodes/{rec.id}?view=Debater_A").text
    assert "second candidate" in player and "best-of-2" not in player
