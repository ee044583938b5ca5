"""Bad files and bad answers never take a page down: a manifest with wrong types, an episode
line with wrongly typed fields, a torn or non-UTF-8 line are skipped and named (the run reader's
rule, so the table and `iter_records` agree); huge numbers are refused with 422; a failed game
says why; /play offers no experiment that needs a server; a human's forced proposal is stored
once (not `[propose] ([propose] (...`) and so exported."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from conftest import csrf_of

from sparring.records.reader import iter_records, read_run

SCRIPTED_MODELS = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "models" / "scripted.yaml"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_a_manifest_with_wrong_types_leaves_the_runs_list_and_the_run_page_up(client, runs_dir):
    (runs_dir / "big" / "manifest.json").write_text(json.dumps(
        {"status": "done", "counts": {"done": "many", "failed": [1]}, "schedule": "all of them", "created": 5}))
    (runs_dir / "live" / "manifest.json").write_text("[1, 2")
    (runs_dir / "evil" / "config.yaml").write_text("agents: [1, 2]\ngame: debate\n")
    r = client.get("/runs")
    assert r.status_code == 200
    for name in ("big", "evil", "live"):
        assert f'href="/runs/{name}"' in r.text
    assert "counts.done is &#39;many&#39;, expected a whole number" in r.text
    assert "config.yaml: agents is list, expected a mapping" in r.text
    assert "manifest.json: unreadable" in r.text
    page = client.get("/runs/big")
    assert page.status_code == 200 and 'id="problems"' in page.text and "counts.done" in page.text
    assert client.get("/runs/big/progress.json").status_code == 200
    assert client.get("/runs/live/progress.json").json()["status"] == "?"


def _break_lines(run: Path) -> list[str]:
    """Line 2: wrongly typed fields; line 3: not JSON; line 4: an id with non-UTF-8 bytes;
    line 5: a duplicate of line 1's id. Returns the ids of lines 2-4."""
    path = run / "episodes.jsonl"
    lines = _lines(path)
    objs = [json.loads(x) for x in lines[:5]]
    ids = [objs[1]["id"], objs[2]["id"], objs[3]["id"]]
    objs[1]["started_at"], objs[1]["seats"] = "yesterday", "nobody"
    lines[1] = json.dumps(objs[1]).encode() + b"\n"
    lines[2] = lines[2][: len(lines[2]) // 2] + b"\n"
    raw = json.dumps(objs[3]).encode().replace(objs[3]["id"].encode(), b"bad\xff\xfeid", 1)
    lines[3] = raw + b"\n"
    path.write_bytes(b"".join(lines) + json.dumps(objs[0]).encode() + b"\n" + b'{"schema_version": 1, "id": "torn')
    return ids


def test_bad_episode_lines_are_skipped_and_flagged_like_the_run_reader(client, runs_dir):
    run = runs_dir / "evil"
    wrong, torn, _ = _break_lines(run)
    r = client.get("/runs/evil?sort=duration")  # a sorted table summarises every line
    assert r.status_code == 200
    warnings: list[str] = []
    kept = [rec.id for rec in iter_records(run, warnings=warnings)]
    shown = re.findall(r'href="/runs/evil/episodes/([^"?]+)"', r.text)
    assert sorted(shown) == sorted(kept)  # the table and the reader agree on which lines count
    assert f"{len(kept)} episode(s)" in r.text
    for w in warnings:
        if "duplicate" not in w:
            assert w in r.text.replace("&#39;", "'"), w  # each of the reader's warnings, word for word
    assert "episodes.jsonl:2: skipped unreadable record" in r.text
    assert "episodes.jsonl:3: not JSON (a torn last line?)" in r.text
    assert "episodes.jsonl:6: not JSON" in r.text  # the torn tail
    assert client.get("/runs/evil").status_code == 200  # unsorted, too
    assert client.get("/runs/evil/progress.json").json()["done"] == len(kept)
    for bad in (wrong, torn):
        page = client.get(f"/runs/evil/episodes/{bad}")
        assert page.status_code == 422 and "episodes.jsonl:" in page.text and "<html" in page.text
    assert len(read_run(run).episodes) == len(kept)


def test_an_episode_whose_id_holds_non_utf8_bytes_gives_an_html_page(client, runs_dir):
    _break_lines(runs_dir / "evil")
    r = client.get("/runs/evil/episodes/bad%EF%BF%BD%EF%BF%BDid")
    assert r.status_code == 422 and "episodes.jsonl:4" in r.text and "<html" in r.text
    assert client.get("/runs/evil/download/metrics.csv").status_code == 200


def _start(client, config: str, **fields) -> tuple[str, str]:
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": config, **fields}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return r.headers["location"], csrf


def _wait(client, url: str) -> str:
    for _ in range(200):
        html = client.get(url).text
        if 'data-status="waiting"' not in html:
            return html
        time.sleep(0.03)
    raise AssertionError("no turn")


def test_huge_numbers_get_422_with_a_clear_message(client):
    for _ in range(8):  # the seed is random: a scripted opener may end the game before your turn
        url, csrf = _start(client, "scripted-dond", opponent="polite", seat="Player_1")
        m = re.search(r'name="seq" value="(\d+)"', _wait(client, url))
        if m:
            break
    assert m, "no game reached the person's turn"
    seq = m.group(1)
    huge = "9" * 5000
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "kind": "propose", "books": huge, "hats": "0",
                                        "balls": "0"})
    assert r.status_code == 422 and "too large (5000 digits)" in r.text and "int" not in r.text.split("too large")[0][-80:]
    r = client.post(f"{url}/act", data={"csrf": csrf, "seq": huge, "kind": "message", "text": "hi"})
    assert r.status_code == 422 and "turn number is too large" in r.text
    client.post(f"{url}/abandon", data={"csrf": csrf})


