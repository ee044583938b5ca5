"""Find, load and resolve experiment configs; build the agents they describe.

Resolution turns names into checked objects before anything runs — the game and its `game_args`,
each agent against its role's `Config`, model names against the model registry (specs only, no
weights), prompt sets (templates syntax-checked), and the agent names the tournament uses — so a
typo fails in a second with the file, the configuration and the key, never minutes into a run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from sparring.agents.base import AGENTS, Agent, AgentConfig
from sparring.config_io import read_yaml, validate
from sparring.engine.config import ExperimentConfig, RunSettings, config_hash
from sparring.errors import ConfigError, SparringError, UnknownNameError, closest
from sparring.gameapi.game import GAMES, Game
from sparring.models.registry import shipped_experiments
from sparring.models.spec import ModelSpec
from sparring.prompts import PromptSet, prompt_set
from sparring.types import Sampling


# -- finding -----------------------------------------------------------------------------------
def config_dirs() -> list[Path]:
    """Where configs are looked up by name: ./configs/experiments, then the packaged ones."""
    packaged = shipped_experiments()
    local = Path.cwd() / "configs" / "experiments"
    return [local] if local.resolve() == packaged.resolve() else [local, packaged]


def available_configs() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in config_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                found.setdefault(p.stem, p)
    return found


def find_config(name_or_path: str | Path) -> Path:
    """A config by name (`quickstart`) or by path (`my/exp.yaml`)."""
    p = Path(name_or_path).expanduser()
    if p.suffix in (".yaml", ".yml") or p.is_file() or len(p.parts) > 1:
        if p.is_file():
            return p
        raise ConfigError("configuration file not found", file=str(p))
    known = available_configs()
    if str(name_or_path) in known:
        return known[str(name_or_path)]
    raise UnknownNameError("configuration", str(name_or_path), list(known))


def load_config(name_or_path: str | Path, settings: RunSettings | None = None) -> tuple[ExperimentConfig, Path]:
    """Read and validate one config; `settings` (the caller's run values) replace its own first."""
    path = find_config(name_or_path)
    return config_from_data(read_yaml(path), path, settings)


def config_from_data(raw: Any, path: Path, settings: RunSettings | None = None) -> tuple[ExperimentConfig, Path]:
    """Validate an experiment given as data (a parsed YAML file, or a dict built in code: the
    in-memory play API needs no file); `path` names it in errors and anchors relative paths."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration {path.stem!r}: expected a mapping at the top level", file=str(path))
    raw = copy.deepcopy(raw)
    if settings is not None:
        settings.apply(raw)
    tour = raw.get("tournament")
    if isinstance(tour, dict) and tour.get("type") == "replicate" and tour.get("source_run"):
        _inherit_from_source(raw, str(tour["source_run"]), path)
    cfg = _validate(ExperimentConfig, raw, path, "")
    if not cfg.name:
        cfg = cfg.model_copy(update={"name": path.stem})
    return cfg, path


def _inherit_from_source(raw: dict, source_run: str, path: Path) -> None:
    """A replicate config may omit what the source run already fixes (game, dataset, prompts)."""
    src = Path(source_run).expanduser() / "config.yaml"
    if not src.is_file():
        raise ConfigError(f"configuration {path.stem!r}: source run has no config.yaml ({src})",
                          file=str(path), key="tournament.source_run")
    source = read_yaml(src) or {}
    for key in ("game", "game_args", "dataset", "prompt_files"):
        if key not in raw and key in source:
            raw[key] = source[key]


def _validate(model: Any, data: Any, path: Path, prefix: str) -> Any:
    try:
        return validate(model, data, file=str(path), prefix=prefix)
    except ConfigError as e:
        raise ConfigError(f"configuration {path.stem!r}: {_detail(e)}", file=str(path)) from None


def bare_message(e: ConfigError) -> str:
    """The message of a ConfigError without its "file F, key K: " prefix (to re-wrap it)."""
    where = ", ".join(p for p in (f"file {e.file}" if e.file else "", f"key {e.key!r}" if e.key else "") if p)
    text = str(e)
    return text[len(where) + 2:] if where and text.startswith(where + ": ") else text


_detail = bare_message


# -- resolving ---------------------------------------------------------------------------------
@dataclass
class Experiment:
    """A validated config with everything it names resolved (but no model loaded)."""

    config: ExperimentConfig
    file: str
    game: Game
    roles: dict[str, str]
    agent_configs: dict[str, AgentConfig]
    samplings: dict[str, Sampling]
    prompts: dict[str, PromptSet]
    specs: dict[str, ModelSpec]
    participants: list[str]
    judges: list[str]
    extra_agents: dict[str, Agent] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def hash(self) -> str:
        return config_hash(self.config)

    @property
    def seat_players(self) -> list[str]:
        """Competing players in seating order (participants of a matchup fill these)."""
        return [p for p, r in self.roles.items() if r not in self.game.evaluator_roles]

    @property
    def judge_players(self) -> list[str]:
        """Evaluator players (judges), filled by `tournament.judges`."""
        return [p for p, r in self.roles.items() if r in self.game.evaluator_roles]

    def error(self, message: str, key: str | None = None) -> ConfigError:
        return ConfigError(f"configuration {self.name!r}: {message}", file=self.file, key=key)


def find_path(value: str, base: Path, *more: Path) -> str:
    """Relative paths are tried from the working directory, then next to the config file, then in
    `more` folders."""
    p = Path(value).expanduser()
    if not p.is_absolute() and not p.exists():
        p = next((d / p for d in (base, *more) if (d / p).exists()), p)
    return str(p.resolve()) if p.exists() else str(p)


def find_models_file(value: str, base: Path) -> str:
    """A config's `models_file`: from the working directory, beside the config (`base`), then
    among the shipped experiment configs (`models/scripted.yaml` works from any config)."""
    return find_path(value, base, shipped_experiments())


def resolve(cfg: ExperimentConfig, path: Path | str, specs: dict[str, ModelSpec] | None = None,
            extra_specs: dict[str, ModelSpec] | None = None) -> Experiment:
    """Check every cross-reference of `cfg`; returns the resolved Experiment. `extra_specs` are
    added to the models file's (models injected in code, e.g. the policy being trained)."""
    from sparring.models.registry import load_model_specs, resolve_name

    path = Path(path)
    file, base = str(path), path.parent

    def err(message: str, key: str | None = None) -> ConfigError:
        return ConfigError(f"configuration {cfg.name!r}: {message}", file=file, key=key)

    if not cfg.game:
        raise err("required key is missing", "game")
    try:
        game_cls = GAMES.get(cfg.game)
    except UnknownNameError as e:
        raise err(str(e), "game") from None
    if cfg.dataset is None:
        raise err("required key is missing (the instance source: {name, split, limit, seed, args})", "dataset")
    game_cfg = _validate(game_cls.Config, cfg.game_args, path, "game_args")
    try:
        game = game_cls(game_cfg)
        roles = dict(game.players())
    except SparringError as e:
        raise err(str(e), "game_args") from None
    if cfg.view == "conversation" and not game_cls.offers_conversation():
        raise err(f"game {cfg.game!r} offers no conversation view (it re-renders what a player sees every "
                  "turn); use `view: rendered` or leave `view` out", "view")
    rendered_only = game.rendered_settings()
    if cfg.view == "conversation" and rendered_only:
        raise err(f"game_args {', '.join(rendered_only)} shape only the rendered view (the conversation keeps "
                  "every turn as it was shown); drop them or use `view: rendered`", "view")
    # the conversation where the game offers it (a player's calls extend one another: training reads a
    # game once, the backend's cache keeps it) and no setting asks for a re-rendered view, else the
    # game's own rendering; written into the resolved config, so a run directory records its view
    conversation = game_cls.offers_conversation() and not rendered_only
    game.view = cfg.view or ("conversation" if conversation else "rendered")

    updates: dict[str, Any] = {} if cfg.view == game.view else {"view": game.view}
    if cfg.models_file:
        updates["models_file"] = find_models_file(cfg.models_file, base)
    if cfg.prompt_files:
        updates["prompt_files"] = [find_path(p, base) for p in cfg.prompt_files]
        for i, p in enumerate(updates["prompt_files"]):
            if not Path(p).is_file():
                raise err(f"prompt file not found: {p}", f"prompt_files[{i}]")
    cfg = cfg.model_copy(update=updates) if updates else cfg
    if specs is None:
        specs = load_model_specs(cfg.models_file)
    if extra_specs:
        specs = {**extra_specs, **specs}  # a named spec keeps its sampling defaults

    if not cfg.agents:
        raise err("no agents defined", "agents")
    agent_configs: dict[str, AgentConfig] = {}
    samplings: dict[str, Sampling] = {}
    prompts: dict[str, PromptSet] = {}
    for name, raw in cfg.agents.items():
        key = f"agents.{name}"
        if not isinstance(raw, dict):
            raise err("expected a mapping with at least 'role' and 'model'", key)
        role = raw.get("role")
        if role is None:
            raise err("required key is missing", f"{key}.role")
        known_roles = set(roles.values()) | set(game.default_prompts) | set(game.evaluator_roles)
        if str(role) not in known_roles:
            raise err(f"{UnknownNameError('agent role', str(role), sorted(known_roles))} (roles of game "
                      f"{cfg.game!r})", f"{key}.role")
        try:
            agent_cls = AGENTS.get(agent_kind(raw))
        except UnknownNameError as e:
            raise err(str(e), f"{key}.agent" if raw.get("agent") else f"{key}.role") from None
        acfg = _validate(agent_cls.Config, raw, path, key)
        try:
            model = resolve_name(acfg.model, specs)
        except UnknownNameError as e:
            raise err(f"{e} (models come from the shipped models.yaml"
                      f"{' and ' + cfg.models_file if cfg.models_file else ''}; see `sparring models list`)",
                      f"{key}.model") from None
        samplings[name] = _validate(Sampling, {**specs[model].sampling, **acfg.sampling}, path, f"{key}.sampling")
        prompts[name] = _prompts(cfg, acfg, game, role, key, err)
        agent_configs[name] = acfg

    participants, judges = _tournament_agents(cfg, roles, game.evaluator_roles, agent_configs, err)
    if cfg.branch is not None:
        if cfg.branch.target not in agent_configs:
            raise err(f"unknown agent {cfg.branch.target!r}; agents: {', '.join(agent_configs)}", "branch.target")
        if not game.can_fork:
            raise err(f"game {cfg.game!r} cannot fork its state, so it cannot branch", "branch")
    return Experiment(config=cfg, file=file, game=game, roles=roles, agent_configs=agent_configs,
                      samplings=samplings, prompts=prompts, specs=dict(specs),
                      participants=participants, judges=judges)


def _prompts(cfg: ExperimentConfig, acfg: AgentConfig, game: Game, role: str, key: str, err) -> PromptSet:
    set_name = acfg.prompts or game.default_prompts.get(role)
    if set_name is None:
        raise err(f"game {cfg.game!r} has no default prompt set for role {role!r}; set one", f"{key}.prompts")
    try:
        ps = prompt_set(set_name, (*game.prompt_files(), *cfg.prompt_files))
    except UnknownNameError as e:
        raise err(str(e), f"{key}.prompts") from None
    for tag in acfg.prompt_overrides:
        near = closest(tag, ps.templates)
        if tag not in ps.templates and near:
            raise err(f"prompt set {ps.name!r} has no template {tag!r} (did you mean {near[0]!r}?)",
                      f"{key}.prompt_overrides.{tag}")
    if acfg.prompt_overrides:
        ps = ps.with_overrides(acfg.prompt_overrides)
    env = jinja2.Environment()
    for tag, variants in ps.templates.items():
        for i, text in enumerate(variants):
            try:
                env.parse(text)
            except jinja2.TemplateSyntaxError as e:
                raise err(f"prompt set {ps.name!r}, template {tag!r} (variant {i}) line {e.lineno}: "
                          f"{e.message}", f"{key}.prompts") from None
    return ps


def _tournament_agents(cfg: ExperimentConfig, roles: dict[str, str], evaluator_roles: frozenset[str],
                       agents: dict[str, AgentConfig], err) -> tuple[list[str], list[str]]:
    """Participants and judges (the agents of evaluator seats) by name, checked against the
    agents and the game's seats."""
    t = cfg.tournament
    seat_roles = {r for r in roles.values() if r not in evaluator_roles}
    judge_roles = {r for r in roles.values() if r in evaluator_roles}

    def check(name: str, key: str) -> str:
        if name not in agents:
            near = closest(name, agents)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise err(f"unknown agent {name!r}{hint}; agents: {', '.join(agents)}", key)
        return name

    n_seats = sum(r not in evaluator_roles for r in roles.values())
    participants = [check(n, f"tournament.participants[{i}]") for i, n in enumerate(t.participants)]
    judges = [check(n, f"tournament.judges[{i}]") for i, n in enumerate(t.judges)]
    for i, m in enumerate(t.matchups):
        for j, n in enumerate(m):
            check(n, f"tournament.matchups[{i}][{j}]")
        if len(m) != n_seats:
            raise err(f"matchup {m} has {len(m)} agents but game {cfg.game!r} has {n_seats} "
                      "non-judge seat(s)", f"tournament.matchups[{i}]")
    if not participants:
        named = {n for m in t.matchups for n in m}
        participants = [n for n, a in agents.items() if a.role not in evaluator_roles and (not named or n in named)]
    if seat_roles:
        if not participants and t.type != "replicate":
            raise err(f"no participants: game {cfg.game!r} needs agents with role(s) {sorted(seat_roles)}",
                      "tournament.participants")
        for i, n in enumerate(participants):
            if agents[n].role not in seat_roles and t.type != "replicate":
                raise err(f"agent {n!r} has role {agents[n].role!r}; game {cfg.game!r} seats "
                          f"{sorted(seat_roles)} here", f"tournament.participants[{i}]")
    elif participants and t.participants:
        raise err(f"game {cfg.game!r} (this format) has no non-judge seats; remove participants",
                  "tournament.participants")
    else:
        participants = []
    if judge_roles:
        wanted = " or ".join(repr(r) for r in sorted(judge_roles))
        if not judges:
            pool = [n for n, a in agents.items() if a.role in judge_roles]
            if len(pool) != 1:
                raise err(f"game {cfg.game!r} has a judge seat: name the judge(s) "
                          f"({'judge agents: ' + ', '.join(pool) if pool else f'no agent has role {wanted}'})",
                          "tournament.judges")
            judges = pool
        for i, n in enumerate(judges):
            if agents[n].role not in judge_roles:
                raise err(f"agent {n!r} has role {agents[n].role!r}, not {wanted}", f"tournament.judges[{i}]")
    elif judges:
        raise err(f"game {cfg.game!r} has no judge seat; remove tournament.judges", "tournament.judges")
    if t.type == "swiss" and len(participants) < 2:
        raise err("swiss needs at least two participants", "tournament.participants")
    return participants, judges


# -- agents ------------------------------------------------------------------------------------
def build_agents(exp: Experiment) -> dict[str, Agent]:
    """One Agent per configured name, plus the judge panel (several judges = one seat)."""
    from sparring.agents.judge import Judge, Panel

    agents: dict[str, Agent] = {}
    for name, acfg in exp.agent_configs.items():
        cls = AGENTS.get(agent_kind({"role": acfg.role, "agent": acfg.agent}))
        agents[name] = cls(name, acfg, exp.samplings[name], exp.prompts[name])
    if len(exp.judges) > 1:
        judges = [agents[j] for j in exp.judges]
        if not all(isinstance(j, Judge) for j in judges):
            raise exp.error("a judge panel needs judge agents", "tournament.judges")
        agents[panel_name(exp.judges)] = Panel(panel_name(exp.judges), [j for j in judges if isinstance(j, Judge)])
    agents.update(exp.extra_agents)
    return agents


def agent_kind(raw: dict[str, Any]) -> str:
    """The registered agent behind an agent config: `agent:` if given, else the agent registered
    under the role's name (debater, judge, negotiator), else the plain text agent."""
    if raw.get("agent"):
        return str(raw["agent"])
    role = str(raw.get("role"))
    return role if role in AGENTS else "text"


def panel_name(judges: list[str]) -> str:
    return judges[0] if len(judges) == 1 else "+".join(judges)
