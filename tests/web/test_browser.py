"""End to end in a real browser (Playwright + the system's chromium): uvicorn on a free port,
one Deal or No Deal game played to a deal, one debate judged and one argued as a debater, by
clicks and typing; the stored episodes are checked, a run's episodes and metrics downloaded,
the replay stepped through, and every page checked on a phone-sized screen (no sideways
scrolling); screenshots saved (into $SPARRING_WEB_SCREENSHOTS too, if set).
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


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
    inner = page.evaluate("window.innerWidth")
    assert width <= inner, f"{page.url}: {width}px wide on a {inner}px screen: {wide}"


def test_downloads_replay_keyboard_and_phone_layout(server, page, tmp_path):
    import csv
    import io
    import json

    base, runs = server
    # a game stored, so there is a run with files
    page.goto(f"{base}/play")
    page.locator('form[data-config="scripted-debate"][data-role="judge"]').get_by_role("button", name="Start").click()
    assert _settle(page) == "your_turn"
    page.get_by_role("button", name="Give verdict").click()
    assert _settle(page) == "complete"
    page.goto(f"{base}/runs/web-scripted-debate")
    with page.expect_download() as info:
        page.locator("#downloads a", has_text="episodes.jsonl").click()
    lines = Path(info.value.path()).read_text().splitlines()
    assert info.value.suggested_filename == "web-scripted-debate-episodes.jsonl"
    assert len(lines) == 1 and json.loads(lines[0])["seats"]["Judge"]["agent"] == "human"
    with page.expect_download() as info:
        page.locator("#downloads a", has_text="metrics.csv").click()
    (row,) = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert row["agent.Judge"] == "human" and row["status"] == "complete"

    # the report, sandboxed in its frame, still shows and its rows lead to the episodes
    from sparring.analysis.report import write_report

    write_report(runs / "web-scripted-debate")
    page.goto(f"{base}/runs/web-scripted-debate")
    page.locator("details.report summary").click()
    frame = page.frame_locator("details.report iframe")
    assert "sparring report" in frame.locator("h1").inner_text()
    assert frame.locator("img").count() == 0 or frame.locator("img").first.evaluate("i => i.naturalWidth") > 0
    agent = frame.locator("a.episodes").first
    name = agent.inner_text()
    agent.click()
    page.wait_for_url(f"**/runs/web-scripted-debate?agent={name}*")
    assert page.locator("#episodes tbody tr").count() == 1

    # the replay, step by step, by keyboard-reachable links
    page.locator("#episodes tbody a").first.click()
    page.get_by_role("link", name="replay").click()
    n = int(page.locator("#replay p.muted").inner_text().split(" of ")[1].rstrip("."))
    assert n >= 2 and "step 1 of" in page.locator("#replay p.muted").inner_text()
    for _ in range(n - 1):
        page.locator("#replay-next").click()
    assert page.locator("#replay .msg").count() == n and page.locator("#replay-next").count() == 0
    assert page.locator("#replay-outcome").is_visible()
    page.keyboard.press("Tab")  # the first stop is the skip link
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main"

    # a phone: nothing scrolls sideways
    page.set_viewport_size({"width": 360, "height": 740})
    episode_url = page.url.split("?")[0]
    for url in (f"{base}/runs", f"{base}/runs/web-scripted-debate", f"{episode_url}?view=everything",
                f"{episode_url}?view=Judge", f"{base}/play"):
        page.goto(url)
        _no_sideways_scroll(page)
    _shot(page, tmp_path, "web-phone-play.png")
    page.locator('form[data-config="e2e-dond"]').get_by_role("button", name="Start").click()
    assert _settle(page) == "your_turn"
    _no_sideways_scroll(page)
    page.locator("#message-text").fill("Hi")
    page.get_by_role("button", name="Send").click()
    _settle(page)
    _no_sideways_scroll(page)
    _shot(page, tmp_path, "web-phone-dond.png")
