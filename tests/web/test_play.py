"""Playing in the browser through the routes: DoND as a negotiator, debate as the judge, with
scripted opponents. Hidden information never reaches the page, sessions are isolated, every
POST needs the CSRF token, and bad input is refused with a message while nothing changes."""

from __future__ import annotations

import re
import time

import pytest
from conftest import SCRIPT, csrf_of

from sparring.engine.play import Arena
from sparring.games.negotiation.instance import ITEMS
from sparring.records.reader import iter_records


def _values_text(values) -> str:
    parts = [f"each {n} is worth {v} point{'' if v == 1 else 's'}" for n, v in zip(ITEMS, values, strict=True)]
    return f"{parts[0]}, {parts[1]} and {parts[2]}"


@pytest.fixture(scope="module")
def dond_instance():
    """A scripted-dond scenario where the two players' values differ."""
    with Arena.from_config("scripted-dond") as arena:
        inst = next(i for i in arena.instances.values() if i.values[0] != i.values[1])
    return inst


def _seq(html: str) -> str | None:
    m = re.search(r'name="seq" value="(\d+)"', html)
    return m.group(1) if m else None


def _status(html: str) -> str:
    return re.search(r'id="game-status" data-status="(\w+)"', html).group(1)


def _start(client, **fields):
    """A started game; for Deal or No Deal, one that reaches the person's first turn (the seed
    is random, and a scripted opponent that opens with a proposal is aborted before it)."""
    for _ in range(8):
        csrf = csrf_of(client.get("/play").text)
        r = client.post("/play", data={"csrf": csrf, **fields}, follow_redirects=False)
        assert r.status_code == 303, r.text
        url = r.headers["location"]
        if fields.get("config") != "scripted-dond" or _seq(_page(client, url)) is not None:
            return url, csrf
    raise AssertionError("no game reached the person's first turn")


def _played(runs_dir):
    """The stored Deal or No Deal games in which the person answered (not those `_start` retried)."""
    return [r for r in iter_records(runs_dir / "web-scripted-dond")
            if any(c.model == "web-human" and c.completions for c in r.calls)]


def _page(client, url):
    """The game page once the engine waits for the person (or the game is over)."""
    for _ in range(100):
        r = client.get(url)
        if _status(r.text) != "waiting":
            return r.text
        time.sleep(0.05)
    raise AssertionError("the engine never reached the person's turn")


def test_dond_game_to_the_end_without_leaking_the_other_values(client, runs_dir, dond_instance):
    url, csrf = _start(client, config="scripted-dond", opponent="polite", seat="Player_1",
                       instance=dond_instance.id)
    mine, theirs = dond_instance.values
    pages = []
    html = _page(client, url)
    pages.append(html)
    assert 'id="your-values"' in html and _values_text(mine) in html
    # a message with markup, then proposals until the game ends
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "kind": "message",
                                        "text": f"Hello {SCRIPT}"})
    for _ in range(20):
        html = _page(client, url)
        pages.append(html)
        if _seq(html) is None:
            break
        r = client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "kind": "propose",
                                            "books": "1", "hats": "0", "balls": "0"})
        assert r.status_code in (200, 303)
    assert _status(html) in ("complete", "aborted")
    for page in pages:
        assert _values_text(theirs) not in page
        assert SCRIPT not in page
    assert "Hello &lt;script&gt;" in "".join(pages)
    recs = _played(runs_dir)
    assert len(recs) == 1 and recs[0].seats["Player_1"].agent == "human"
    assert recs[0].seats["Player_1"].model == "web-human"
    link = re.search(r'id="stored-link" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert client.get(link).status_code == 200


def test_bad_input_is_refused_and_changes_nothing(client):
    url, csrf = _start(client, config="scripted-dond", opponent="haggler", seat="Player_2")
    html = _page(client, url)
    seq = _seq(html)
    cases = [({"kind": "propose", "books": "two", "hats": "0", "balls": "0"}, 400, "whole number"),
             ({"kind": "propose", "books": "1", "hats": "99", "balls": "0"}, 400, "only"),
             ({"kind": "propose", "books": "-1", "hats": "0", "balls": "0"}, 400, "whole number"),
             ({"kind": "message", "text": "   "}, 400, "write something"),
             ({"kind": "dance"}, 400, "choose whether")]
    for fields, code, words in cases:
        r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, **fields})
        assert r.status_code == code and words in r.text, fields
        assert _seq(r.text) == seq  # the same turn is still pending
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": str(int(seq) + 5), "kind": "message", "text": "hi"})
    assert r.status_code == 409 and "out of date" in r.text
    r = client.post(f"{url}/act", data={"seq": seq, "kind": "message", "text": "hi"})
    assert r.status_code == 403 and "security token" in r.text
    r = client.post(f"{url}/act", data={"csrf": "forged", "seq": seq, "kind": "message", "text": "hi"})
    assert r.status_code == 403
    assert _seq(client.get(url).text) == seq
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "kind": "message", "text": "hi"},
                    follow_redirects=False)
    assert r.status_code == 303
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "kind": "message", "text": "again"})
    assert r.status_code == 409  # the same form twice: stale


