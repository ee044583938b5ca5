"""Schema of an online GRPO run (`configs/train/grpo-*.yaml`, `scripts/run_grpo.py`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from sparring.train.config import LoraSettings, TuningSettings
from sparring.train.online.ppo.config import PPOSettings
from sparring.train.online.trainer.opponents import OpponentSettings
from sparring.types import Strict


class VLLMSettings(Strict):
    """TRL's vLLM integration for the learner's rollouts (GPUs; see `sparring/train/online/trl/vllm.py`)."""

    mode: Literal["server", "colocate"] = Field("server", description="server: `trl vllm-serve` on GPUs of its "
                                                "own; colocate: a vLLM engine inside every training process")
    server_base_url: str | None = Field(None, description="server mode: e.g. http://127.0.0.1:8000 "
                                                          "(default: TRL's, port 8000)")
    gpu_memory_utilization: float = Field(0.3, gt=0.0, le=1.0, description="colocate mode")
    tensor_parallel_size: int = Field(1, ge=1, description="colocate mode")
    max_model_length: int | None = Field(None, ge=16, description="vLLM's context window (colocate mode)")
    enable_sleep_mode: bool = Field(False, description="colocate mode: free vLLM's memory during the optimizer step")


class OnlineConfig(TuningSettings):
    """One online RL run (`scripts/run_grpo.py`): GRPO (TRL's trainer, group-relative credit) or
    PPO (a value head, GAE over the learner's turns), on games played by the engine."""

    name: str = ""
    description: str = ""
    algorithm: Literal["grpo", "ppo"] = Field("grpo", description="grpo: group-relative (or per-role) advantages, "
                                              "no critic; ppo: an actor-critic with a value head and GAE")
    trainer: Literal["trl", "sparring"] | None = Field(
        None, description="grpo: `trl` (TRL's GRPOTrainer: accelerate, DeepSpeed, vLLM; the default) or "
        "`sparring` (one process, the prompt shared by a group's games, rollout log-probs, self-play with "
        "per-role baselines); ppo is always sparring's")
    opponents: OpponentSettings = Field(default_factory=OpponentSettings,
                                        description="who the learner plays (sparring's trainer): fixed, self_play, league")
    baseline: Literal["group", "role", "rae"] = Field(
        "group", description="sparring's GRPO: group (the mean over a group's games), role (the group mean per "
        "role), rae (a running mean per role, SPIRAL's role-conditioned advantage estimation)")
    scale_rewards: Literal["group", "batch", "none"] | None = Field(
        None, description="sparring's GRPO: divide advantages by the group's (or the step's) reward std; default "
                          "group, none with baseline rae")
    rae_decay: float = Field(0.95, ge=0.0, lt=1.0, description="baseline rae: decay of each role's running mean")
    rollout_logprobs: bool = Field(True, description="sparring's trainer: take the old policy's log-probs from the "
                                   "rollout (the learner samples with the trained weights at temperature 1, top_p 1) "
                                   "instead of a scoring pass; false: always a scoring pass")
    share_prefix: bool = Field(True, description="sparring's trainer: run the prefix a batch's sequences share "
                                                 "once (the same loss, fewer tokens through the model)")
    micro_batch_size: int = Field(8, ge=1, description="sparring's GRPO: sequences per forward/backward; the step's "
                                                       "gradients are accumulated into one optimizer step")
    merge_rollout: bool = Field(
        True, description="sparring's trainer: the learner plays its games with the LoRA adapter merged into the base "
                          "weights (PEFT's merge_adapter; unmerged before any scoring or training pass): a decoded "
                          "token took 50 instead of 73 ms on the 2-core CPU (batch 4, SmolLM2-135M). Unmerging "
                          "leaves the base weights within float rounding (~1e-7) of the loaded ones. Off in league "
                          "mode, where the checkpoints' adapters take turns on the same model")
    micro_batch_tokens: Annotated[int, Field(ge=1)] | Literal["auto"] | None = Field(
        "auto", description="sparring's trainer: the most token positions one forward/backward computes (the "
                            "shared prefix once, each row's suffix padded to the longest; a longer single "
                            "sequence runs alone) - bounds memory by tokens, not rows (GRPO's step and every "
                            "scoring pass; PPO's shuffled minibatches are `ppo.minibatch_size` rows); auto: "
                            "half the memory available at the start over what one position of a forward/backward "
                            "was measured to take (trainer/budget.py); none: micro_batch_size alone")
    model: str = Field("smollm2-135m", description="the learner's base model (a models.yaml name or a directory)")
    adapter: str | None = Field(None, description="a LoRA adapter directory of `model` to start from (e.g. an SFT "
                                "warm start): that adapter is trained further (`lora` is then ignored) and, with "
                                "beta > 0, a frozen copy of it is the KL reference; none: a new LoRA (`lora`)")
    learner_agent: str = Field("learner", description="the agent of `experiment` that is trained; its model "
                                                      "must be the alias `learner`")
    experiment: dict[str, Any] = Field(description="an experiment config: game, dataset (training split), agents")
    seats: list[int] = Field(default_factory=lambda: [0], description="seats the learner plays (0-based)")
    num_generations: int = Field(4, ge=1, description="episodes per prompt (a GRPO group: at least 2)")
    prompts_per_step: int = Field(1, ge=1)
    max_steps: int = Field(4, ge=1)
    learning_rate: float = Field(1e-5, gt=0.0)
    beta: float = Field(0.0, ge=0.0, description="KL coefficient to the reference, the starting policy: the base "
                        "model, or `adapter` as it was before this run (0: no KL, as TRL's default)")
    format_penalty: float = Field(0.0, ge=0.0, description="reward minus this per rejected reply")
    credit: Literal["episode", "turn"] = Field(
        "episode", description="episode: every token of an episode gets its group-relative episode reward; turn: "
                               "each learner turn gets its return-to-go (its step rewards and what follows), "
                               "normalised over every turn of its group (critic-free turn credit for long games)")
    turn_baseline: Literal["group", "turn_index", "progress", "state"] = Field(
        "group", description="credit: turn — what a turn's return-to-go is measured against: group: the mean of "
                             "every turn of its group (an early turn of a game that scores as it goes gains, the "
                             "last loses); turn_index: the mean of the group's turns at the same turn number (the "
                             "k-th move of every game of the instance); progress: the mean of the group's turns "
                             "made with the same reward collected before them (one score state; with gamma < 1 "
                             "a wasted command loses to one that scores); state: the mean of the group's turns "
                             "taken from the same game state, the same accepted replies of every player before "
                             "them (GiGPO's anchor states; a state only one turn reached: as progress); all "
                             "divided by the group's std over every turn")
    gamma: float = Field(1.0, ge=0.0, le=1.0, description="turn credit and PPO: discount of later rewards")
    ppo: PPOSettings = Field(default_factory=PPOSettings, description="PPO's settings (algorithm: ppo)")
    sequences_per_episode: int = Field(
        4, ge=1, description="training sequences per episode: one per learner call (calls whose prompts extend "
                             "the previous call's share one); an episode with more trains its first N and the "
                             "rest are counted as dropped_calls in the log")
    gradient_checkpointing: bool | None = Field(
        None, description="recompute activations in the backward pass: less memory (SmolLM2-135M with LoRA: 0.26 "
                          "instead of 2.17 MiB a trained position), one more forward of the layers per step. None "
                          "(default): on for TRL's GRPOTrainer, off for sparring's trainer, whose training passes "
                          "then share a batch's prefix (transformers drops the key/value cache under "
                          "checkpointing, so with it on sparring's training passes run every row in full; its "
                          "scoring passes still share) and whose memory `micro_batch_tokens` bounds; true/false: "
                          "as said, for either trainer")
    return_freed_memory: bool = Field(
        False, description="sparring's trainer on a Linux CPU (glibc): have the allocator give freed memory back to "
                           "the system (fixed mmap and trim thresholds, sparring.train.host_memory), so a training "
                           "pass's resident peak is what it needs (a checkpointed pass of 8 TicTacToe-length rows: 1.51 "
                           "instead of 7.70 GiB above its start, benchmarks/bench_pass_memory.py) at the price of page faults (TRL's LoRA "
                           "SFT steps 1.7x as long; the RL passes about the same); for a run that would not fit "
                           "otherwise. The whole process's setting; nothing changes on a GPU or under another C "
                           "library")
    disable_dropout: bool = Field(
        True, description="train with every dropout off (LoRA's included), as TRL's DPO and KTO do by default: the "
                          "training pass then computes the policy the rollout sampled from (on-policy ratio 1, no "
                          "clipping by dropout noise) and skips the dropout masks (~20% of a LoRA training pass "
                          "measured on CPU, benchmarks/bench_step_cost.py); false: the adapter's lora.dropout applies")
    train_rejected: bool = Field(False, description="also train the learner's rejected replies (with the episode's "
                                                    "advantage; with format_penalty this pushes them down)")
    lora: LoraSettings | None = Field(default_factory=LoraSettings)
    output_dir: str | None = None
    seed: int = 0
    logging_steps: int = 1
    vllm: VLLMSettings | None = Field(None, description="learner rollouts on TRL's vLLM (GPU only); none: the "
                                                        "trainer's own model generates")
    keep_rollouts: bool = Field(True, description="sparring's trainer: append every training game to OUT/rollouts, "
                                "a run directory like any other (read, export, replay, view it); a resumed run "
                                "replays its steps after the checkpoint and stores each game once. false: only "
                                "the step log")
    save_steps: int = Field(10, ge=0, description="checkpoint every N steps (0: only when max_minutes stops it); "
                                                  "a rerun resumes from the last one")
    save_total_limit: int = Field(2, ge=1)
    max_minutes: float | None = Field(None, gt=0.0, description="save a checkpoint and stop after this many minutes")

    @model_validator(mode="after")
    def _groups(self) -> OnlineConfig:
        if self.algorithm == "grpo" and self.num_generations < 2 and self.baseline != "rae":
            raise ValueError("GRPO compares the episodes of a group: num_generations must be at least 2 "
                             "(or baseline: rae, a running baseline per role)")
        if self.turn_baseline != "group" and (self.credit != "turn" or self.algorithm != "grpo"):
            raise ValueError(f"turn_baseline: {self.turn_baseline} is GRPO's turn credit: set credit: turn "
                             "(algorithm: grpo) or leave turn_baseline out")
        if self.algorithm == "ppo" and self.trainer == "trl":
            raise ValueError("ppo runs on sparring's trainer (TRL 1.x has no PPO): leave `trainer` out")
        if self.engine == "trl":
            needs = [k for k, bad in (("opponents.mode", self.opponents.mode != "fixed"),
                                      ("baseline", self.baseline != "group"),
                                      ("scale_rewards", self.scale_rewards is not None),
                                      ("return_freed_memory", self.return_freed_memory)) if bad]
            if needs:
                raise ValueError(f"{', '.join(needs)} need sparring's trainer: set trainer: sparring")
        return self

    @property
    def engine(self) -> str:
        """The trainer that runs this config: `trl` or `sparring`."""
        return self.trainer or ("sparring" if self.algorithm == "ppo" else "trl")

    @property
    def reward_scale(self) -> str:
        return self.scale_rewards or ("none" if self.baseline == "rae" else "group")