def test_play_offers_no_experiment_that_needs_a_server(client):
    html = client.get("/play").text
    assert 'data-config="vllm-tournament"' not in html  # its models are served by vLLM
    assert 'data-config="scripted-dond"' in html


FAILING = """\
models:
  broken:
    backend: scripted
    args: {{mode: cycle, texts: ["[message] hi"]}}
"""


def test_a_failed_game_shows_its_reason(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from sparring.games.negotiation.game import DealOrNoDealGame
    from sparring.web.app import create_app

    cfg = tmp_path / "exp.yaml"
    cfg.write_text(f"name: fails\ngame: dond\ndataset: {{name: dond_generated, args: {{n: 2}}}}\n"
                   f"models_file: {SCRIPTED_MODELS}\nagents:\n  polite: {{role: negotiator, model: scripted-negotiator}}\n")

    def boom(self, state, player, action):
        raise RuntimeError("the referee fell over")

    monkeypatch.setattr(DealOrNoDealGame, "act", boom)
    with TestClient(create_app(tmp_path / "runs", configs=[cfg]), base_url="http://127.0.0.1") as c:
        url, csrf = _start(c, "fails", seat="Player_2")
        html = _wait(c, url)
        if 'name="seq"' in html:  # the human moves first: the game fails on that move
            seq = re.search(r'name="seq" value="(\d+)"', html).group(1)
            c.post(f"{url}/act", data={"csrf": csrf, "seq": seq, "kind": "message", "text": "hello"})
            html = _wait(c, url)
        assert 'data-status="failed"' in html
        assert "the referee fell over" in html and 'id="failure"' in html


PREFILL = """\
name: prefill
game: dond
game_args: {{prefill_proposals: true, propose_after: 2, max_turns: 10}}
dataset: {{name: dond_generated, args: {{n: 2, seed: 1}}}}
models_file: {models}
agents:
  polite: {{role: negotiator, model: scripted-negotiator}}
"""


def test_a_forced_proposal_is_stored_once_and_exported_once(tmp_path):
    from fastapi.testclient import TestClient

    from sparring.train.export import ExportFilters, rows_for
    from sparring.web.app import create_app

    cfg = tmp_path / "exp.yaml"
    cfg.write_text(PREFILL.format(models=SCRIPTED_MODELS))
    runs = tmp_path / "runs"
    with TestClient(create_app(runs, configs=[cfg]), base_url="http://127.0.0.1") as c:
        forced = 0
        for _attempt in range(6):  # the seed is random: a scripted opponent may end a game before
            url, csrf = _start(c, "prefill", seat="Player_1")
            for _ in range(12):
                html = _wait(c, url)
                m = re.search(r'name="seq" value="(\d+)"', html)
                if m is None:
                    break
                if 'name="kind" value="message"' in html:
                    fields = {"kind": "message", "text": "Hello, shall we split?"}
                else:  # only the proposal form: the reply is prefilled with "[propose] ("
                    forced += 1
                    fields = {"kind": "propose", "books": "1", "hats": "0", "balls": "0"}
                c.post(f"{url}/act", data={"csrf": csrf, "seq": m.group(1), **fields})
            if forced:
                break
        assert forced >= 1
    rec = next(r for r in iter_records(runs / "web-prefill") if any(c.assistant_prefix for c in r.calls))
    replies = [f"{call.assistant_prefix}{call.completions[0].text}" for call in rec.calls
               if call.player == "Player_1" and call.completions]
    prefilled = [call for call in rec.calls if call.player == "Player_1" and call.assistant_prefix]
    assert prefilled and all(call.completions[0].text == "1 books, 0 hats, 0 balls)" for call in prefilled)
    assert all("[propose] ([propose]" not in r for r in replies)
    assert any(r == "[propose] (1 books, 0 hats, 0 balls)" for r in replies)
    # the seed is random and a game may end aborted (e.g. no agreement in time): the text is what is tested
    rows = rows_for("sft", [runs / "web-prefill"], ExportFilters(include_aborted=True))
    human = [r for r in rows if r["meta"]["agent"] == "human"]
    text = json.dumps(human)
    assert human and "[propose] ([propose]" not in text and "[propose] (1 books, 0 hats, 0 balls)" in text


def test_the_dond_turn_prompt_keeps_its_line_break_before_the_pool_reminder():
    from sparring.prompts.promptset import prompt_set

    ps = prompt_set("negotiation")
    text = ps.render("turn", 0, turns_left=8, can_propose=True, action_format="text", remind_pool=True,
                     proposal_form="[propose] (x books, y hats, z balls)", pool_counts="(1 books, 2 hats, 3 balls)")
    assert "z balls)\nThe whole pool is [propose] (1 books" in text, text
    plain = ps.render("turn", 0, turns_left=8, can_propose=True, action_format="text", remind_pool=False,
                      proposal_form="[propose] (x books, y hats, z balls)", pool_counts="(1 books, 2 hats, 3 balls)")
    assert plain.endswith("z balls)")
