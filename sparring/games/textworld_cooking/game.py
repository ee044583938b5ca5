"""TextWorld cooking: one player cooks a meal in a TextWorldExpress CookingWorld game.

The game owns the simulator (`env.EnvPool`): each live episode leases one environment at `reset`
and gives it back when it ends. Each turn the player sees the simulator's answer to its last
command, the room and its inventory (`show_state`) and the valid commands (`show_valid_actions`),
and replies with one command. A command that is not valid here costs a step, changes nothing and
is counted (`invalid_rate`); the episode ends on success, on failure (e.g. the meal was spoiled),
or after `max_steps` commands. Reward = the simulator's normalised score in [0, 1]; each command
also reports its step reward, the score's change (`Feedback.reward`), which add up to it. With
`failure_penalty` a game lost by spoiling the meal (e.g. an ingredient cooked with the wrong
appliance) is rewarded its score minus the penalty, charged to the command that lost it; with
`invalid_penalty` each refused command costs that much of the reward, charged to it; the `score`
metric stays the simulator's.

The simulator's gold path is never shown to the player: while the episode is still on it, the
next gold command goes to the player's model requests as the private label `gold_action`
(`request_labels`), which the scripted `gold` policy (`gold.py`) replays — so expert
demonstrations are recorded like any other episode, and exported like any other episode.
"""

from __future__ import annotations

import random
import weakref
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from sparring.config_io import strict_args
from sparring.errors import ConfigError, UnknownNameError
from sparring.gameapi.game import (
    Action,
    ActionSpec,
    DatasetConfig,
    Event,
    Feedback,
    Game,
    Outcome,
    Seat,
    register_game,
)
from sparring.games.textworld_cooking.commands import match_command, parse_command
from sparring.games.textworld_cooking.env import EnvPool
from sparring.games.textworld_cooking.gold import GOLD_LABEL
from sparring.games.textworld_cooking.hooks import HOOKS
from sparring.games.textworld_cooking.instance import (
    CookingInstance,
    CookingSourceArgs,
    fold_of,
    make_instances,
    pick_seeds,
)
from sparring.games.textworld_cooking.state import ENVIRONMENT, PLAYER, CookingState, Step
from sparring.types import Message, Strict, new

COMMAND_TAG = "command"
RECIPE_START = "Gather all following ingredients"


def is_recipe(feedback: str) -> bool:
    """The simulator's answer to `read cookbook` (the only text that lists the directions)."""
    return feedback.lstrip().startswith(RECIPE_START) and "Directions:" in feedback
SOURCES = ("cookingworld",)


class CookingConfig(Strict):
    """`game_args` of a TextWorld cooking experiment."""

    max_steps: int = Field(30, ge=1, description="commands before the episode ends unfinished")
    show_valid_actions: bool = Field(True, description="list the valid commands in every observation")
    show_state: bool = Field(True, description="show the room and the inventory in every observation; false: "
                             "only the simulator's answer, as in TextWorld itself (moving and `look around` "
                             "answer with the room, `inventory` with the inventory), so observations stay short")
    history: int | None = Field(None, ge=0, description="past steps kept in the observation (None = all)")
    keep_recipe: bool = Field(True, description="once the cookbook is read, every observation shows the recipe, "
                                                "so no command depends on a step the history window dropped")
    history_view: Literal["short", "full"] = Field(
        "short", description="how earlier observations appear in the history: short (the simulator's answer "
        "only; the room, inventory and valid commands only in the latest) or full (each as the player saw "
        "it: the history only grows, so an episode's last conversation holds exactly what the player saw "
        "at every turn, and a prefix cache reuses every earlier turn)")
    failure_penalty: float = Field(0.0, ge=0.0, description="subtracted from the reward (not the score) of a game "
                                   "lost by spoiling the meal, at the command that lost it: RL then ranks a spoiled "
                                   "meal below an unfinished game, which scores about the same")
    invalid_penalty: float = Field(0.0, ge=0.0, description="subtracted from the reward (not the score) for every "
                                   "command the game refuses (not valid here, or empty), at that command: per-step "
                                   "credit then charges a refused command where it was written, whatever the game "
                                   "scored")


def skip_stale_gold(state: CookingState) -> None:
    """Step over gold commands that are not valid now: the simulator's gold paths sometimes repeat
    a command that no longer applies (e.g. `open kitchen cupboard` twice, 4 of the first 12
    train-fold games at 3 rooms); replaying it would be an invalid command and leave the path."""
    valid = set(state.info.get("validActions") or [])
    while state.gold_pos < len(state.gold) and state.gold[state.gold_pos] not in valid:
        state.gold_pos += 1


