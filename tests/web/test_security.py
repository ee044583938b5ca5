"""What another local user or a malicious web page could try: files outside a run through
symlinks, experiment names that are paths, DNS rebinding (a foreign Host header), a report that
runs scripts or reaches the app, and bodies the forms never send."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import csrf_of

from sparring.web.play import run_slug

SECRET = "root:x:0:0:secret-of-the-machine"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    (d / "passwd").write_text(SECRET)
    (d / "report.html").write_text(f"<p>{SECRET}</p>")
    return d


def test_a_symlinked_report_folder_serves_nothing_outside_the_run(client, runs_dir, outside):
    os.symlink(outside, runs_dir / "big" / "report")
    for url in ("/runs/big/report/passwd", "/runs/big/report/", "/runs/big/report/report.html"):
        r = client.get(url)
        assert r.status_code == 404 and SECRET not in r.text, url
    assert client.get("/runs/big/report/%2Fetc%2Fpasswd").status_code == 404
    assert "/runs/big/report/" not in client.get("/runs/big").text  # no report offered


def test_a_symlinked_file_in_a_report_or_an_episodes_file_is_not_served(client, runs_dir, outside):
    report = runs_dir / "evil" / "report"
    report.mkdir()
    (report / "report.html").write_text("<h1>ok</h1>")
    os.symlink(outside / "passwd", report / "passwd")
    assert client.get("/runs/evil/report/").status_code == 200
    assert client.get("/runs/evil/report/passwd").status_code == 404
    (runs_dir / "live" / "episodes.jsonl").unlink()
    os.symlink(outside / "passwd", runs_dir / "live" / "episodes.jsonl")
    r = client.get("/runs/live/download/episodes.jsonl")
    assert r.status_code == 404 and SECRET not in r.text


def test_a_run_directory_that_is_a_symlink_is_shown_with_its_report(client, runs_dir, tmp_path):
    """Decided: a run directory may itself be a symlink (a run kept on a shared disk); its
    files are served as long as they resolve inside that run's own directory."""
    shared = tmp_path / "shared-disk"
    shared.mkdir()
    (runs_dir / "big").rename(shared / "big")
    os.symlink(shared / "big", runs_dir / "linked")
    (shared / "big" / "report").mkdir()
    (shared / "big" / "report" / "report.html").write_text("<h1>shared report</h1>")
    assert 'href="/runs/linked"' in client.get("/runs").text
    assert client.get("/runs/linked/report/").text == "<h1>shared report</h1>"
    assert client.get("/runs/linked/download/episodes.jsonl").status_code == 200


def test_the_report_has_a_strict_csp_and_a_sandboxed_frame(client, runs_dir):
    (runs_dir / "big" / "report").mkdir()
    (runs_dir / "big" / "report" / "report.html").write_text("<script>alert(1)</script>")
    r = client.get("/runs/big/report/")
    csp = r.headers["content-security-policy"]
    assert "sandbox" in csp and "default-src 'none'" in csp and "script-src" not in csp
    page = client.get("/runs/big").text
    assert '<iframe src="/runs/big/report/"' in page
    assert 'sandbox="allow-popups allow-top-navigation-by-user-activation"' in page
    assert "allow-scripts" not in page and "allow-same-origin" not in page


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "10.0.0.7"])
def test_a_foreign_host_header_is_refused(app, host):
    from fastapi.testclient import TestClient

    c = TestClient(app, base_url=f"http://{host}")
    for url in ("/runs", "/play", "/runs/big/download/episodes.jsonl"):
        r = c.get(url)
        assert r.status_code == 421 and "--allow-host" in r.text, (host, url)
        assert "set-cookie" not in r.headers
    assert c.post("/play", data={"config": "scripted-dond"}).status_code == 421


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:8000", "LOCALHOST"])
def test_loopback_names_are_accepted(app, host):
    from fastapi.testclient import TestClient

    assert TestClient(app, base_url=f"http://{host}").get("/runs").status_code == 200


def test_allow_host_adds_names(runs_dir):
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    app = create_app(runs_dir, allow_hosts=["box.lan", "[fd00::5]"])
    assert TestClient(app, base_url="http://box.lan:8000").get("/runs").status_code == 200
    assert TestClient(app, base_url="http://[fd00::5]:80").get("/runs").status_code == 200
    assert TestClient(app, base_url="http://other.lan").get("/runs").status_code == 421


