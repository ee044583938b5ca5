"""Games a person plays in the browser: an engine episode in a background thread per game.

The person's seat is an agent `human` whose model is a `WebHuman`; every other seat plays with
the experiment's own models through the in-memory play API (`Arena`), so turn order, visibility,
corrections and the record are exactly those of `sparring run`. Each game of an experiment is
stored in `RUNS_DIR/web-<experiment>/` through the normal `RunStore` (one store per run directory
per app, shared by every session under a lock; one run per role the person can take). An
abandoned game (the person left: Abandon, idle timeout, server stop) is stored like any other
as an aborted episode, transcript so far kept, whose outcome is marked `abandoned`.
"""

from __future__ import annotations

import copy
import hashlib
import re
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
from sparring.gameapi import GAMES
from sparring.gameapi.hooks import PanelContext, PlayPanel
from sparring.models.spec import ModelSpec
from sparring.records.record import EpisodeRecord
from sparring.records.store import Redactor, RunStore
from sparring.web.human import PendingTurn, WebHuman
from sparring.web.pools import GamePool, SharedPools

HUMAN_AGENT = "human"
HUMAN_MODEL = "web-human"
# The roles a person can take come from the game's play panel (`Game.hooks.play`), the first
# the default. Seats are the game's players of that role; the other seats are filled with the
# experiment's agents: competing seats with the chosen opponents, evaluator seats (a debate's
# judge) with the experiment's judges.
MAX_GAMES_PER_SESSION = 4
# Backends that talk to a server (a vLLM / OpenAI-compatible endpoint, a hosted API): a shipped
# config whose opponents use one is not offered, since a fresh install has no such server.
SERVER_BACKENDS = frozenset({"openai", "anthropic"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def run_slug(name: str) -> str:
    """A safe directory name for an experiment name: ASCII letters, digits, `_.-` only, never
    `..`; a name that had to change gets a short hash of the original, so two names never share
    a directory (`x/../../escaped` -> `x-escaped-1a2b3c`)."""
    slug = re.sub(r"\.{2,}", ".", _UNSAFE.sub("-", name)).strip("-.")[:80] or "experiment"
    if slug != name:
        slug = f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:6]}"
    return slug


@dataclass
class ConfigChoice:
    """An experiment config a game can be started from, and the seats a person can take in it."""

    name: str
    path: Path
    game: str
    description: str
    opponents: list[str]  # agents that can fill the other competing seats
    players: dict[str, str] = field(default_factory=dict)  # game player id -> role
    evaluator_roles: frozenset[str] = frozenset()
    judges: list[str] = field(default_factory=list)  # the experiment's judges (evaluator seats)
    roles: list[str] = field(default_factory=list)  # the roles a person can take, default first

    @property
    def panel(self) -> PlayPanel:
        """The game's human play panel (`Game.hooks.play`)."""
        panel = GAMES.get(self.game).hooks.play
        assert panel is not None  # only games with a panel become choices
        return panel

    def seats(self, role: str) -> list[str]:
        """The game's players of `role` (the seats a person taking that role can sit in)."""
        return [p for p, r in self.players.items() if r == role]

    def competing(self) -> list[str]:
        return [p for p, r in self.players.items() if r not in self.evaluator_roles]

    def evaluating(self, role: str) -> bool:
        return role in self.evaluator_roles

    def run_name(self, role: str) -> str:
        """The run directory of this experiment's games with the person as `role`: one run
        (one experiment config) per role, `web-<experiment>` for the default role."""
        slug = run_slug(self.name)
        return f"web-{slug}" if role == self.roles[0] else f"web-{slug}-{run_slug(role)}"


def needs_server(raw: dict[str, Any], path: Path, agents: list[str]) -> bool:
    """Whether one of `agents` plays with a model served over HTTP (`SERVER_BACKENDS`)."""
    try:
        cfg, cfg_path = config_from_data(raw, path)
        exp = resolve(cfg, cfg_path)
    except Exception:  # noqa: BLE001 — a config that does not resolve cannot be played either
        return True
    specs = {alias: spec for spec in exp.specs.values() for alias in (spec.name, *spec.aliases)}
    for agent in agents:
        conf = exp.agent_configs.get(agent)
        spec = specs.get(str(getattr(conf, "model", "")))
        if spec is not None and spec.backend in SERVER_BACKENDS:
            return True
    return False


