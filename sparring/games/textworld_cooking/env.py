"""The TextWorldExpress simulator, owned by the game: a pool of environments, one per live episode.

Why a pool: every `TextWorldExpressEnv` is a Java process (~1 s to start, ~80 MB), while a reset
to a new seed takes milliseconds. The runner keeps many episodes live side by side, so each live
episode leases its own environment and gives it back when it ends; the next episode reuses it.
Peak JVM count = peak number of live episodes (`run.max_live`). The pool belongs to one game
object (one run) and is closed with it.
"""

from __future__ import annotations

import shutil
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from sparring.errors import SparringError

GAME_NAME = "cookingworld"
FOLDS: tuple[str, ...] = ("train", "dev", "test")
ENV_STEP_LIMIT = 10_000  # the game enforces its own max_steps; the env's limit must never fire first

JAVA_HINT = ("TextWorld cooking needs Java to run its simulator (TextWorldExpress is a Java program), "
             "and no `java` was found on PATH. Install a Java runtime, e.g. "
             "`apt-get install default-jre-headless`, then run again.")
PACKAGE_HINT = ("TextWorld cooking needs the `textworld-express` package: "
                "pip install 'sparring[textworld]' (or pip install textworld-express)")


def require_java() -> None:
    """Fail with one clear message when no Java runtime is installed."""
    if shutil.which("java") is None:
        raise SparringError(JAVA_HINT)


def env_class() -> Any:
    """`textworld_express.TextWorldExpressEnv`, imported only when a simulator is needed."""
    try:
        from textworld_express import TextWorldExpressEnv
    except ImportError as e:
        raise SparringError(f"{PACKAGE_HINT} ({e})") from None
    return TextWorldExpressEnv


@dataclass
class Lease:
    """One environment lent to one episode; `release` is idempotent (end of game, or the state's
    garbage collection after a failed episode)."""

    env: Any
    pool: EnvPool | None

    def release(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.give_back(self.env)

    def discard(self) -> None:
        """The simulator failed: stop it instead of lending it to the next episode."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.discard(self.env)


class EnvPool:
    """Environments loaded with one `gameParams` string, lent out one per live episode."""

    def __init__(self, params: str):
        self.params = params
        self._free: list[Any] = []
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        # Close every JVM when the game object that owns the pool goes away.
        self._finalizer = weakref.finalize(self, _close_all, self._all)

    @property
    def size(self) -> int:
        """Environments started so far (JVM processes)."""
        return len(self._all)

    def _new_env(self) -> Any:
        require_java()
        cls = env_class()
        try:
            env = cls(envStepLimit=ENV_STEP_LIMIT)
        except Exception as e:  # py4j could not launch or reach the JVM
            if shutil.which("java") is None:
                raise SparringError(JAVA_HINT) from None
            raise SparringError(f"could not start the TextWorldExpress simulator: {type(e).__name__}: {e}") from e
        try:
            env.load(gameName=GAME_NAME, gameParams=self.params)
        except ValueError as e:  # the simulator rejects bad gameParams with a message
            env.close()
            raise SparringError(f"TextWorldExpress rejected gameParams {self.params!r}: {e}") from None
        return env

    def acquire(self) -> Any:
        with self._lock:
            if self._closed:
                raise SparringError("the TextWorld environment pool is closed")
            if self._free:
                return self._free.pop()
        env = self._new_env()
        with self._lock:
            self._all.append(env)
        return env

    def lend(self) -> Lease:
        """An environment for one episode, given back by `Lease.release`."""
        return Lease(self.acquire(), self)

    def give_back(self, env: Any) -> None:
        with self._lock:
            if not self._closed:
                self._free.append(env)

    def discard(self, env: Any) -> None:
        with self._lock:
            if env in self._all:
                self._all.remove(env)  # dropping the last reference stops its JVM

    def seeds(self, fold: str) -> list[int]:
        """The simulator's own seed list for a fold (train / dev / test)."""
        env = self.acquire()
        try:
            get = {"train": env.getValidSeedsTrain, "dev": env.getValidSeedsDev, "test": env.getValidSeedsTest}[fold]
            return [int(s) for s in get()]
        finally:
            self.give_back(env)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._free.clear()
        self._finalizer()


def _close_all(envs: list[Any]) -> None:
    """Drop the pool's references: each `TextWorldExpressEnv` stops its JVM when collected (its
    `__del__` closes it; closing it here as well would make that second close fail noisily)."""
    envs.clear()
