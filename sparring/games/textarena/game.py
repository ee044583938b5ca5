"""Any installed TextArena environment as a sparring game (`game: textarena`, `game_args: {env_id}`).

TextArena's environments keep their own state and rules and follow a gym-like protocol: `reset`,
`get_observation()` -> (player id, text), `step(action)` -> (done, info), `close()` -> (rewards,
game info). This game holds one environment per episode and translates:

- seats: TextArena's player ids as sparring players "Player 0", "Player 1", ...; `flip` seats the
  agents the other way round (TextArena's player 0 always moves first);
- observations: what TextArena shows an LLM agent — its standard system prompt, then the
  environment's observation for that player (the whole game so far; `observation_from` cuts it to
  the current round);
- actions: the reply text, as TextArena's action formatting wrapper takes it; invalid moves are
  TextArena's own (its error allowance, then the offender loses), counted per player and
  recorded as rejected replies (the player moves again, as in TextArena);
- outcome: TextArena's rewards (win 1, loss -1, draw 0), its reason, invalid moves and length;
- randomness: TextArena's environments draw from Python's (and NumPy's) global random generators,
  seeded by `reset(seed)`. Many episodes share one process and take turns, so each episode keeps
  its own generator states and puts them in place around every call into its environment: a seed
  deals the same cards whatever else is being played (a held-out seed is the same game for every
  policy, so comparisons can be paired).

Instances are seeds (`dataset: {name: seeds, split: train|test, args: {n, start}}`): the train split
draws from seeds 0.., the test split from 1,000,000.., so held-out games never share a seed with
training ones. TextArena is an optional extra, imported only when a game is played.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from sparring.errors import ConfigError, SparringError
from sparring.gameapi import Action, ActionSpec, Event, Feedback, Game, Outcome, Seat, register_game
from sparring.gameapi.game import ACCEPTED, DatasetConfig, Instance
from sparring.games.textarena.hooks import HOOKS
from sparring.prompts import PromptSet
from sparring.types import Message, Strict

SPLIT_START = {"train": 0, "test": 1_000_000}
REJECTED = Feedback(accepted=False)


class TextArenaConfig(Strict):
    env_id: str = Field("TicTacToe-v0", description="a TextArena environment id (TicTacToe-v0, KuhnPoker-v0, "
                                                     "SimpleNegotiation-v0, ...; `sparring textarena list --all`)")
    num_players: int = Field(2, ge=1, le=8)
    max_turns: int = Field(200, ge=1, description="moves attempted after which the game ends as a draw "
                                                  "(a safety cap; TextArena's own limits come first)")
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="keyword arguments of the environment's "
                                       "constructor, over the ones its id registers (e.g. KuhnPoker-v0: "
                                       "{max_rounds: 1} for one hand a game)")
    reward: Literal["outcome", "chips"] = Field(
        "outcome", description="outcome: TextArena's rewards (win 1, loss -1, draw 0); chips: the chips each player "
        "won per hand (card games that keep `player_chips`: Kuhn Poker, Leduc Hold'em), a forfeit by invalid "
        "moves -1 a hand for the offender and +1 for the other")
    observation_from: str | None = Field(
        None, min_length=1, description="show each observation from the line of the last occurrence of this text "
        "on, TextArena's preamble (its rules) and earlier rounds cut: e.g. '### Starting round' for Kuhn Poker, "
        "whose hand is then ~40 tokens instead of ~250; unset: the whole observation, as TextArena shows it")


class TextArenaInstance(Instance):
    seed: int


class SeedArgs(Strict):
    n: int = Field(100, ge=1, description="how many seeds")
    start: int = Field(0, ge=0, description="offset inside the split's seed range")


@dataclass
class TextArenaState:
    env: Any
    seat_of: dict[int, str]  # TextArena player id -> sparring player
    prompts: dict[str, PromptSet]
    env_id: str
    current: tuple[int, str] | None = None  # (TextArena player id, its observation) of the player to move
    done: bool = False
    turns: int = 0
    attempts: dict[str, int] = field(default_factory=dict)
    invalid: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    capped: bool = False
    random_state: Any = None  # this episode's (python, numpy) global generator states, between calls
    # per player, each turn it took: (the observation it was shown, its reply), for the conversation view
    history: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@contextmanager
def own_random(state: TextArenaState | None, seed: int | None = None) -> Iterator[None]:
    """Run an environment call on the episode's own global-generator states (fresh from `seed` at
    reset), leaving everyone else's as they were."""
    import numpy as np

    saved = (random.getstate(), np.random.get_state())
    if state is not None and state.random_state is not None:
        random.setstate(state.random_state[0])
        np.random.set_state(state.random_state[1])
    elif seed is not None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        if state is not None:
            state.random_state = (random.getstate(), np.random.get_state())
        random.setstate(saved[0])
        np.random.set_state(saved[1])


