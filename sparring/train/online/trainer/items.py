"""The trainer's data: one `Item` per training sequence of one learner seat of one episode.

An episode's learner sequences (`online/sequence.py`: exactly the tokens the learner sampled, in the
context it sampled them) hold its turns as the runs of `env_mask` = 1, one run per call, in order.
Each turn t of a seat gets a value V_t (PPO: the value head at the token just before the turn's
first sampled token, the state it answers), a reward r_t (`credit.turn_rewards`), an advantage
A_t; every token the turn sampled carries A_t. In self-play one episode has several trained
seats: their turns are numbered per seat, and `key` = (episode, seat) names a seat's trajectory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Key = tuple[int, str]  # (episode index in the step, the learner's player id in that episode)


@dataclass
class Item:
    """One training sequence of one learner seat of one episode."""

    episode: int
    ids: list[int]                  # prompt + completion token ids
    positions: list[int]            # positions (in ids) of the learner's sampled tokens
    token_turn: list[int]           # the seat's turn of each sampled token
    starts: list[int]               # per turn of this sequence: the position whose hidden state gives V
    turns: list[int]                # the seat's turns this sequence holds, in order
    seat: str = ""                  # the learner's player id (a role: "Player_1", "Debater_A", ...)
    sampled_logprobs: list[float] = field(default_factory=list)  # what the rollout recorded (NaN: none)
    # per turn: the decoder's last hidden state at `starts[t]` as the rollout computed it (None: not
    # recorded); PPO's old values then need no pass
    states: list[list[float] | None] = field(default_factory=list)
    # filled before the optimisation
    old_logprobs: list[float] = field(default_factory=list)
    ref_logprobs: list[float] = field(default_factory=list)
    old_values: list[float] = field(default_factory=list)

    @property
    def key(self) -> Key:
        return (self.episode, self.seat)

    def has_states(self) -> bool:
        return len(self.states) == len(self.turns) and all(s is not None for s in self.states)

    def has_sampled_logprobs(self) -> bool:
        return len(self.sampled_logprobs) == len(self.positions) and not any(
            math.isnan(x) for x in self.sampled_logprobs)


def items_of(episode: int, sequences: list[Any], seat: str = "", record: Any = None) -> list[Item]:
    """The training items of one learner seat's sequences in an episode; turns numbered across them.
    With the episode's `record`, each turn's hidden state as its call's completion carries it."""
    out: list[Item] = []
    turn = 0
    for seq in sequences:
        ids = list(seq.prompt_ids) + list(seq.completion_ids)
        offset = len(seq.prompt_ids)
        positions, token_turn, starts, turns, sampled = [], [], [], [], []
        previous = 0
        for j, m in enumerate(seq.env_mask):
            if m:
                if not previous:  # a run starts: a new turn
                    starts.append(offset + j - 1)
                    turns.append(turn)
                    turn += 1
                positions.append(offset + j)
                token_turn.append(turns[-1])
                sampled.append(float(seq.logprobs[j]) if j < len(seq.logprobs) else math.nan)
            previous = m
        if len(turns) != len(seq.calls):
            raise ValueError(f"a sequence of {len(seq.calls)} call(s) has {len(turns)} runs of sampled tokens")
        if positions:
            states = [] if record is None else [_hidden(record.calls[i]) for i in seq.calls]
            out.append(Item(episode=episode, ids=ids, positions=positions, token_turn=token_turn, starts=starts,
                            turns=turns, seat=seat, sampled_logprobs=sampled, states=states))
    return out


def _hidden(call: Any) -> list[float] | None:
    comps = call.completions or []
    comp = comps[call.chosen if call.chosen is not None else 0] if comps else None
    return None if comp is None else comp.hidden
