"""Games a person plays in the browser: an engine episode in a background thread per game.

The person's seat is an agent `human` whose model is a `WebHuman`; every other seat plays with
the experiment's own models through the in-memory play API (`Arena`), so turn order, visibility,
corrections and the record are exactly those of `sparring run`. Each game of an experiment is
stored in `RUNS_DIR/web-<experiment>/` through the normal `RunStore` (one store per run directory
per app, shared by every session under a lock); an abandoned game is stored as a failed record
whose error starts with "Abandoned".
"""

from __future__ import annotations

import copy
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.config_io import read_yaml
from sparring.engine.config import ExperimentConfig, config_hash, open_store
from sparring.engine.episode import EpisodeJob
from sparring.engine.instances import load_instances
from sparring.engine.loader import available_configs, config_from_data, resolve
from sparring.engine.play import Arena
from sparring.errors import ConfigError, SparringError
from sparring.models.spec import ModelSpec
from sparring.records.record import EpisodeRecord
from sparring.records.store import Redactor, RunStore
from sparring.web.human import PendingTurn, WebHuman
from sparring.web.pools import GamePool, SharedPools

HUMAN_AGENT = "human"
HUMAN_MODEL = "web-human"
# The seat a person takes in each game that has a play page (game -> role).
HUMAN_ROLES = {"dond": "negotiator", "debate": "judge"}
MAX_GAMES_PER_SESSION = 4


@dataclass
class ConfigChoice:
    """An experiment config a game can be started from."""

    name: str
    path: Path
    game: str
    description: str
    opponents: list[str]  # agents that can fill the other competing seats

    @property
    def role(self) -> str:
        return HUMAN_ROLES[self.game]


def _choice(name: str, path: Path) -> ConfigChoice | None:
    try:
        raw = read_yaml(path)
    except SparringError:
        return None
    if not isinstance(raw, dict):
        return None
    game = {"deal_or_no_deal": "dond"}.get(str(raw.get("game", "")), str(raw.get("game", "")))
    if game not in HUMAN_ROLES:
        return None
    competing = "negotiator" if game == "dond" else "debater"
    agents: dict[str, Any] = raw["agents"] if isinstance(raw.get("agents"), dict) else {}
    opponents = [a for a, c in agents.items() if isinstance(c, dict) and c.get("role") == competing]
    if not opponents:
        return None
    return ConfigChoice(name=str(raw.get("name") or name), path=path, game=game,
                        description=str(raw.get("description") or ""), opponents=opponents)


def config_choices(extra: list[Path] | None = None) -> dict[str, ConfigChoice]:
    """Shipped (and ./configs/experiments) configs of playable games, then `extra` files."""
    out: dict[str, ConfigChoice] = {}
    for path in list(extra or []):
        choice = _choice(path.stem, path)
        if choice is None:
            raise ConfigError("not a playable experiment (a dond or debate config with agents)", file=str(path))
        out[choice.name] = choice
    for name, path in available_configs().items():
        choice = _choice(name, path)
        if choice is not None:
            out.setdefault(choice.name, choice)
    return out


def web_config(choice: ConfigChoice) -> dict[str, Any]:
    """The experiment a web run stores: the chosen config plus the person's agent. The same for
    every game of an experiment, so all its games share one run directory."""
    raw = read_yaml(choice.path)
    raw = copy.deepcopy(raw if isinstance(raw, dict) else {})
    raw["name"] = choice.name
    raw.pop("branch", None)
    agents = dict(raw.get("agents") or {})
    agents[HUMAN_AGENT] = {"role": choice.role, "model": HUMAN_MODEL}
    raw["agents"] = agents
    if choice.role == "judge":
        raw["tournament"] = {"type": "round_robin", "participants": choice.opponents, "self_pairs": True,
                             "judges": [HUMAN_AGENT]}
    else:
        raw["tournament"] = {"type": "round_robin", "participants": [HUMAN_AGENT, *choice.opponents]}
    raw["run"] = {**(raw.get("run") or {}), "max_live": 1, "workers": 1}
    return raw


class WebStores:
    """The run directories web games are stored in, each opened once by this app."""

    def __init__(self) -> None:
        self._stores: dict[Path, RunStore] = {}
        self._lock = threading.Lock()

    def open(self, run_dir: Path, config: ExperimentConfig, redact: Redactor | None = None) -> None:
        with self._lock:
            store = self._stores.get(run_dir)
            if store is None:
                store = self._stores[run_dir] = open_store(run_dir, config, redact=redact)
                store.write_manifest(status="open", source="web")
            elif store.hash != config_hash(config):
                raise ConfigError(f"{run_dir} holds games of another version of this experiment; "
                                  "restart the server to store them in their own run directory")

    def save(self, run_dir: Path, record: EpisodeRecord) -> None:
        with self._lock:
            store = self._stores[run_dir]
            (store.add_failed if record.status == "failed" else store.add_done)(record)
            store.commit()
            store.write_manifest(status="open", source="web")

    def repeats(self, run_dir: Path) -> int:
        with self._lock:
            store = self._stores.get(run_dir)
            return 0 if store is None else len(store.done) + len(store.failed)

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close(status="closed")
            self._stores.clear()


