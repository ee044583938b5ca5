"""Data sparring does not ship: `sparring data fetch` against a local file server (a mirror of the
reference files), the checksum check, nothing half-written, archives unpacked, and the one clear
message when a file is nowhere."""

from __future__ import annotations

import http.server
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from sparring.datafiles import CATALOG, cached_path, fetch, resolve
from sparring.errors import ConfigError, SparringError

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "dond"


@pytest.fixture()
def mirror(tmp_path):
    """A file server on 127.0.0.1 over a folder of the test's own (copies made here, not in the repo)."""
    root = tmp_path / "mirror"
    root.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARRING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARRING_DATA_DIR", raising=False)
    return tmp_path / "cache"


@pytest.mark.skipif(not (SHARED / "val.txt").is_file(), reason="needs ../shared/data/dond")
def test_fetch_checks_the_pinned_checksum_and_keeps_the_file_in_the_cache(mirror, cache):
    root, url = mirror
    shutil.copy(SHARED / "val.txt", root / "val.txt")
    path = fetch("dond-val", url=f"{url}/val.txt")
    assert path == cached_path("dond-val") and path.read_bytes() == (SHARED / "val.txt").read_bytes()
    assert resolve("dond-val") == path  # later uses find it without an option
    (root / "val.txt").unlink()
    assert fetch("dond-val", url=f"{url}/val.txt") == path  # cached: nothing is downloaded again


def test_a_file_with_another_checksum_is_refused_and_nothing_is_left(mirror, cache):
    root, url = mirror
    (root / "val.txt").write_text("not the dialogues\n")
    with pytest.raises(SparringError, match=r"has SHA-256 [0-9a-f]{64}, expected 6e61cdbb.*--sha256"):
        fetch("dond-val", url=f"{url}/val.txt")
    folder = cached_path("dond-val").parent
    assert not cached_path("dond-val").exists() and not list(folder.glob("*.part"))


def test_a_missing_file_on_the_server_is_a_clear_error(mirror, cache):
    _, url = mirror
    with pytest.raises(SparringError, match="cannot fetch dond-test from .*: HTTP 404"):
        fetch("dond-test", url=f"{url}/nothing.txt")


def test_an_archive_is_unpacked_into_its_folder(mirror, cache):
    root, url = mirror
    with zipfile.ZipFile(root / "q.zip", "w") as z:
        z.writestr("QuALITY.v1.0.1/QuALITY.v1.0.1.htmlstripped.dev", '{"article_id": "1"}\n')
    path = fetch("quality", url=f"{url}/q.zip")
    assert path.is_dir() and (path / "QuALITY.v1.0.1.htmlstripped.dev").read_text().startswith('{"article_id"')
    assert CATALOG["quality"].sha256 is None  # not pinned: its checksum is printed, --sha256 checks it


def test_missing_data_names_the_option_the_variable_and_the_fetch_command(cache, tmp_path, monkeypatch):
    with pytest.raises(SparringError, match=r"give --dond-data PATH, or set SPARRING_DATA_DIR to a folder "
                                            r"holding data.txt, or fetch it once with `sparring data fetch "
                                            r"dond-dialogues`"):
        resolve("dond-dialogues", None, "--dond-data PATH")
    with pytest.raises(ConfigError, match="does not exist") as err:
        resolve("dond-dialogues", tmp_path / "nowhere.txt", "--dond-data")
    assert err.value.key == "--dond-data"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "data.txt").write_text("x")
    assert resolve("dond-dialogues", tmp_path / "d") == tmp_path / "d" / "data.txt"  # a folder holding it
    monkeypatch.setenv("SPARRING_DATA_DIR", str(tmp_path / "d"))
    assert resolve("dond-dialogues") == tmp_path / "d" / "data.txt"


def test_the_cli_lists_fetches_and_finds(mirror, cache):
    from typer.testing import CliRunner

    from sparring.cli.root import app

    root, url = mirror
    (root / "t.txt").write_text("tiny\n")
    runner = CliRunner()
    listed = runner.invoke(app, ["data", "list"])
    assert listed.exit_code == 0 and "dond-dialogues" in listed.output and "CC BY-NC 4.0" in listed.output
    bad = runner.invoke(app, ["data", "path", "dond-test"])
    assert bad.exit_code != 0
    got = runner.invoke(app, ["data", "fetch", "dond-test", "--url", f"{url}/t.txt", "--sha256",
                              "b7de2d0d2a5e0a54e1b2d8e6b8d8e4b1a0d1f3c4e5f6a7b8c9d0e1f2a3b4c5d6"])
    assert got.exit_code != 0  # the given checksum does not match
    import hashlib

    digest = hashlib.sha256(b"tiny\n").hexdigest()
    got = runner.invoke(app, ["data", "fetch", "dond-test", "--url", f"{url}/t.txt", "--sha256", digest])
    assert got.exit_code == 0, got.output
    found = runner.invoke(app, ["data", "path", "dond-test"])
    assert found.exit_code == 0 and found.output.strip().endswith("test.txt")