def _choice(name: str, path: Path, shipped: bool = False) -> ConfigChoice | None:
    try:
        raw = read_yaml(path)
    except SparringError:
        return None
    if not isinstance(raw, dict):
        return None
    game = GAMES.canonical(str(raw.get("game", "")))
    try:
        game_cls = GAMES.get(game)
        if game_cls.hooks.play is None:
            return None
        players = game_cls(game_cls.Config.model_validate(raw.get("game_args") or {})).players()
    except Exception:  # noqa: BLE001 — a config that cannot even build its game is not offered
        return None
    evaluators = frozenset(game_cls.evaluator_roles)
    agents: dict[str, Any] = raw["agents"] if isinstance(raw.get("agents"), dict) else {}
    by_role: dict[str, list[str]] = {}
    for a, c in agents.items():
        if isinstance(c, dict) and a != HUMAN_AGENT:
            by_role.setdefault(str(c.get("role")), []).append(a)
    competing = sorted({r for r in players.values() if r not in evaluators})
    opponents = [a for r in competing for a in by_role.get(r, [])]
    tournament = raw.get("tournament") if isinstance(raw.get("tournament"), dict) else {}
    named = [j for j in (tournament or {}).get("judges") or [] if j in agents]
    judges = named or [a for r in sorted(evaluators) for a in by_role.get(r, [])][:1]
    n_competing = sum(r not in evaluators for r in players.values())
    roles = []
    for role in game_cls.hooks.play.roles:
        seats = [p for p, r in players.items() if r == role]
        if not seats:
            continue
        if role in evaluators:  # the person judges: every competing seat needs an agent
            ok = bool(opponents) or n_competing == 0
        else:  # the other competing seats need opponents, the evaluator seats a judge
            ok = (bool(opponents) or n_competing == 1) and (bool(judges) or len(players) == n_competing)
        if ok:
            roles.append(role)
    if not roles or (shipped and needs_server(raw, path, opponents + judges)):
        return None
    return ConfigChoice(name=str(raw.get("name") or name), path=path, game=game,
                        description=str(raw.get("description") or ""), opponents=opponents, players=players,
                        evaluator_roles=evaluators, judges=judges, roles=roles)


def config_choices(extra: list[Path] | None = None) -> dict[str, ConfigChoice]:
    """Shipped (and ./configs/experiments) configs of playable games, then `extra` files."""
    out: dict[str, ConfigChoice] = {}
    for path in list(extra or []):
        choice = _choice(path.stem, path)
        if choice is None:
            raise ConfigError("not a playable experiment (a config with agents of a game that has a play panel)", file=str(path))
        out[choice.name] = choice
    for name, path in available_configs().items():
        choice = _choice(name, path, shipped=True)
        if choice is not None:
            out.setdefault(choice.name, choice)
    return out


def web_config(choice: ConfigChoice, role: str | None = None) -> dict[str, Any]:
    """The experiment a web run stores: the chosen config plus the person's agent in `role`.
    The same for every game of an experiment and role, so they all share one run directory."""
    role = role or choice.roles[0]
    raw = read_yaml(choice.path)
    raw = copy.deepcopy(raw if isinstance(raw, dict) else {})
    raw["name"] = choice.name
    raw.pop("branch", None)
    agents = dict(raw.get("agents") or {})
    agents[HUMAN_AGENT] = {"role": role, "model": HUMAN_MODEL}
    raw["agents"] = agents
    if choice.evaluating(role):
        raw["tournament"] = {"type": "round_robin", "participants": choice.opponents, "self_pairs": True,
                             "judges": [HUMAN_AGENT]}
    else:
        raw["tournament"] = {"type": "round_robin", "participants": [HUMAN_AGENT, *choice.opponents]}
        if choice.judges and len(choice.competing()) < len(choice.players):
            raw["tournament"]["judges"] = list(choice.judges)
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
    role: str  # the person's role (the agent role of that seat)
    job: EpisodeJob
    human: WebHuman
    run_dir: Path
    instance: Any
    roles: dict[str, str]
    done: threading.Event = field(default_factory=threading.Event)
    record: EpisodeRecord | None = None
    error: str | None = None
    history: list[PendingTurn] = field(default_factory=list)  # turns answered so far (what was shown)
    game_config: Any = None  # the game's `game_args`, for its play panel

    @property
    def status(self) -> str:
        if self.done.is_set():
            if self.record is None:
                return "failed"
            return "abandoned" if abandoned(self.record) else self.record.status  # complete | aborted | failed
        return "your_turn" if self.human.current() is not None else "waiting"

    @property
    def panel_context(self) -> PanelContext:
        return PanelContext(instance=self.instance, player=self.player, flip=self.job.flip,
                            game_config=self.game_config)

    @property
    def judging(self) -> bool:
        return self.choice.evaluating(self.role)

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


