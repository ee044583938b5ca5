"""The GRPO rollout function: each prompt (an instance and the learner's seat) becomes a group of
whole episodes played through the engine's batched runner, the learner generating with the
trainer's current weights, every other seat played by its fixed model (a scripted partner, a
teacher, a judge).

TRL's `rollout_func` returns one sequence per prompt slot, and TRL forms groups of
`num_generations` consecutive slots. An episode has several learner calls, each of which must be
trained in the context it was sampled in (`sequence.py`), so the trainer gives every episode a
fixed number of slots, `sequences_per_episode` (S): TRL's `num_generations` is G * S for G
episodes per group. An episode's sequences fill its slots in call order; unused slots hold a
one-token placeholder with `env_mask` 0 (no loss); every slot of an episode carries that
episode's reward, so the group's mean reward is exactly the mean over its G episodes (the GRPO
baseline). An episode with more than S sequences trains its first S and the rest are counted
(`dropped_calls`) in the per-step log."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from sparring.engine.play import Arena
from sparring.errors import SparringError
from sparring.train import distributed
from sparring.train.export.conversation import reply_text
from sparring.train.online.credit import learner_reward, turn_normalised, turn_rewards, turn_states
from sparring.train.online.sequence import Sequence, check_sampled, learner_sequences, sampled_ids

LEARNER = "learner"  # the model alias the learner agent's config names


class EpisodeRollout:
    """`rollout_func(prompts, trainer)` for `GRPOTrainer`. `arena` plays the games; its learner
    agent's model is the alias `learner`, replaced by the trainer's model at every call.
    `on_step(stats)` receives each call's statistics (groups, zero-advantage share, tokens)."""

    def __init__(self, arena: Arena, learner_agent: str, tokenizer: Any, num_generations: int,
                 format_penalty: float = 0.0, seed: int = 0, sequences_per_episode: int = 1,
                 train_rejected: bool = False, on_step: Callable[[dict[str, Any]], None] | None = None,
                 credit: str = "episode", gamma: float = 1.0, turn_baseline: str = "group"):
        self.arena, self.learner_agent, self.tokenizer = arena, learner_agent, tokenizer
        self.num_generations, self.format_penalty, self.seed = num_generations, format_penalty, seed
        self.sequences_per_episode, self.train_rejected, self.on_step = sequences_per_episode, train_rejected, on_step
        self.credit, self.gamma, self.turn_baseline = credit, gamma, turn_baseline
        self.calls = 0
        self.last_records: list[Any] = []
        self._last_jobs: list[Any] = []
        self.last_sequences: list[list[Sequence]] = []
        self.history: list[dict[str, Any]] = []

    @property
    def slots(self) -> int:
        """TRL's `num_generations`: slots per group (episodes x sequences per episode)."""
        return self.num_generations * self.sequences_per_episode

    def _learner_model(self, trainer: Any) -> Any:
        from sparring.models.hf import HFModel
        from sparring.train.online.trl.vllm import vllm_learner

        served = vllm_learner(trainer, self.tokenizer, LEARNER)  # TRL's vLLM (use_vllm), weights synced
        if served is not None:
            return served
        model = trainer.accelerator.unwrap_model(trainer.model)
        peft = getattr(model, "peft_config", None)
        default = "default" if isinstance(peft, dict) and "default" in peft else None
        return HFModel.from_objects(model, self.tokenizer, name=LEARNER,
                                    **({"default_adapter": default} if default else {}))

    def jobs(self, prompts: list[Any], first: int = 0) -> list[Any]:
        """`num_generations` jobs (a group) per prompt, each with its own seed. A prompt names its
        instance and the learner's seat (see `prompt_rows`). `first`: the number of this step's
        groups on the processes before this one under `accelerate launch` (each process plays
        whole groups; numbering continues theirs, so every episode is the one a single process
        would play)."""
        from sparring.engine.schedule import derive_seed

        out: list[Any] = []
        for n, prompt in enumerate(prompts, start=first):
            instance_id, seat = parse_prompt(prompt)
            for copy in range(self.num_generations):
                seed = derive_seed(self.seed, "grpo", self.calls, n, instance_id, seat, copy)
                out.append(self.arena.job(instance_id, self.seating(seat), seed=seed,
                                          repeat=self.calls * 10_000 + n * self.num_generations + copy))
        return out

    @property
    def last_jobs(self) -> list[Any]:
        """The jobs of the last `play` (in the order of its records)."""
        return self._last_jobs

    def seating(self, seat: int) -> tuple[str, ...]:
        """The agents of one episode: the learner in `seat`, the other participants elsewhere."""
        others = [a for a in self.arena.exp.participants if a != self.learner_agent] or [self.learner_agent]
        agents = [others[i % len(others)] for i in range(len(self.arena.exp.seat_players))]
        agents[seat] = self.learner_agent
        return tuple(agents)

    meter: Any = None  # a step_cost.ForwardMeter counting the trainer's passes: paused while games are played

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
        import contextlib

        started = time.perf_counter()
        with self.meter.paused() if self.meter is not None else contextlib.nullcontext():
            out = self._rollout(prompts, trainer)
        self.history[-1]["rollout_total_s"] = round(time.perf_counter() - started, 3)
        return out

    def _rollout(self, prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
        learner = self._learner_model(trainer)
        self.arena.pool.add(LEARNER, learner)
        if len(prompts) % self.slots:
            raise SparringError(f"GRPO rollout: {len(prompts)} prompts is not a multiple of "
                                f"{self.slots} slots per group")
        prompt_ids = getattr(learner, "prompt_ids", None)
        if prompt_ids is None:
            raise SparringError("GRPO trains exactly the learner's sampled tokens in the context it saw, which needs "
                                f"the prompt's token ids, which the {type(learner).__name__} learner cannot give "
                                "(it has no `prompt_ids`)")
        groups = prompts[:: self.slots]
        started = time.perf_counter()
        records, sequences = self.play(groups, prompt_ids, first=len(distributed.preceding(groups)))
        played_s = time.perf_counter() - started
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                     "episode_reward": [], "episode_id": []}
        pad = self.tokenizer(self.tokenizer.eos_token, add_special_tokens=False)["input_ids"][:1]
        dropped = 0
        credits = self.turn_credit(records, sequences) if self.credit == "turn" else None
        for n, (rec, seqs, job) in enumerate(zip(records, sequences, self._last_jobs, strict=True)):
            reward = self.reward(rec, self.player_of(job))
            dropped += sum(len(s.calls) for s in seqs[self.sequences_per_episode:])
            for slot in range(self.sequences_per_episode):
                row: tuple[list[int], list[int], list[int], list[float]]
                if slot < len(seqs):
                    s = seqs[slot]
                    row = (s.prompt_ids, s.completion_ids, s.env_mask, s.logprobs)
                    if credits is not None and reward is not None:
                        reward_of_slot = credits[n][slot]
                else:  # a placeholder slot: no loss, the episode's reward keeps the group mean exact
                    row = (list(pad), list(pad), [0], [math.nan])
                    if credits is not None and reward is not None:
                        reward_of_slot = 0.0  # turn credit: the group's real turns already have mean 0
                out["prompt_ids"].append(list(row[0]))
                out["completion_ids"].append(list(row[1]))
                out["env_mask"].append(list(row[2]))
                out["logprobs"].append(list(row[3]))
                out["episode_reward"].append(reward if credits is None or reward is None else reward_of_slot)
                out["episode_id"].append(rec.id)
        self._report(records, sequences, dropped, played_s)
        return out

    def play(self, prompts: list[Any], prompt_ids: Callable[..., list[int]],
             first: int = 0) -> tuple[list[Any], list[list[Sequence]]]:
        """Play a group per prompt; return the records and each one's learner sequences (the
        invariant `check_sampled` holds for every one)."""
        jobs = self.jobs(prompts, first)
        records = self.arena.play(jobs)
        self.calls += 1
        self._last_jobs = jobs
        self.last_records = records

        def ids(call: Any) -> list[int]:
            return prompt_ids(call.messages, call.assistant_prefix,
                              call.sampling.max_new_tokens if call.sampling else 1)

        sequences = []
        for job, rec in zip(jobs, records, strict=True):
            seqs = [] if rec.status == "failed" else learner_sequences(
                rec, self.player_of(job), ids, model=LEARNER, train_rejected=self.train_rejected,
                split_calls=self.credit == "turn")
            check_sampled(rec, seqs)
            sequences.append(seqs)
        self.last_sequences = sequences
        return records, sequences

    def turn_credit(self, records: list[Any], sequences: list[list[Sequence]]) -> list[list[float]]:
        """Turn credit: each sequence (one learner call) gets its return-to-go, normalised over
        every turn of the group's episodes (`turn_baseline`: against all of them or those at its
        turn number, score state or game state; failed episodes have no turns)."""
        g = self.num_generations
        rewards: list[list[float]] = []
        states: list[list[str]] = []
        for rec, seqs, job in zip(records, sequences, self._last_jobs, strict=True):
            reward = self.reward(rec, self.player_of(job))
            calls = [s.calls[0] for s in seqs]
            rewards.append([] if reward is None else turn_rewards(rec, calls, reward))
            states.append([] if reward is None else turn_states(rec, calls))
        out: list[list[float]] = []
        for i in range(0, len(rewards), g):
            out += turn_normalised(rewards[i:i + g], self.gamma, self.turn_baseline, states[i:i + g])
        return out

    def player_of(self, job: Any) -> str:
        players = self.arena.exp.seat_players
        return players[[job.seats[p] for p in players].index(self.learner_agent)]

    def reward(self, record: Any, player: str) -> float | None:
        """The outcome for the learner (negotiation reward under the objective, the judge's
        probability for a debater's side, a game score), minus `format_penalty` per rejected reply.
        None for a failed episode (no outcome): TRL leaves it out of its group's baseline."""
        if record.status == "failed" or record.outcome is None:
            return None
        return learner_reward(record, player, self.format_penalty)

    def _report(self, records: list[Any], sequences: list[list[Sequence]], dropped: int, played_s: float = 0.0) -> None:
        g = self.num_generations
        groups = [[self.reward(r, self.player_of(j)) for r, j in zip(records[i:i + g], self._last_jobs[i:i + g],
                                                                    strict=True)]
                  for i in range(0, len(records), g)]
        zero = sum(1 for grp in groups if len({round(x, 9) for x in grp if x is not None}) <= 1)
        real = [x for grp in groups for x in grp if x is not None]
        stats: dict[str, Any] = {
            "rollout": self.calls, "episodes": len(records), "groups": len(groups), "zero_advantage_groups": zero,
            "zero_advantage_fraction": zero / len(groups) if groups else 0.0,
            "sequences": sum(min(len(s), self.sequences_per_episode) for s in sequences), "dropped_calls": dropped,
            "trained_tokens": sum(len(q.trained_ids()) for s in sequences for q in s[: self.sequences_per_episode]),
            # what the optimizer step runs forward and backward (prompt + completion of every used slot)
            "sequence_tokens": sum(len(q.prompt_ids) + len(q.completion_ids)
                                   for s in sequences for q in s[: self.sequences_per_episode]),
            "rollout_s": round(played_s, 3), "mean_reward": sum(real) / len(real) if real else None,
            "failed": sum(1 for r in records if r.status == "failed"),
            "rewards": [[None if x is None else round(x, 4) for x in grp] for grp in groups]}
        example = next(((r, s[0]) for r, s in zip(records, sequences, strict=True) if s), None)
        if example is not None:
            rec, seq = example
            sampled = [t for i in seq.calls for t in sampled_ids(rec, i)]
            stats["example"] = {
                "episode_id": rec.id, "calls": seq.calls,
                "trained_text": self.tokenizer.decode(seq.trained_ids()),
                "sampled_text": self.tokenizer.decode(sampled),
                "equal": seq.trained_ids() == sampled,
                "game_text": [reply_text(rec.calls[i]) for i in seq.calls]}
        self.history.append(stats)
        if self.on_step is not None:
            self.on_step(stats)


def prompt_rows(instance_ids: list[str], seats: list[int]) -> list[dict[str, Any]]:
    """The GRPO dataset: one conversational prompt per (instance, learner seat). The game itself
    renders what the learner sees; the prompt only names the episode to play."""
    return [{"prompt": [{"role": "user", "content": json.dumps({"instance_id": i, "seat": s})}]}
            for i in instance_ids for s in seats]


def parse_prompt(prompt: Any) -> tuple[str, int]:
    text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
    data = json.loads(text)
    return str(data["instance_id"]), int(data["seat"])


def episode_reward(prompts: Any = None, completions: Any = None, episode_reward: list[float | None] | None = None,
                   **kwargs: Any) -> list[float | None]:
    """GRPO reward function: the episode outcomes the rollout computed (None: a failed episode)."""
    return list(episode_reward or [])
