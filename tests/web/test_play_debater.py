"""A person as a debater (or the consultant) against a model, judged by the experiment's judge
model: the person's speeches are what the engine stores, the judge's verdict is the outcome, and
the debater's page shows the story, the question, their answer and the speeches so far, never
the judge's private reasoning nor the other side's hidden (not yet revealed) speech."""

from __future__ import annotations

import html as htmllib
import json
import re
import time
from pathlib import Path

import pytest
from conftest import csrf_of

from sparring.analysis.report import write_report
from sparring.records.reader import iter_records
from sparring.train.export import ExportFilters, rows_for

MODELS = """\
models:
  t-opponent:
    backend: scripted
    args: {mode: fixed, text: "OPPONENT-SPEECH: the story plainly supports my answer."}
  t-judge:
    backend: scripted
    args: {mode: fixed, text: "JUDGE-PRIVATE-REASONING weighs both.", score_mode: fixed, scores: {" A": 4, " B": 1}}
"""

CONFIG = """\
name: {name}
game: debate
game_args: {game_args}
dataset: {{name: generated, split: test, limit: 2, args: {{people: 2, filler_sentences: 0}}}}
models_file: models.yaml
agents:
  {agents}
  judge: {{role: judge, model: t-judge}}
tournament: {{type: self_play, participants: [{first}], judges: [judge]}}
"""


def _write(tmp_path: Path, name: str, game_args: str, agents: dict[str, str]) -> Path:
    (tmp_path / "models.yaml").write_text(MODELS)
    body = "\n  ".join(f"{a}: {{role: debater, model: {m}}}" for a, m in agents.items())
    path = tmp_path / f"{name}.yaml"
    path.write_text(CONFIG.format(name=name, game_args=game_args, agents=body, first=next(iter(agents))))
    return path


@pytest.fixture
def debate_client(tmp_path):
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    configs = [_write(tmp_path, "t-debate", "{format: debate, rounds: 2, order: simultaneous, judge_reasoning: true}",
                      {"opp": "t-opponent"}),
               _write(tmp_path, "t-consult", "{format: consultancy, rounds: 1}", {"consultant": "t-opponent"})]
    runs = tmp_path / "runs"
    app = create_app(runs, configs=configs)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c, runs, app


def _status(html: str) -> str:
    return re.search(r'id="game-status" data-status="(\w+)"', html).group(1)


def _seq(html: str) -> str | None:
    m = re.search(r'name="seq" value="(\d+)"', html)
    return m.group(1) if m else None


def _page(client, url) -> str:
    for _ in range(100):
        html = client.get(url).text
        if _status(html) != "waiting":
            return html
        time.sleep(0.05)
    raise AssertionError("the engine never reached the person's turn")


def test_play_page_offers_the_seats_of_each_role(debate_client):
    client, _, _ = debate_client
    html = client.get("/play").text
    assert 'data-config="t-debate" data-role="judge"' in html and 'data-config="t-debate" data-role="debater"' in html
    form = html[html.index('data-config="t-debate" data-role="debater"'):]
    form = form[:form.index("</form>")]
    assert '<option value="Debater_A">' in form and '<option value="Debater_B">' in form and "judged by judge" in form
    assert "the <strong>consultant</strong>" in html


