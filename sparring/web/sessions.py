"""Browser sessions: a random id in an HttpOnly cookie, state kept on the server, CSRF tokens.

Each session owns its games; a game id that is not in the session's own table is answered with
404, whoever knows it. Every POST form carries the session's CSRF token (synchronizer token
pattern), compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

COOKIE = "sparring_session"
MAX_SESSIONS = 10_000


@dataclass
class Session:
    id: str
    csrf: str
    games: dict[str, Any] = field(default_factory=dict)  # game id -> PlayGame
    seen: float = field(default_factory=time.time)

    def check_csrf(self, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(str(token), self.csrf)


class Sessions:
    """All sessions of one app (in memory: a restart forgets them, stored games stay)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            s = self._sessions.get(session_id)
            if s is not None:
                s.seen = time.time()
            return s

    def new(self) -> Session:
        s = Session(id=secrets.token_urlsafe(24), csrf=secrets.token_urlsafe(24))
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:  # forget the idlest sessions without live games
                idle = sorted((x for x in self._sessions.values() if not x.games), key=lambda x: x.seen)
                for x in idle[: len(idle) // 2 or 1]:
                    self._sessions.pop(x.id, None)
            self._sessions[s.id] = s
        return s

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())