def abandoned(record: EpisodeRecord) -> bool:
    """Whether a stored episode was left by its human player (an aborted record, so marked)."""
    return record.outcome is not None and bool(record.outcome.metrics.get("abandoned"))


def _arena(choice: ConfigChoice, role: str, pools: SharedPools, human: WebHuman) -> Arena:
    """The game's arena: the experiment resolved, its models and instances shared with the
    other games of the experiment, the person's seat (of `role`) played by `human`."""
    cfg, path = config_from_data(web_config(choice, role), choice.path.parent / f"{run_slug(choice.name)}.yaml")
    exp = resolve(cfg, path, extra_specs={HUMAN_MODEL: ModelSpec(name=HUMAN_MODEL, backend="injected")})
    pools.ensure(choice.name, exp.specs, skip=HUMAN_MODEL)
    instances = pools.instances(choice.name, lambda: load_instances(exp))
    return Arena(exp, instances, pool=GamePool(pools, choice.name), models={HUMAN_MODEL: human})


def start_game(choice: ConfigChoice, runs_dir: Path, stores: WebStores, pools: SharedPools, *,
               opponents: list[str], player: str | None, instance_id: str | None,
               role: str | None = None) -> PlayGame:
    """Build the arena, open the store and start the engine thread of one game. `role`: the
    person's role (default the game's first playable one); `player`: their seat among that
    role's (default the first); `opponents`: the agents of the other competing seats, in order
    (one for all of them if fewer are given)."""
    role = role or choice.roles[0]
    if role not in choice.roles:
        raise SparringError(f"you cannot play {role!r} in {choice.name!r}; choose one of {choice.roles}")
    bad = [o for o in opponents if o not in choice.opponents]
    if bad:
        raise SparringError(f"unknown opponent {bad[0]!r}")
    human = WebHuman(HUMAN_MODEL)
    arena = _arena(choice, role, pools, human)
    try:
        exp = arena.exp
        seat_players = exp.seat_players
        if instance_id is None:
            instance_id = secrets.choice(sorted(arena.instances))
        elif instance_id not in arena.instances:
            raise SparringError(f"unknown instance {instance_id!r}")
        if choice.evaluating(role):  # the person judges: one agent per competing seat
            if len(opponents) < len(seat_players):
                raise SparringError(f"choose {len(seat_players)} debater(s)")
            agents = tuple(opponents[:len(seat_players)])
            player = player if player in choice.seats(role) else choice.seats(role)[0]
        else:
            player = player if player in choice.seats(role) else choice.seats(role)[0]
            others = [p for p in seat_players if p != player]
            if others and not opponents:
                raise SparringError("choose an opponent")
            fill = iter(opponents)
            agents = tuple(HUMAN_AGENT if p == player else next(fill, opponents[-1]) for p in seat_players)
        run_dir = runs_dir / choice.run_name(role)
        stores.open(run_dir, exp.config, redact=pools.pool(choice.name).redact)
        job = arena.job(instance_id, agents, seed=secrets.randbelow(2**31), repeat=stores.repeats(run_dir))
    except BaseException:
        arena.close()
        raise
    game = PlayGame(id=secrets.token_urlsafe(12), choice=choice, player=player, role=role, job=job, human=human,
                    run_dir=run_dir, instance=arena.instances[instance_id], roles=dict(exp.roles),
                    game_config=exp.game.config)

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
