"""sparring's own online trainer, one process: PPO (`algorithm: ppo`) and GRPO (`algorithm: grpo`,
`trainer: sparring`) over whole games played by the engine, the learner against fixed opponents,
itself, or a league of its earlier checkpoints (`opponents.py`).

Each step plays `prompts_per_step` x `num_generations` games with the learner's current weights,
then, for every trained seat of every game:
1. old log-probabilities: the ones the rollout recorded when the learner sampled with the trained
   weights at temperature 1 and top_p 1 (`rollout_logprobs`, on-policy: no pass), else a scoring
   pass; the reference's only when a KL term is on (PPO `ppo.kl_coef`, GRPO `beta` > 0); PPO's
   values from a values-only pass (no output layer);
2. advantages: PPO — each turn's reward minus kl_coef x its KL to the reference, GAE over the
   seat's turns (γ `gamma`, λ `ppo.lam`), optionally whitened; GRPO — the seat's episode reward minus a
   baseline (`advantages.py`: group, role, SPIRAL's per-role RAE) or (`credit: turn`) each turn's return-to-go;
3. the loss on exactly the sampled tokens: clipped policy ratio (PPO-clip; on-policy the ratio is 1),
   PPO's clipped value loss x vf_coef, GRPO's KL (k3) x beta, minus ent_coef x entropy. PPO runs
   `ppo.ppo_epochs` passes of minibatches of `ppo.minibatch_size` sequences, an optimizer step each;
   GRPO one optimizer step per step, its sequences `micro_batch_size` at a time (accumulated), the
   loss normalised by the step's trained tokens (DAPO, TRL's default).
Every pass runs the prefix its batch shares once (`forward.py`; training passes not under
`gradient_checkpointing`), and every step reports where its time and tokens went (`step_cost.py`).
The parts: what a step plays (`collect.py`), its micro-batches (`batches.py`), the credit
(`advantages.py`), the loss (`losses.py`), the optimizer (`optim.py`), checkpoints
(`checkpoint.py`), the held-out evaluation (`evaluation.py`); the run around it (steps,
evaluation, checkpoints) is `run.py`.
"""

from __future__ import annotations

import random
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.errors import SparringError
from sparring.train import host_memory
from sparring.train.online.config import OnlineConfig
from sparring.train.online.trainer.advantages import Credit, grpo_credit, ppo_credit, turn_kl
from sparring.train.online.trainer.budget import positions_per_forward
from sparring.train.online.trainer.collect import STEP_STRIDE, Collected, prompts_for_step, seed_of
from sparring.train.online.trainer.items import Item, items_of
from sparring.train.online.trainer.losses import token_losses
from sparring.train.online.trainer.optim import check_tuning, optimizer, schedule
from sparring.train.step_cost import StepCost


