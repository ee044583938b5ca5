"""The learning suite's GRPO game is one decision: the scripted partner opens, the learner answers
with one prefilled proposal, and the partner's rule decides the deal; nothing else is played."""

from __future__ import annotations

from importlib import resources

import yaml

from sparring.games.negotiation.protocol import format_proposal
from sparring.types import GenerateRequest


def _counts(request: GenerateRequest) -> str:
    """Completes the prefilled `[propose] (` with a seeded share of the pool."""
    assert request.assistant_prefix == "[propose] ("
    pool, seed = request.context["dond_pool"], request.sampling.seed or 0
    return format_proposal(tuple((seed >> (4 * i)) % (c + 1) for i, c in enumerate(pool)))[1:]


def test_every_game_is_the_partners_message_then_one_learner_proposal_then_its_answer():
    from sparring.engine.play import Arena
    from sparring.learning.experiments import grpo
    from sparring.models.scripted import ScriptedModel

    shipped = resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"
    entry = yaml.safe_load(shipped.read_text(encoding="utf-8"))["models"]["fair-negotiator"]
    config = grpo.game_config({**grpo.SIZES["quick"], "heldout": 24}, "test", 24, "learner")
    models = {"learner": ScriptedModel("learner", mode="callable", function=_counts),
              "fair-negotiator": ScriptedModel("fair-negotiator", **entry["args"])}
    with Arena.from_config(config, models=models) as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 24
    ends = set()
    for r in records:
        learner = next(p for p, s in r.seats.items() if s.agent == "learner")
        partner = next(p for p in r.seats if p != learner)
        m = r.outcome.metrics
        assert m["first_mover"] == partner and r.seats[partner].agent == "partner"
        assert [c.player for c in r.calls] == [partner, learner, partner]  # one decision each
        assert m["turns"] == 3 and m["end"] in ("deal", "mismatch") and m["n_invalid_total"] == 0
        ends.add(m["end"])
    assert ends == {"deal", "mismatch"}  # the learner's proposal decides