def test_sessions_are_isolated(app, client):
    from fastapi.testclient import TestClient

    url, csrf = _start(client, config="scripted-dond", opponent="polite")
    html = _page(client, url)
    other = TestClient(app, base_url="http://127.0.0.1")  # another browser (no `with`: that would run the app's shutdown)
    assert other.get(url).status_code == 404
    assert other.get(f"{url}/state.json").status_code == 404
    other_csrf = csrf_of(other.get("/play").text)
    assert other_csrf != csrf
    r = other.post(f"{url}/act", data={"csrf": other_csrf, "seq": _seq(html), "kind": "message", "text": "x"})
    assert r.status_code == 404
    assert other.post(f"{url}/abandon", data={"csrf": other_csrf}).status_code == 404
    assert other.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html)}).status_code == 403
    assert _seq(client.get(url).text) == _seq(html)


def test_abandoned_game_is_stored_as_an_aborted_episode(client, runs_dir):
    url, csrf = _start(client, config="scripted-dond", opponent="polite", seat="Player_1")
    html = _page(client, url)
    client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "kind": "message", "text": "First words"})
    _page(client, url)  # the opponent has answered; the person's second turn waits
    assert client.post(f"{url}/abandon", data={"csrf": "nope"}).status_code == 403
    r = client.post(f"{url}/abandon", data={"csrf": csrf})
    assert r.status_code == 200 and _status(r.text) == "abandoned"
    assert not list(iter_records(runs_dir / "web-scripted-dond", failures=True))
    (rec,) = _played(runs_dir)
    assert rec.status == "aborted" and rec.error is None
    assert rec.outcome.status == "aborted" and rec.outcome.winner is None
    assert rec.outcome.reason == "abandoned by the human player (they pressed Abandon)"
    assert rec.outcome.metrics["abandoned"] is True
    assert any("First words" in e.content for e in rec.events)  # the transcript so far is kept
    mine = [c for c in rec.calls if c.model == "web-human"]
    assert [c.player for c in mine] == ["Player_1", "Player_1"]
    assert mine[0].completions and mine[1].error.startswith("Abandoned")  # the turn left unanswered
    page = client.get(f"/runs/web-scripted-dond/episodes/{rec.id}")
    assert page.status_code == 200 and "abandoned by the human player" in page.text and 'id="abandoned"' in page.text


def test_debate_as_the_judge(client, runs_dir):
    url, csrf = _start(client, config="scripted-debate", debater_1="plain", debater_2="quoting")
    html = _page(client, url)
    assert 'type="range"' in html and "Debater_A:" in html
    assert "Story" not in html and "story:" not in html.lower().split("you have not read the story")[0][-20:]
    seq = _seq(html)
    for bad in ("150", "-1", "abc", "nan", ""):
        r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "probability": bad})
        assert r.status_code == 400 and "probability" in r.text, bad
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "probability": "70"}, follow_redirects=True)
    assert _status(r.text) == "complete"
    line = re.search(r'<p id="outcome-line">([^<]*)</p>', r.text).group(1)
    assert line.startswith("winner Debater_") and "· winner" not in line  # no stray separator
    (rec,) = list(iter_records(runs_dir / "web-scripted-debate"))
    assert rec.seats["Judge"].agent == "human"
    assert rec.outcome.metrics["probs"]["Debater_A"] == pytest.approx(0.7, abs=1e-6)


def test_start_form_errors(client):
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": "no-such-config"})
    assert r.status_code == 400 and "choose an experiment" in r.text
    r = client.post("/play", data={"csrf": csrf, "config": "scripted-dond", "opponent": "nobody"})
    assert r.status_code == 400 and "unknown opponent" in r.text
    r = client.post("/play", data={"csrf": csrf, "config": "scripted-dond", "instance": "missing"})
    assert r.status_code == 400 and "unknown instance" in r.text
    assert client.post("/play", data={"config": "scripted-dond"}).status_code == 403
    assert client.get("/play/not-a-game").status_code == 404


def test_games_of_one_experiment_share_its_models(app, client):
    for _ in range(2):
        url, csrf = _start(client, config="scripted-dond", opponent="polite")
        html = _page(client, url)
        client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "kind": "message", "text": "hi"})
        _page(client, url)  # the opponent has answered
    pools = app.state.web.pools
    assert list(pools.pool("scripted-dond").loaded()) == ["scripted-negotiator"]  # loaded once, for both
    assert pools.model("scripted-dond", "scripted-negotiator") is pools.model("scripted-dond", "scripted-negotiator")
