"""A stand-in for the Hugging Face Hub on 127.0.0.1: serves model repositories (directories) in the
hub's URL layout and answers as the hub does, so the real `huggingface_hub` client (reached through
its documented `HF_ENDPOINT` variable) downloads, caches and fails exactly as against the hub.

- `GET|HEAD /{repo}/resolve/{revision}/{path}`: the file, with the hub's `X-Repo-Commit` and `ETag`;
  errors carry the hub's `X-Error-Code` (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound).
- `GET /api/models/{repo}[/revision/{revision}]`: model info with its files (`siblings`).
- `GET /api/models/{repo}/tree/{revision}[/{path}]`: the files under a folder.

Every request is recorded (`requests`), so a test can tell whether anything was downloaded.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_API = re.compile(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?/?$")
_TREE = re.compile(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$")


class StandinHub:
    def __init__(self, repos: dict[str, Path], gated: set[str] | frozenset[str] = frozenset()):
        self.repos = {k: Path(v) for k, v in repos.items()}
        self.gated = set(gated)
        self.requests: list[tuple[str, str]] = []
        self.server: http.server.ThreadingHTTPServer | None = None
        self.url = ""

    @staticmethod
    def commit(repo: str) -> str:
        return hashlib.sha1(repo.encode()).hexdigest()  # one fixed revision per repo: "main" or its hash

    def _revision_ok(self, repo: str, revision: str) -> bool:
        return revision in ("main", self.commit(repo))

    def start(self) -> StandinHub:
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _error(self, status: int, code: str, message: str = "") -> None:
                body = json.dumps({"error": message or code}).encode()
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                if message:
                    self.send_header("X-Error-Message", message)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _json(self, data) -> None:
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _repo(self, repo: str, revision: str | None) -> Path | None:
                if repo not in hub.repos:
                    self._error(401, "RepoNotFound", "Repository not found")
                    return None
                if repo in hub.gated:
                    self._error(403, "GatedRepo", "Access to model is restricted")
                    return None
                if revision is not None and not hub._revision_ok(repo, revision):
                    self._error(404, "RevisionNotFound", "Invalid rev id")
                    return None
                return hub.repos[repo]

            def _files(self, root: Path, under: str = "") -> list[Path]:
                base = root / under if under else root
                return sorted(p for p in base.rglob("*") if p.is_file())

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                path = unquote(urlparse(self.path).path)
                hub.requests.append((self.command, path))
                if m := _RESOLVE.match(path):
                    repo, revision, name = m.groups()
                    root = self._repo(repo, revision)
                    if root is None:
                        return
                    file = root / name
                    if not file.is_file():
                        self._error(404, "EntryNotFound", "Entry not found")
                        return
                    data = file.read_bytes()
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", hub.commit(repo))
                    self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Content-Type", "application/octet-stream")
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                elif m := _TREE.match(path):
                    repo, revision, under = m.groups()
                    root = self._repo(repo, revision)
                    if root is None:
                        return
                    if under and not (root / under).is_dir():
                        self._error(404, "EntryNotFound", "Entry not found")
                        return
                    self._json([{"type": "file", "path": str(p.relative_to(root)), "size": p.stat().st_size,
                                 "oid": hashlib.sha1(p.read_bytes()).hexdigest()} for p in self._files(root, under or "")])
                elif m := _API.match(path):
                    repo, revision = m.groups()
                    root = self._repo(repo, revision)
                    if root is None:
                        return
                    self._json({"id": repo, "modelId": repo, "sha": hub.commit(repo), "private": False,
                                "gated": False, "siblings": [{"rfilename": str(p.relative_to(root))}
                                                             for p in self._files(root)]})
                else:
                    self._error(404, "NotFound", "no such endpoint on the stand-in hub")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"  # kept after stop(): nothing answers there
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def downloads(self) -> list[str]:
        return [p for method, p in self.requests if method == "GET" and "/resolve/" in p]