@dataclass
class PlayGame:
    """One game in progress (or finished) in one session."""

    id: str
    choice: ConfigChoice
    player: str  # the person's seat (game player id)
    job: EpisodeJob
    human: WebHuman
    run_dir: Path
    instance: Any
    roles: dict[str, str]
    done: threading.Event = field(default_factory=threading.Event)
    record: EpisodeRecord | None = None
    error: str | None = None
    history: list[PendingTurn] = field(default_factory=list)  # turns answered so far (what was shown)
    action_format: str = "text"

    @property
    def status(self) -> str:
        if self.done.is_set():
            if self.record is None:
                return "failed"
            if self.record.status == "failed":
                return "abandoned" if (self.record.error or "").startswith("Abandoned") else "failed"
            return self.record.status  # complete | aborted
        return "your_turn" if self.human.current() is not None else "waiting"

    def pending(self) -> PendingTurn | None:
        return None if self.done.is_set() else self.human.current()

    def submit(self, seq: int, answer: Any) -> None:
        turn = self.human.current()
        self.human.submit(seq, answer)
        if turn is not None:
            self.history.append(turn)

    def settle(self, seen_seq: int, timeout: float = 3.0) -> None:
        """Give the engine a moment to reach the next human turn or the end (fast models)."""
        self.human.wait_change(seen_seq, timeout, self.done)


def _arena(choice: ConfigChoice, pools: SharedPools, human: WebHuman) -> Arena:
    """The game's arena: the experiment resolved, its models and instances shared with the
    other games of the experiment, the person's seat played by `human`."""
    cfg, path = config_from_data(web_config(choice), choice.path.parent / f"{choice.name}.yaml")
    exp = resolve(cfg, path, extra_specs={HUMAN_MODEL: ModelSpec(name=HUMAN_MODEL, backend="injected")})
    pools.ensure(choice.name, exp.specs, skip=HUMAN_MODEL)
    instances = pools.instances(choice.name, lambda: load_instances(exp))
    return Arena(exp, instances, pool=GamePool(pools, choice.name), models={HUMAN_MODEL: human})


def start_game(choice: ConfigChoice, runs_dir: Path, stores: WebStores, pools: SharedPools, *,
               opponents: list[str], player: str | None, instance_id: str | None) -> PlayGame:
    """Build the arena, open the store and start the engine thread of one game."""
    human = WebHuman(HUMAN_MODEL)
    arena = _arena(choice, pools, human)
    try:
        exp = arena.exp
        seat_players = exp.seat_players
        if instance_id is None:
            instance_id = secrets.choice(sorted(arena.instances))
        elif instance_id not in arena.instances:
            raise SparringError(f"unknown instance {instance_id!r}")
        bad = [o for o in opponents if o not in choice.opponents]
        if bad:
            raise SparringError(f"unknown opponent {bad[0]!r}")
        if choice.role == "judge":  # one debater per competing seat (consultancy: one consultant)
            if len(opponents) < len(seat_players):
                raise SparringError(f"choose {len(seat_players)} debater(s)")
            agents = tuple(opponents[:len(seat_players)])
            player = exp.judge_players[0]
        else:
            if len(opponents) != 1 or len(seat_players) != 2:
                raise SparringError("choose one opponent")
            player = player if player in seat_players else seat_players[0]
            agents = (HUMAN_AGENT, opponents[0]) if player == seat_players[0] else (opponents[0], HUMAN_AGENT)
        run_dir = runs_dir / f"web-{choice.name}"
        stores.open(run_dir, exp.config, redact=pools.pool(choice.name).redact)
        job = arena.job(instance_id, agents, seed=secrets.randbelow(2**31), repeat=stores.repeats(run_dir))
    except BaseException:
        arena.close()
        raise
    game = PlayGame(id=secrets.token_urlsafe(12), choice=choice, player=player, job=job, human=human,
                    run_dir=run_dir, instance=arena.instances[instance_id], roles=dict(exp.roles),
                    action_format=str(getattr(exp.game.config, "action_format", "text")))

    def run() -> None:
        try:
            records = arena.play([job], max_live=1)
            game.record = records[0] if records else None
            if game.record is not None:
                stores.save(run_dir, game.record)
        except Exception as e:  # noqa: BLE001 — shown on the game page; the server goes on
            game.error = f"{type(e).__name__}: {e}"
        finally:
            arena.close()
            game.done.set()
            human.abandon("the game is over")  # wakes any waiter

    threading.Thread(target=run, name=f"web-game-{game.id}", daemon=True).start()
    return game