def test_debate_as_a_debater_against_a_model(debate_client):
    client, runs, app = debate_client
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": "t-debate", "role": "debater", "seat": "Debater_B",
                                   "opponent": "opp"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    first = _page(client, url)
    assert _status(first) == "your_turn" and 'id="text-form"' in first
    assert "You are <strong>Debater_B</strong> (debater)" in first
    (inst,) = [g.instance for s in app.state.web.sessions.all() for g in s.games.values()]
    text = htmllib.unescape(first)
    assert inst.question in text and inst.background.split(".")[0] in text  # the story and the question
    assert inst.answers[0] in text and inst.answers[1] in text
    # simultaneous round 1: the opponent's speech is not revealed before the person has spoken
    assert "OPPONENT-SPEECH" not in first
    client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(first), "text": "HUMAN-SPEECH-ONE <b>trust me</b>"})
    second = _page(client, url)
    assert _status(second) == "your_turn"
    assert "OPPONENT-SPEECH" in second and "HUMAN-SPEECH-ONE &lt;b&gt;" in second
    client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(second), "text": "HUMAN-SPEECH-TWO"})
    end = _page(client, url)
    assert _status(end) == "complete"
    for page in (first, second, end):
        assert "JUDGE-PRIVATE-REASONING" not in page
    (rec,) = list(iter_records(runs / "web-t-debate-debater"))
    assert rec.seats["Debater_B"].agent == "human" and rec.seats["Debater_B"].model == "web-human"
    assert rec.seats["Debater_A"].agent == "opp" and rec.seats["Judge"].agent == "judge"
    speeches = [e.content for e in rec.events if e.player == "Debater_B" and e.tag == "speech"]
    assert speeches == ["HUMAN-SPEECH-ONE <b>trust me</b>", "HUMAN-SPEECH-TWO"]
    assert any(e.tag == "reasoning" and e.visible_to == ["Judge"] for e in rec.events)
    # the judge's verdict (0.8 on Debater_A) is the outcome
    assert rec.outcome.status == "complete" and rec.outcome.winner == "Debater_A"
    assert rec.outcome.metrics["probs"]["Debater_A"] == pytest.approx(0.8)
    assert rec.outcome.rewards["Debater_B"] == pytest.approx(0.2)
    assert "Your reward: <strong>0.20</strong>" in end
    # what the person was shown is stored as their seat's model calls, exactly
    mine = [c for c in rec.calls if c.player == "Debater_B"]
    assert [c.completions[0].text for c in mine] == speeches
    assert all("JUDGE-PRIVATE-REASONING" not in m.content for c in mine for m in c.messages)
    assert client.get(f"/runs/web-t-debate-debater/episodes/{rec.id}?view=Debater_B").status_code == 200


def test_consultancy_as_the_consultant(debate_client):
    client, runs, _ = debate_client
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": "t-consult", "role": "debater"}, follow_redirects=False)
    url = r.headers["location"]
    html = _page(client, url)
    assert "You are <strong>Consultant</strong>" in html
    client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "text": "CONSULTANT-SPEECH"})
    assert _status(_page(client, url)) == "complete"
    (rec,) = list(iter_records(runs / "web-t-consult-debater"))
    assert rec.seats["Consultant"].agent == "human" and rec.seats["Judge"].agent == "judge"
    assert [e.content for e in rec.events if e.tag == "speech"] == ["CONSULTANT-SPEECH"]
    assert rec.outcome.metrics["probs"]["Answer_A"] == pytest.approx(0.8)


def test_abandoned_debate_is_an_aborted_episode(debate_client):
    client, runs, _ = debate_client
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": "t-debate", "role": "debater", "opponent": "opp"},
                    follow_redirects=False)
    url = r.headers["location"]
    html = _page(client, url)
    client.post(f"{url}/act", data={"csrf": csrf, "seq": _seq(html), "text": "ONLY-SPEECH"})
    _page(client, url)
    assert _status(client.post(f"{url}/abandon", data={"csrf": csrf}).text) == "abandoned"
    (rec,) = list(iter_records(runs / "web-t-debate-debater"))
    assert rec.status == "aborted" and rec.outcome.metrics["abandoned"] is True
    assert "abandoned by the human player" in rec.outcome.reason
    assert "ONLY-SPEECH" in [e.content for e in rec.events]
    # reports list it (never rated) and exporters read it, the unanswered turn left out
    report = write_report(runs / "web-t-debate-debater", plots=False)
    stats = json.loads((report.parent / "stats.json").read_text())
    assert stats["counts"]["aborted"] == 1 and stats["counts"]["abandoned"] == 1 and stats["counts"]["rated"] == 0
    rows = rows_for("sft", [runs / "web-t-debate-debater"], ExportFilters(include_aborted=True))
    assert [r["messages"][-1]["content"] for r in rows if r["meta"].get("agent") == "human"] == ["ONLY-SPEECH"]


def test_a_role_the_game_does_not_offer_is_refused(debate_client):
    client, _, _ = debate_client
    csrf = csrf_of(client.get("/play").text)
    r = client.post("/play", data={"csrf": csrf, "config": "t-debate", "role": "negotiator"})
    assert r.status_code == 400 and "cannot play" in r.text