class OnlineTrainer:
    """The learner, its optimizer and one step: play, score, credit, optimise."""

    def __init__(self, config: OnlineConfig, file: str, arena: Any, out: Path, console: Console | None = None):
        import torch

        from sparring.models.hf import HFModel
        from sparring.train.config import TrainSettings
        from sparring.train.online.learner import experiment_models_file, learner_temperature
        from sparring.train.online.ppo.value import ValueHead, hidden_size, load_head
        from sparring.train.online.rollout import LEARNER, EpisodeRollout, prompt_rows
        from sparring.train.online.trainer.advantages import Baselines
        from sparring.train.online.trainer.opponents import Opponents
        from sparring.train.policy import load_policy, lora_config, prepare_training, with_new_adapter

        self.config, self.file, self.arena, self.out = config, file, arena, out
        self.ppo = config.ppo
        self.is_ppo = config.algorithm == "ppo"
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.temperature = learner_temperature(arena, config, file)
        if self.temperature <= 0:
            from sparring.errors import ConfigError

            raise ConfigError("online RL learns from the policy's own samples: the learner's sampling temperature "
                              "must be > 0 (e.g. 1.0)", file=file,
                              key=f"experiment.agents.{config.learner_agent}.sampling.temperature")
        check_tuning(config, file)  # before any weights load
        if config.return_freed_memory:  # before the weights and the first pass allocate
            if not host_memory.return_freed_memory():
                self.console.print("return_freed_memory: not a Linux glibc process here; the allocator is left "
                                   "as it is")
        sampling = arena.agents[config.learner_agent].sampling
        self.exact_rollout_logprobs = self.temperature == 1.0 and float(sampling.top_p) >= 1.0
        players = arena.exp.seat_players
        self.opponents = Opponents(config.opponents, config.learner_agent, list(arena.exp.participants), len(players))
        seats = list(range(len(players))) if config.opponents.mode == "self_play" else config.seats
        self.rows = prompt_rows(sorted(arena.instances), seats[:1] if config.opponents.mode == "self_play" else seats)
        if not self.rows:
            raise SparringError(f"{file}: the experiment's dataset has no instances")
        settings = TrainSettings(model=config.model, lora=config.lora, adapter=config.adapter,
                                 models_file=experiment_models_file(config, file))
        model, self.tokenizer = load_policy(settings)
        torch.manual_seed(seed_of(config.seed, "init"))
        if config.adapter:  # continue this adapter; a frozen copy of it is the reference
            if self.kl_coef > 0:
                model.load_adapter(config.adapter, adapter_name="ref", is_trainable=False)
            model.set_adapter("default")
        else:
            model = with_new_adapter(model, lora_config(settings))
        if not hasattr(model, "peft_config"):
            raise SparringError("the online trainer trains a LoRA adapter: set `lora` (or `adapter`)")
        # no dropout: the training pass computes the policy the rollout sampled from; checkpointing drops
        # the key/value cache, so training passes then share no prefix
        prepare_training(model, config.disable_dropout, bool(config.gradient_checkpointing))
        self.train_share_prefix = config.share_prefix and not config.gradient_checkpointing
        self.model = model
        self.lora_settings = settings
        self.device = next(model.parameters()).device
        self.head = ValueHead(hidden_size(model)).to(self.device) if self.is_ppo else None
        if self.head is not None and config.adapter:
            load_head(self.head, config.adapter)
        policy_params = [p for n, p in model.named_parameters() if p.requires_grad]
        self.optimizer = optimizer(config, policy_params, self.head)
        self.scheduler = schedule(self.optimizer, config)
        self.params = policy_params + (list(self.head.parameters()) if self.head is not None else [])
        self.learner = HFModel.from_objects(model, self.tokenizer, name=LEARNER, default_adapter="default")
        self.learner.record_hidden = self.head is not None and config.ppo.rollout_values
        self.arena.pool.add(LEARNER, self.learner)
        self.rollout = EpisodeRollout(arena, config.learner_agent, self.tokenizer, config.num_generations,
                                      config.format_penalty, config.seed, train_rejected=config.train_rejected)
        self.baselines = Baselines(config.baseline, config.reward_scale, config.rae_decay)  # type: ignore[arg-type]
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.best: dict[str, Any] | None = None
        self.roof = 0.0  # training roof tokens/s, probed by the run
        self.credit = Credit()
        self.rollout_store: Any = None  # a RunStore that keeps every training game (`keep_rollouts`)
        self.max_positions = positions_per_forward(config.micro_batch_tokens, model, self.device, self.console,
                                                   keeps_freed=host_memory.keeps_freed_memory(self.device))

    @property
    def kl_coef(self) -> float:
        return float(self.config.ppo.kl_coef if self.config.algorithm == "ppo" else self.config.beta)

    # -- one step ---------------------------------------------------------------------------
    def jobs(self, step: int) -> list[tuple[Any, tuple[int, ...], int]]:
        """This step's games: (job, trained seats, group) each; seeds derive from the step."""
        from sparring.engine.schedule import derive_seed
        from sparring.train.online.rollout import parse_prompt

        prompts = prompts_for_step(self.rows, self.config.prompts_per_step, step, self.config.seed)
        out = []
        for n, prompt in enumerate(prompts):
            instance_id, seat = parse_prompt(prompt)
            group = derive_seed(self.config.seed, "grpo-group", step, n, instance_id, seat)
            for copy in range(self.config.num_generations):
                seed = derive_seed(self.config.seed, "grpo", step, n, instance_id, seat, copy)
                seating = self.opponents.seating(seat, random.Random(seed), random.Random(group))
                job = self.arena.job(instance_id, seating.agents, seed=seed,
                                     repeat=step * STEP_STRIDE + n * self.config.num_generations + copy)
                out.append((job, seating.trained, n))
        return out

    def collect(self, step: int) -> Collected:
        """Play this step's games and cut each trained seat's turns into training items."""
        from sparring.train.online.credit import turn_rewards, turn_states
        from sparring.train.online.rollout import LEARNER
        from sparring.train.online.sequence import check_sampled, learner_sequences
        from sparring.train.policy import merged_adapter

        planned = self.jobs(step)
        c = Collected()
        self.model.set_adapter("default")
        merge = self.config.merge_rollout and self.config.opponents.mode != "league"  # leagues switch adapters
        with merged_adapter(self.model, self.learner.clear_prefix_cache) if merge else nullcontext():
            c.records = self.arena.play([job for job, _, _ in planned], store=self.rollout_store)
        self.model.set_adapter("default")  # league games switch adapters; train the learner's
        players = self.arena.exp.seat_players

        def ids(call: Any) -> list[int]:
            return self.learner.prompt_ids(call.messages, call.assistant_prefix,
                                           call.sampling.max_new_tokens if call.sampling else 1)

        for e, ((_, trained, group), rec) in enumerate(zip(planned, c.records, strict=True)):
            if rec.status == "failed":
                continue
            for s in trained:
                player = players[s]
                reward = self.rollout.reward(rec, player)
                # an extending game is one sequence under turn credit too: tokens carry their turn's advantage
                seqs = learner_sequences(rec, player, ids, model=LEARNER, train_rejected=self.config.train_rejected)
                check_sampled(rec, seqs)
                if reward is None or not seqs:
                    continue
                key = (e, player)
                turns = [i for q in seqs for i in q.calls]
                c.rewards[key] = turn_rewards(rec, turns, reward)
                if self.config.turn_baseline == "state":
                    c.states[key] = turn_states(rec, turns)
                c.groups[key] = group
                c.kept[e] = rec
                c.items += items_of(e, seqs, player, record=rec)
        return c

    def _batches(self, items: list[Item], size: int, generator: random.Random | None = None,
                 share_prefix: bool | None = None) -> list[list[Item]]:
        from sparring.train.online.trainer.batches import micro_batches  # torch: imported when training

        return micro_batches(items, size, generator, self.config.share_prefix if share_prefix is None else share_prefix,
                             self.max_positions)

    def score(self, items: list[Item], cost: StepCost) -> None:
        """Old and reference log-probabilities and old values, without gradients — only the passes
        this configuration needs."""
        import torch

        from sparring.train.online.trainer.forward import forward

        need_old = not (self.config.rollout_logprobs and self.exact_rollout_logprobs
                        and all(it.has_sampled_logprobs() for it in items))
        from sparring.train.online.ppo.value import values_of  # torch: imported when training

        # PPO's old values from the states the rollout computed (the same weights, the same positions)
        from_rollout = self.head is not None and self.ppo.rollout_values and all(it.has_states() for it in items)
        head = None if from_rollout else self.head
        for it in items:
            if not need_old:
                it.old_logprobs = list(it.sampled_logprobs)
            it.ref_logprobs = []
            it.old_values = (values_of(self.head, it.states, self.device) if from_rollout and self.head is not None
                             else [0.0] * len(it.turns))
        if not (need_old or self.kl_coef > 0 or head is not None):
            return
        self.model.eval()
        size = max(self.ppo.minibatch_size, self.config.micro_batch_size)
        with cost.part("scoring"), torch.no_grad():
            for batch in self._batches(items, size):
                if need_old or head is not None:
                    logprobs, values, _ = forward(self.model, head, batch, self.temperature, self.pad_id,
                                                  with_logprobs=need_old, share_prefix=self.config.share_prefix,
                                                  cost=cost, kind="scoring")
                    for k, it in enumerate(batch):
                        if need_old:
                            it.old_logprobs = logprobs[k].tolist()
                        if head is not None:
                            it.old_values = values[k].tolist()
                if self.kl_coef > 0:
                    with self._reference():
                        ref, _, _ = forward(self.model, None, batch, self.temperature, self.pad_id,
                                            share_prefix=self.config.share_prefix, cost=cost, kind="scoring")
                    for it, lp in zip(batch, ref, strict=True):
                        it.ref_logprobs = lp.tolist()

    def _reference(self) -> Any:
        if "ref" in self.model.peft_config:
            @contextmanager
            def swap() -> Any:
                self.model.set_adapter("ref")
                try:
                    yield
                finally:
                    self.model.set_adapter("default")
            return swap()
        return self.model.disable_adapter()

    def advantages(self, c: Collected) -> dict[str, Any]:
        """This step's credit (`self.credit`: each seat's turn advantages, PPO's value targets) and its stats."""
        kl = turn_kl(c.items, c.rewards)
        turns_kl = [x for k in kl for x in kl[k]]
        stats = {"kl": sum(turns_kl) / len(turns_kl) if turns_kl and self.kl_coef > 0 else None,
                 "turn_reward": sum(r for k in c.rewards for r in c.rewards[k])
                 / max(1, sum(map(len, c.rewards.values())))}
        if self.is_ppo:
            self.credit = ppo_credit(c.items, c.rewards, kl, self.ppo, self.config.gamma)
        else:
            self.credit = grpo_credit(c.rewards, c.groups, self.baselines, self.config.credit, self.config.gamma,
                                      self.config.turn_baseline, c.states)
        return {**stats, **self.credit.stats}

    def _losses(self, batch: list[Item], cost: StepCost) -> tuple[Any, dict[str, Any]]:
        """The summed (not averaged) token losses of a batch and their parts."""
        from sparring.train.online.trainer.forward import forward

        logprobs, values, entropies = forward(self.model, self.head, batch, self.temperature, self.pad_id,
                                              with_entropy=True, share_prefix=self.train_share_prefix,
                                              cost=cost, kind="training")
        return token_losses(batch, logprobs, values, entropies, self.credit, self.ppo, self.kl_coef,
                            with_kl=not self.is_ppo and self.kl_coef > 0)

    def optimise(self, items: list[Item], step: int, cost: StepCost) -> dict[str, float]:
        """PPO: epochs of minibatches, an optimizer step each; GRPO: one accumulated optimizer step."""
        cfg, ppo = self.config, self.ppo
        sums: dict[str, float] = {}
        self.model.train()
        with cost.part("training"):
            if self.is_ppo:
                plan = [(self._batches(items, ppo.minibatch_size, random.Random(seed_of(cfg.seed, "minibatch", step, e)),
                                       self.train_share_prefix), True) for e in range(ppo.ppo_epochs)]
            else:
                plan = [(self._batches(items, cfg.micro_batch_size, share_prefix=self.train_share_prefix), False)]
            for batches, step_each in plan:
                total = sum(len(it.positions) for it in items)
                self.optimizer.zero_grad(set_to_none=True)
                for batch in batches:
                    loss, parts = self._losses(batch, cost)
                    n = parts["tokens"] if step_each else total
                    (loss / n).backward()
                    for k, v in parts.items():
                        sums[k] = sums.get(k, 0.0) + float(v)
                    if step_each:
                        self._step()
                        self.optimizer.zero_grad(set_to_none=True)
                if not step_each:
                    self._step()
        self.model.eval()
        n = max(1.0, sums.get("tokens", 0.0))
        out = {"pg_loss": sums.get("pg", 0.0) / n, "entropy": sums.get("entropy", 0.0) / n,
               "clipfrac": sums.get("clipped", 0.0) / n, "approx_kl": sums.get("approx_kl", 0.0) / n}
        if "vf" in sums:
            out["vf_loss"] = sums["vf"] / max(1.0, sums["vf_n"])
        if "kl_loss" in sums:
            out["kl_loss"] = sums["kl_loss"] / n
        return out

    def _step(self) -> None:
        import torch

        if self.config.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)
        self.optimizer.step()

    def train_step(self, step: int) -> dict[str, Any]:
        import torch

        torch.manual_seed(seed_of(self.config.seed, "step", step))  # dropout: the same on a resumed run
        cost = StepCost()
        with cost.part("rollout"):
            c = self.collect(step)
        outcome = [float(sum(r)) for r in c.rewards.values()]
        point: dict[str, Any] = {"step": step + 1, "episodes": len(c.records),
                                 "failed": sum(1 for r in c.records if r.status == "failed"),
                                 "reward": sum(outcome) / len(outcome) if outcome else None,
                                 "turns": sum(map(len, c.rewards.values())),
                                 "trained_tokens": sum(len(it.positions) for it in c.items)}
        point.update(c.seat_rewards())
        point.update(c.game_metrics())
        if c.items:
            self.score(c.items, cost)
            point.update(self.advantages(c))
            point.update(self.optimise(c.items, step, cost))
        with warnings.catch_warnings():  # a step without items (no valid move) did no optimizer step
            warnings.simplefilter("ignore", UserWarning)
            self.scheduler.step()  # one schedule step per training step (PPO: whatever its minibatches)
        point["learning_rate"] = self.scheduler.get_last_lr()[0]
        cost.trained_tokens = point["trained_tokens"]
        point.update(cost.close().summary(self.roof or None))
        self.cost = cost
        self.after_step(step + 1)
        return point

    # -- league --------------------------------------------------------------------------------
    def after_step(self, done: int) -> None:
        """League: every `snapshot_every` steps the current adapter joins the league."""
        s = self.config.opponents
        if s.mode == "league" and done % s.snapshot_every == 0:
            self.snapshot(self.opponents.next_slot(done))

    def snapshot(self, slot: int) -> None:
        """Copy the current adapter into league slot `slot` (adapter `past-slot`), frozen."""
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        from sparring.train.online.trainer.opponents import SNAPSHOT

        name = SNAPSHOT.format(slot)
        if name not in self.model.peft_config:
            self.model.add_adapter(name, self.model.peft_config["default"])
        set_peft_model_state_dict(self.model, get_peft_model_state_dict(self.model, adapter_name="default"),
                                  adapter_name=name)
        self.model.set_adapter("default")  # adding an adapter must not change what trains
        for n, p in self.model.named_parameters():
            if f".{name}." in n:
                p.requires_grad_(False)
        self.rewrap()

    def rewrap(self) -> None:
        """A fresh backend wrapper that knows every adapter (the prefix cache starts empty)."""
        from sparring.models.hf import HFModel
        from sparring.train.online.rollout import LEARNER

        self.learner = HFModel.from_objects(self.model, self.tokenizer, name=LEARNER, default_adapter="default")
        self.arena.pool.add(LEARNER, self.learner)