@register_game("textworld_cooking")
class TextWorldCookingGame(Game[CookingInstance, CookingState]):
    name: ClassVar[str] = "textworld_cooking"
    Config = CookingConfig
    InstanceType = CookingInstance
    default_prompts: dict[str, str] = {"player": "textworld_cooking"}
    ranking: ClassVar[Literal["reward", "none"]] = "none"  # one player: nobody to beat
    hooks = HOOKS
    can_fork: ClassVar[bool] = False  # the state holds a live simulator
    config: CookingConfig

    def __init__(self, config: CookingConfig | None = None):
        super().__init__(config)
        self._pools: dict[str, EnvPool] = {}
        self._specs: dict[int, ActionSpec] = {}

    def pool(self, params: str) -> EnvPool:
        """The environments for one `gameParams` string (started lazily, reused by episodes)."""
        pool = self._pools.get(params)
        if pool is None:
            pool = self._pools[params] = EnvPool(params)
        return pool

    @property
    def simulators(self) -> int:
        """Simulators (JVM processes) this game has started so far."""
        return sum(p.size for p in self._pools.values())

    def close(self) -> None:
        """Stop every simulator this game started (also done when the game is collected)."""
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def players(self) -> dict[str, str]:
        return {PLAYER: "player"}

    # -- instances ---------------------------------------------------------------------------
    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[CookingInstance]:
        """`name: cookingworld`; `split` = the simulator's fold (train / dev / test), `limit` = how
        many of its seeds, `seed` = shuffle the fold's seeds, `args` = generator parameters."""
        if dataset.name not in SOURCES:
            raise UnknownNameError("textworld_cooking dataset", dataset.name, list(SOURCES))
        args: CookingSourceArgs = strict_args(CookingSourceArgs, dataset.args)
        fold = fold_of(dataset.split)
        params = args.params.game_params()
        seeds = pick_seeds(self.pool(params).seeds(fold), args, fold, dataset.limit, dataset.seed)
        if not seeds:
            raise ConfigError(f"no {fold} seeds left after offset {args.offset}", key="dataset.args.offset")
        return make_instances(seeds, fold, args.params)

    def instance_summary(self, instance: CookingInstance) -> dict[str, Any]:
        return {"id": instance.id, "seed": instance.seed, "fold": instance.fold, "params": instance.params,
                "metadata": {"split": instance.fold}}

    # -- setup -------------------------------------------------------------------------------
    def reset(self, instance: CookingInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> CookingState:
        if PLAYER not in seats:
            raise ConfigError(f"TextWorld cooking needs a seat for {PLAYER!r}")
        prompts = seats[PLAYER].prompts
        lease = self.pool(instance.params).lend()
        try:
            _, info = lease.env.reset(seed=instance.seed, gameFold=instance.fold, generateGoldPath=True)
            gold = [str(a) for a in lease.env.getGoldActionSequence()]
        except Exception:
            lease.discard()
            raise
        common = self._common(info)
        system = new(Message, role="system", content=prompts.render("system", 0, **common).strip())
        first, first_short = self._observation(prompts, common, info, str(info["observation"]), 1)
        state = CookingState(instance=instance, prompts=prompts, lease=lease, system=system, first=first,
                             first_short=first_short, gold=gold, info=info)
        skip_stale_gold(state)
        weakref.finalize(state, lease.release)  # a failed episode's simulator comes back too
        self._event(state, ENVIRONMENT, "observation", str(info["observation"]))
        return state

    def _common(self, info: dict[str, Any]) -> dict[str, Any]:
        return {"task": str(info.get("taskDescription") or ""), "max_steps": self.config.max_steps,
                "show_valid": self.config.show_valid_actions}

    def _recipe(self, state: CookingState) -> dict[str, Any]:
        return {"recipe": state.recipe} if self.config.keep_recipe and state.recipe else {}

    def _observation(self, prompts: Any, common: dict[str, Any], info: dict[str, Any], feedback: str,
                     step: int) -> tuple[Message, Message]:
        """(full, short) renderings of what the player sees after `feedback`."""
        look = str(info.get("look") or "") if self.config.show_state else ""
        var = dict(common, feedback=feedback, look="" if look.strip() == feedback.strip() else look,
                   recipe=common.get("recipe") if common.get("recipe") not in (None, feedback) else "",
                   inventory=str(info.get("inventory") or "") if self.config.show_state else "", step=step,
                   steps_left=self.config.max_steps - step + 1,
                   valid=sorted(info.get("validActions") or []) if self.config.show_valid_actions else [])
        full = new(Message, role="user", content=prompts.render("observation", 0, full=True, **var).strip())
        short = new(Message, role="user", content=prompts.render("observation", 0, full=False, **var).strip())
        return full, short

    # -- turn structure ----------------------------------------------------------------------
    def to_act(self, state: CookingState) -> list[str]:
        return [] if state.over else [PLAYER]

    def is_over(self, state: CookingState) -> bool:
        return state.over

    def action_spec(self, state: CookingState, player: str) -> ActionSpec:
        key = id(state.prompts)
        spec = self._specs.get(key)
        if spec is None:
            pad = state.prompts.render("scratchpad", 0) if state.prompts.has("scratchpad") else None
            spec = self._specs[key] = ActionSpec(kind="text", tag=COMMAND_TAG, scratchpad_instruction=pad)
        return spec

    def observation(self, state: CookingState, player: str) -> list[Message]:
        steps = state.steps
        if not steps:
            return [state.system, state.first]
        keep = self.config.history
        shown = steps if keep is None else steps[max(0, len(steps) - 1 - keep):]
        full = self.config.history_view == "full"
        msgs = [state.system, state.first if full else state.first_short]
        for s in shown[:-1]:
            msgs += [s.command, s.full if full else s.short]
        msgs += [shown[-1].command, shown[-1].full]
        return msgs

    def rendered_settings(self) -> list[str]:
        """A history window drops earlier steps and the short history rewrites them: both only
        make sense re-rendered, so naming either keeps the rendered view."""
        c = self.config
        return ((["history"] if c.history is not None else [])
                + (["history_view"] if "history_view" in c.model_fields_set and c.history_view == "short" else []))

    def conversation(self, state: CookingState, player: str) -> list[Message]:
        """The game as a chat that only grows: every step as the player saw it when it came (the
        simulator's answer in full) and each reply as the model wrote it. `history` and
        `history_view` shape the rendered view only; this one keeps every step."""
        msgs = [state.system, state.first]
        for s in state.steps:
            msgs += [new(Message, role="assistant", content=s.written), s.full]
        return msgs

    def request_labels(self, state: CookingState, player: str) -> dict[str, Any]:
        """The next gold command, while every command so far followed the gold path."""
        if state.on_gold and state.gold_pos < len(state.gold):
            return {GOLD_LABEL: state.gold[state.gold_pos]}
        return {}

    # -- acting ------------------------------------------------------------------------------
    def act(self, state: CookingState, player: str, action: Action) -> Feedback:
        if state.over:
            return Feedback(accepted=False, abort="the game is already over")
        if player != PLAYER:
            raise ValueError(f"{player!r} is not a player of TextWorld cooking")
        raw = action.text or ""
        command = parse_command(raw)
        valid = state.info.get("validActions") or []
        matched = match_command(command, set(valid)) if command else None
        index = state.n_steps
        if state.on_gold and (state.gold_pos >= len(state.gold) or matched != state.gold[state.gold_pos]):
            state.on_gold = False
        elif state.on_gold:
            state.gold_pos += 1
        if matched is not None:
            try:
                feedback, _, _, info = state.lease.env.step(matched)
            except Exception:
                state.lease.discard()
                raise
            feedback = str(feedback)
            state.info = info
            if is_recipe(feedback):
                state.recipe = feedback.strip()
        else:
            state.n_invalid += 1
            tag = "invalid" if command else "empty"
            feedback = state.prompts.render(tag, 0, command=command,
                                            valid=valid if self.config.show_valid_actions else []).strip()
            info = state.info
        shown = matched or command or raw.strip()[:200]
        self._event(state, PLAYER, COMMAND_TAG, shown, raw=raw, valid=matched is not None)
        before = state.score
        state.raw_score = float(info.get("scoreRaw") or 0.0)
        state.score = min(1.0, max(0.0, float(info.get("score") or 0.0)))
        state.success = bool(info.get("tasksuccess"))
        state.failure = bool(info.get("taskfailure"))
        full, short = self._observation(state.prompts, {**self._common(info), **self._recipe(state)}, info,
                                        feedback, index + 2)
        state.steps.append(Step(command=new(Message, role="assistant", content=shown), short=short, full=full,
                                written=raw))
        self._event(state, ENVIRONMENT, "observation", feedback, score=state.score)
        skip_stale_gold(state)
        if state.success or state.failure or state.n_steps >= self.config.max_steps:
            state.over = True
            state.end = "success" if state.success else "failure" if state.failure else "max_steps"
            state.lease.release()
        penalty = (self.config.failure_penalty if state.failure else 0.0) + (
            self.config.invalid_penalty if matched is None else 0.0)
        # the step's share of the reward (they add up to it); a command the simulator does not know changed nothing
        return Feedback(reward=state.score - before - penalty, changed=matched is not None)

    def _event(self, state: CookingState, player: str, tag: str, content: str, **meta: Any) -> None:
        state.events.append(new(Event, index=len(state.events), player=player, tag=tag, content=content,
                                round=state.n_steps, meta=meta))

    # -- results -----------------------------------------------------------------------------
    def outcome(self, state: CookingState) -> Outcome:
        n = state.n_steps
        metrics = {"score": state.score, "raw_score": state.raw_score, "success": state.success,
                   "failure": state.failure, "steps": n, "n_invalid": state.n_invalid,
                   "invalid_rate": state.n_invalid / n if n else 0.0, "gold_steps": len(state.gold),
                   "followed_gold": state.on_gold and n > 0, "end": state.end or "unfinished",
                   "fold": state.instance.fold}
        penalty = (self.config.failure_penalty if state.failure else 0.0) + self.config.invalid_penalty * state.n_invalid
        return Outcome(rewards={PLAYER: state.score - penalty}, metrics=metrics, reason=state.end)

    def events(self, state: CookingState) -> list[Event]:
        return list(state.events)

    def record_state(self, state: CookingState) -> dict[str, Any]:
        return {"seed": state.instance.seed, "fold": state.instance.fold, "params": state.instance.params,
                "gold_path": list(state.gold), "max_steps": self.config.max_steps,
                "show_valid_actions": self.config.show_valid_actions}