@register_game("textarena")
class TextArenaGame(Game[TextArenaInstance, TextArenaState]):
    name: ClassVar[str] = "textarena"
    Config = TextArenaConfig
    InstanceType = TextArenaInstance
    default_prompts: dict[str, str] = {"player": "textarena"}
    hooks = HOOKS
    ranking: ClassVar[Literal["reward", "none"]] = "reward"
    config: TextArenaConfig

    def players(self) -> dict[str, str]:
        return {f"Player {i}": "player" for i in range(self.config.num_players)}

    @classmethod
    def catalog(cls, everything: bool = False) -> list[tuple[str, int | None, str | None]]:
        """(env id, players, why unavailable) of the shipped environments, or of every base
        environment TextArena registers (`-v0`), each probed offline."""
        from sparring.games.textarena.envs import SHIPPED, env_ids, probe

        ids = [e for e in env_ids() if e.endswith("-v0")] if everything else list(SHIPPED)
        return [(e, *probe(e)) for e in ids]

    def reset(self, instance: TextArenaInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> TextArenaState:
        from sparring.games.textarena.envs import make

        names = list(self.players())
        missing = [p for p in names if p not in seats]
        if missing:
            raise ConfigError(f"textarena {self.config.env_id} needs seats for {', '.join(names)}; missing "
                              f"{', '.join(missing)}")
        order = names[::-1] if flip else names
        env = make(self.config.env_id, **self.config.env_kwargs)
        state = TextArenaState(env=env, seat_of=dict(enumerate(order)), prompts={p: seats[p].prompts for p in names},
                               env_id=self.config.env_id, attempts=dict.fromkeys(names, 0),
                               invalid=dict.fromkeys(names, 0))
        try:
            with own_random(state, seed=instance.seed):
                env.reset(num_players=self.config.num_players, seed=instance.seed)
                state.current = env.get_observation()
        except Exception as e:  # an environment that cannot start offline, or with this many players
            raise SparringError(f"TextArena {self.config.env_id} could not start: {type(e).__name__}: {e}") from None
        return state

    def to_act(self, state: TextArenaState) -> list[str]:
        if state.done or state.current is None:
            return []
        return [state.seat_of[state.current[0]]]

    def action_spec(self, state: TextArenaState, player: str) -> ActionSpec:
        return ActionSpec(kind="text", tag="move")

    def observation(self, state: TextArenaState, player: str) -> list[Message]:
        pid = next(i for i, p in state.seat_of.items() if p == player)
        text = self._shown(state.current[1]) if state.current and state.current[0] == pid else ""
        variables = {"env_id": state.env_id, "player": f"Player {pid}", "observation": text}
        return [Message(role="system", content=state.prompts[player].render("system", 0, **variables)),
                Message(role="user", content=state.prompts[player].render("observation", 0, **variables))]

    def conversation(self, state: TextArenaState, player: str) -> list[Message]:
        """The same game as a chat that only grows: the system prompt, then per turn the part of
        TextArena's observation that is new since the player's last turn (its LLM observation
        wrapper only ever appends) and the player's reply as it wrote it; the pending observation's
        new part last, when the player is to move."""
        pid = next(i for i, p in state.seat_of.items() if p == player)
        variables = {"env_id": state.env_id, "player": f"Player {pid}"}
        prompts = state.prompts[player]
        msgs = [Message(role="system", content=prompts.render("system", 0, observation="", **variables))]
        shown = ""
        turns = list(state.history.get(player, []))
        pending = state.current[1] if state.current and state.current[0] == pid else None
        for observed, reply in turns:
            text = self._shown(observed)
            msgs += [Message(role="user", content=prompts.render("observation", 0, observation=_new_part(text, shown),
                                                                 **variables)),
                     Message(role="assistant", content=reply)]
            shown = text
        if pending is not None:
            msgs.append(Message(role="user", content=prompts.render(
                "observation", 0, observation=_new_part(self._shown(pending), shown), **variables)))
        return msgs

    def _shown(self, text: str) -> str:
        """The part of TextArena's observation a player is shown: all of it, or with
        `observation_from` from the start of the line of that text's last occurrence (the current
        round: what a policy needs, with the rules repeated every turn cut, which makes the prompt
        several times shorter; textarena-kuhn-hand)."""
        marker = self.config.observation_from
        at = text.rfind(marker) if marker else -1
        return text if at < 0 else text[text.rfind("\n", 0, at) + 1:]

    def act(self, state: TextArenaState, player: str, action: Action) -> Feedback:
        text = (action.text or "").strip()
        pid = state.current[0] if state.current else -1
        state.history.setdefault(player, []).append((state.current[1] if state.current else "", action.text or ""))
        errors = self._errors(state)
        with own_random(state):
            done, _ = state.env.step(action=text)
        # TextArena's own verdict: within its error allowance the move is refused and counted
        # (`error_count`); past it the game ends and the offender's game info says `invalid_move`
        invalid = self._errors(state) > errors or bool(getattr(state.env.state, "made_invalid_move", False))
        state.turns += 1
        state.attempts[player] += 1
        if done or state.turns >= self.config.max_turns:
            state.capped = not done
            self._close(state)
            invalid = invalid or bool(state.info.get(player, {}).get("invalid_move"))
        else:
            with own_random(state):
                state.current = state.env.get_observation()
        state.invalid[player] += int(invalid)
        state.events.append(Event(index=len(state.events), player=player, tag="move", content=text,
                                  meta={"textarena_player": pid, "invalid": invalid}))
        # an invalid move is a rejected reply (never a training target, counted by GRPO's format
        # penalty); TextArena's own observation already tells the player, so no correction is added
        return REJECTED if invalid else ACCEPTED

    @staticmethod
    def _errors(state: TextArenaState) -> int:
        return int(getattr(state.env.state, "error_count", 0) or 0)

    def _close(self, state: TextArenaState) -> None:
        with own_random(state):
            rewards, info = state.env.close()
        state.done, state.current = True, None
        state.rewards = {state.seat_of[int(p)]: float(r) for p, r in (rewards or {}).items()} if not state.capped \
            else dict.fromkeys(state.seat_of.values(), 0.0)
        state.info = {state.seat_of[int(p)]: dict(v) for p, v in (info or {}).items()} if isinstance(info, dict) else {}

    def is_over(self, state: TextArenaState) -> bool:
        return state.done

    def _chips(self, state: TextArenaState) -> tuple[dict[str, float], int] | None:
        """Each player's chips won, and the hands played, when the environment keeps them."""
        game = getattr(getattr(state.env, "state", None), "game_state", None) or {}
        chips = game.get("player_chips")
        if not isinstance(chips, dict):
            return None
        rounds = int(getattr(state.env, "max_rounds", 0) or 0)
        current = int(game.get("current_round", rounds + 1))
        played = min(rounds, current - 1) if rounds else 1
        # after the last hand TextArena (0.7.4) deals a hand that is never played and takes its antes:
        # they go back to the players
        back = float(getattr(state.env, "ante", 0) or 0) if rounds and current > rounds else 0.0
        return {state.seat_of[int(p)]: float(c) + back for p, c in chips.items()}, max(1, played)

    def outcome(self, state: TextArenaState) -> Outcome:
        rewards = state.rewards or dict.fromkeys(state.seat_of.values(), 0.0)
        best = max(rewards.values()) if rewards else 0.0
        leaders = [p for p, r in rewards.items() if r == best]
        winner = leaders[0] if len(leaders) == 1 and len(rewards) > 1 else None
        reasons = {_seat_names(str(v.get("reason")), state.seat_of) for v in state.info.values() if v.get("reason")}
        attempts = sum(state.attempts.values())
        extra: dict[str, Any] = {}
        chips = self._chips(state)
        if chips is not None:
            won, hands = chips
            forfeit = [p for p, v in state.info.items() if v.get("invalid_move")]
            per_hand = {p: c / hands for p, c in won.items()}
            if forfeit:  # lost by invalid moves: every hand lost
                per_hand = {p: -1.0 if p in forfeit else 1.0 for p in won}
            extra = {"chips": won, "hands": hands, "payoff_per_hand": per_hand, "forfeit": bool(forfeit)}
            if self.config.reward == "chips":
                rewards = per_hand
        elif self.config.reward == "chips":
            raise SparringError(f"reward: chips needs an environment that keeps player_chips; {state.env_id} does not")
        return Outcome(rewards=rewards, winner=winner, reason="turn cap" if state.capped else "; ".join(sorted(reasons)),
                       metrics={**extra, "env_id": state.env_id, "turns": state.turns, "draw": winner is None,
                                "invalid_moves": dict(state.invalid), "attempts": dict(state.attempts),
                                "invalid_rate": sum(state.invalid.values()) / attempts if attempts else 0.0,
                                "capped": state.capped,
                                "first_mover": state.seat_of[0]})

    def events(self, state: TextArenaState) -> list[Event]:
        return list(state.events)

    def fork(self, state: TextArenaState) -> TextArenaState:
        """The environment deep-copied (TextArena's envs support it); prompt sets are shared."""
        return dataclasses.replace(state, env=copy.deepcopy(state.env), attempts=dict(state.attempts),
                                   random_state=copy.deepcopy(state.random_state),
                                   invalid=dict(state.invalid), events=list(state.events), rewards=dict(state.rewards),
                                   info=copy.deepcopy(state.info),
                                   history={p: list(h) for p, h in state.history.items()})

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[TextArenaInstance]:
        """`seeds`: `n` seeds from the split's range (train 0.., test 1,000,000..; no split: train)."""
        if dataset.name != "seeds":
            raise ConfigError(f"unknown textarena dataset {dataset.name!r}; use seeds")
        from sparring.config_io import validate

        a = validate(SeedArgs, dataset.args, prefix="dataset.args")
        split = dataset.split or "train"
        if split not in SPLIT_START:
            raise ConfigError(f"dataset.split {split!r}: use train or test (disjoint seed ranges)")
        n = min(a.n, dataset.limit) if dataset.limit else a.n
        first = SPLIT_START[split] + a.start
        return [TextArenaInstance(id=f"{self.config.env_id}/seed-{s}", seed=s) for s in range(first, first + n)]

    def instance_summary(self, instance: TextArenaInstance) -> dict[str, Any]:
        split = "test" if instance.seed >= SPLIT_START["test"] else "train"
        return {"id": instance.id, "seed": instance.seed, "metadata": {"split": split}}

    def record_state(self, state: TextArenaState) -> dict[str, Any]:
        return {"env_id": state.env_id, "seats": {str(k): v for k, v in state.seat_of.items()},
                "textarena_info": state.info}


def _new_part(text: str, shown: str) -> str:
    """What `text` (TextArena's whole observation so far) adds to `shown` (the last one the player
    saw). The LLM observation wrapper appends, so `shown` is its start; if an environment ever
    rewrote it, the whole text is shown again (and the engine's growth check still holds: nothing
    earlier in the conversation changes)."""
    return text[len(shown):].lstrip("\n") if shown and text.startswith(shown) else text


_PLAYER = re.compile(r"\bPlayer (\d+)\b")


def _seat_names(text: str, seat_of: dict[int, str]) -> str:
    """TextArena's "Player N" (its own numbering) as the sparring player in that seat: in a flipped
    game TextArena's player 0 is sparring's "Player 1", and a reason "Player 0 has won!" beside
    `winner: Player 1` would read as a contradiction (issue #61)."""
    return _PLAYER.sub(lambda m: seat_of.get(int(m.group(1)), m.group(0)), text)