def test_serve_accepts_its_bound_host_and_allow_host(monkeypatch, tmp_path):
    import uvicorn
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from sparring.cli.root import app

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda a, **kw: calls.append(a))
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "runs"), "--host", "192.168.1.5",
                                      "--allow-host", "box.lan"])
    assert result.exit_code == 0, result.output
    for host, status in (("192.168.1.5:8000", 200), ("box.lan", 200), ("localhost", 200), ("evil.example", 421)):
        assert TestClient(calls[0], base_url=f"http://{host}").get("/runs").status_code == status, host


@pytest.mark.parametrize("name", ["x/../../../escaped", "../up", "with space", "naïve été", "a\\b", ".."])
def test_run_slug_is_one_safe_folder_name(name):
    slug = run_slug(name)
    assert slug.isascii() and "/" not in slug and "\\" not in slug and ".." not in slug and " " not in slug
    assert slug not in ("", ".", "..") and run_slug(name) == slug
    assert run_slug("dond-quickstart") == "dond-quickstart"
    assert run_slug("a b") != run_slug("a-b")  # changed names carry a hash: no collisions


SCRIPTED_MODELS = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "models" / "scripted.yaml"
DOND = """\
name: {name}
game: dond
dataset: {{name: dond_generated, args: {{n: 3, seed: 1}}}}
models_file: {models}
agents:
  bot: {{role: negotiator, model: scripted-negotiator}}
"""


@pytest.mark.parametrize("name", ["x/../../../escaped", "spaces and ünïcode"])
def test_an_experiment_name_that_is_a_path_stays_inside_the_runs_dir(tmp_path, name):
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    cfg = tmp_path / "cfgs" / "exp.yaml"
    cfg.parent.mkdir()
    cfg.write_text(DOND.format(name=f'"{name}"', models=SCRIPTED_MODELS))
    runs = tmp_path / "a" / "b" / "runs"
    app = create_app(runs, configs=[cfg])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        csrf = csrf_of(c.get("/play").text)
        r = c.post("/play", data={"csrf": csrf, "config": name}, follow_redirects=False)
        assert r.status_code == 303, r.text
        c.post(f"{r.headers['location']}/abandon", data={"csrf": csrf})
        made = [p for p in runs.iterdir()]
        assert len(made) == 1 and made[0].name.startswith("web-")
        assert not (tmp_path / "escaped").exists() and not (tmp_path / "a" / "escaped").exists()
        assert not any(p.name == "escaped" for p in tmp_path.rglob("escaped"))
        listing = c.get("/runs").text
        assert f'/runs/{made[0].name}"' in listing
        assert c.get(f"/runs/{made[0].name}").status_code == 200


def test_runs_with_spaces_and_non_ascii_names_are_listed_and_open(client, runs_dir):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic import write_run

    write_run(runs_dir / "my run", 2, seed=4)
    write_run(runs_dir / "débat été", 2, seed=5)
    page = client.get("/runs").text
    assert 'href="/runs/my%20run"' in page and 'href="/runs/d%C3%A9bat%20%C3%A9t%C3%A9"' in page
    assert client.get("/runs/my%20run").status_code == 200
    r = client.get("/runs/d%C3%A9bat%20%C3%A9t%C3%A9")
    assert r.status_code == 200 and "2 episode(s)" in r.text
    ep = client.get("/runs/my%20run/episodes/ep000000")
    assert ep.status_code == 200


def _post(client, body: bytes, ctype: str = "application/x-www-form-urlencoded"):
    return client.post("/play", content=body, headers={"content-type": ctype})


def test_bodies_the_forms_never_send_get_their_own_status(client):
    csrf = csrf_of(client.get("/play").text)
    big = _post(client, b"csrf=" + csrf.encode() + b"&text=" + b"a" * (300 * 1024))
    assert big.status_code == 413 and "too large" in big.text
    bad = _post(client, b"csrf=" + csrf.encode() + b"&text=\xff\xfe")
    assert bad.status_code == 400 and "UTF-8" in bad.text
    multi = _post(client, b"--x\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf.encode() + b"\r\n--x--",
                  "multipart/form-data; boundary=x")
    assert multi.status_code == 415 and "x-www-form-urlencoded" in multi.text
    assert _post(client, b'{"csrf": "x"}', "application/json").status_code == 415
    assert _post(client, b"csrf=nope&config=scripted-dond").status_code == 403  # still the CSRF check


def test_a_run_folder_whose_name_is_not_utf8_is_listed_without_breaking_the_page(client, runs_dir):
    bad = os.path.join(os.fsencode(runs_dir), b"old-run-\xff")
    os.mkdir(bad)
    with open(os.path.join(bad, b"manifest.json"), "w") as f:
        f.write('{"status": "done"}')
    r = client.get("/runs")
    assert r.status_code == 200 and "old-run-\ufffd" in r.text and "not UTF-8" in r.text
    assert 'href="/runs/big"' in r.text
