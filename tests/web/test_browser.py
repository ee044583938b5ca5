"""End to end in a real browser (Playwright + the system's chromium): uvicorn on a free port,
one Deal or No Deal game played to a deal, one debate judged and one argued as a debater, by
clicks and typing; the
stored episodes are checked and screenshots saved (into $SPARRING_WEB_SCREENSHOTS too, if set).
Skipped when playwright or chromium is missing."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)

GENEROUS = """\
models:
  generous:
    backend: scripted
    args:
      mode: cycle
      cycle_by: turn
      texts: ["[message] Hello! Tell me what you would like.", {proposals}]
"""
CONFIG = """\
name: e2e-dond
description: A generous scripted negotiator that leaves you everything.
game: dond
game_args: {{max_turns: 10}}
dataset: {{name: dond_generated, args: {{n: 4, seed: 3}}}}
models_file: models.yaml
agents:
  generous: {{role: negotiator, model: generous}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path):
    import uvicorn

    from sparring.web.app import create_app

    proposals = ", ".join(['"[propose] (0 books, 0 hats, 0 balls)"'] * 12)
    (tmp_path / "models.yaml").write_text(GENEROUS.format(proposals=proposals))
    (tmp_path / "e2e.yaml").write_text(CONFIG.format())
    runs = tmp_path / "runs"
    app = create_app(runs, configs=[tmp_path / "e2e.yaml"])
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", runs
    srv.should_exit = True
    thread.join(timeout=15)


@pytest.fixture
def page(tmp_path: Path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        yield page
        browser.close()


def _shot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    out = os.environ.get("SPARRING_WEB_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(out) / name)


def _settle(page) -> str:
    """Wait until it is the person's turn or the game is over; returns the status."""
    page.wait_for_selector("#your-turn, #result", timeout=15_000)
    return page.locator("#game-status").get_attribute("data-status") or ""


def test_play_dond_to_a_deal_and_judge_a_debate(server, page, tmp_path):
    from sparring.records.reader import iter_records

    base, runs = server
    page.goto(f"{base}/play")
    form = page.locator('form[data-config="e2e-dond"]')
    form.locator('select[name="seat"]').select_option("Player_2")
    form.get_by_role("button", name="Start").click()
    assert _settle(page) == "your_turn"
    pool = {row.locator("td").nth(0).inner_text(): int(row.locator("td").nth(1).inner_text())
            for row in page.locator("#your-values tbody tr").all()}
    assert set(pool) == {"books", "hats", "balls"}
    page.locator("#message-text").fill("Hi <b>there</b>! I would love to have everything.")
    _shot(page, tmp_path, "web-play-dond.png")
    page.get_by_role("button", name="Send").click()
    for _ in range(6):
        if _settle(page) != "your_turn":
            break
        for item, n in pool.items():  # propose to keep the whole pool (typing selects "propose")
            page.locator(f'#move-form input[name="{item}"]').fill(str(n))
        page.get_by_role("button", name="Send").click()
    assert page.locator("#game-status").get_attribute("data-status") == "complete"
    assert "deal" in page.locator("#result").inner_text()
    (rec,) = list(iter_records(runs / "web-e2e-dond"))
    assert rec.outcome.metrics["deal"] is True and rec.seats["Player_2"].agent == "human"
    assert rec.outcome.rewards["Player_2"] == 10
    page.locator("#stored-link").click()
    page.wait_for_selector("nav.tabs")
    assert "Hi <b>there</b>!" in page.locator(".transcript").inner_text()  # shown as text, not markup
    _shot(page, tmp_path, "web-episode.png")

    # a debate as the judge
    page.goto(f"{base}/play")
    page.locator('form[data-config="scripted-debate"][data-role="judge"]').get_by_role("button", name="Start").click()
    assert _settle(page) == "your_turn"
    assert "Debater_A" in page.locator("#shown").inner_text()
    page.locator("#probability").fill("80")
    assert page.locator("#prob-out").inner_text() == "80"
    _shot(page, tmp_path, "web-play-judge.png")
    page.get_by_role("button", name="Give verdict").click()
    assert _settle(page) == "complete"
    (judged,) = list(iter_records(runs / "web-scripted-debate"))
    assert judged.outcome.metrics["probs"]["Debater_A"] == pytest.approx(0.8)

    # a debate as a debater (seat B) against a scripted debater, the scripted judge deciding
    page.goto(f"{base}/play")
    form = page.locator('form[data-config="scripted-debate"][data-role="debater"]')
    form.locator('select[name="seat"]').select_option("Debater_B")
    form.get_by_role("button", name="Start").click()
    assert _settle(page) == "your_turn"
    shown = page.locator("#system-prompt").inner_text()  # the prompt variant varies per game
    assert "Your answer:" in shown or "You argue that the answer is:" in shown
    page.locator("#reply-text").fill("The story says so: <quote>lives in</quote>. My answer <b>stands</b>.")
    _shot(page, tmp_path, "web-play-debater.png")
    page.get_by_role("button", name="Send").click()
    assert _settle(page) == "complete"
    (argued,) = list(iter_records(runs / "web-scripted-debate-debater"))
    assert argued.seats["Debater_B"].agent == "human" and argued.outcome.winner in ("Debater_A", "Debater_B")
    assert any(e.player == "Debater_B" and "<b>stands</b>" in e.content for e in argued.events)

    # browsing: the runs list and the run page show the stored games
    page.goto(f"{base}/runs")
    assert "web-e2e-dond" in page.locator("#runs").inner_text()
    page.goto(f"{base}/runs/web-scripted-debate")
    assert page.locator("#episodes tbody tr").count() == 1
