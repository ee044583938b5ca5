"""The scripted `fair-negotiator` (the GRPO experiment's partner): its rule, the game's private
labels it reads, and whole games through the engine in which the learner's proposal decides the
deal and the points."""

from __future__ import annotations

import pytest
import yaml

from sparring.errors import BackendError
from sparring.games.negotiation.partner import fair_partner, reply
from sparring.games.negotiation.protocol import format_proposal
from sparring.types import GenerateRequest, Message

from .dond_helpers import SCENARIO, new_game, play

# SCENARIO: pool (1 book, 1 hat, 3 balls); Player_2 (the partner below) values (0, 4, 2): total 10.
P2 = (0, 4, 2)


def test_it_names_its_most_valued_item_before_any_proposal():
    assert reply(P2, SCENARIO.counts, None) == "[message] I care most about the hat; you can have the rest."
    assert reply((1, 0, 3), (2, 2, 2), None) == "[message] I care most about the balls; you can have the rest."


def test_it_accepts_a_complement_worth_half_its_total_and_otherwise_claims_what_it_values():
    # the learner takes the book and the hat: the partner keeps 3 balls = 6 of 10 -> accepts
    assert reply(P2, SCENARIO.counts, (1, 1, 0)) == "[propose] (0 books, 0 hats, 3 balls)"
    # the learner takes the book and 1 ball: the partner keeps the hat + 2 balls = 8 -> accepts
    assert reply(P2, SCENARIO.counts, (1, 0, 1)) == "[propose] (0 books, 1 hats, 2 balls)"
    # the learner takes the hat and 2 balls: the partner would keep 1 ball = 2 < 5 -> no deal
    assert reply(P2, SCENARIO.counts, (0, 1, 2)) == "[propose] (0 books, 1 hats, 3 balls)"
    # the partner would keep the hat alone = 4 < 5 -> no deal; the hat and a ball = 6 -> accepts
    assert reply(P2, SCENARIO.counts, (1, 0, 3)) == "[propose] (0 books, 1 hats, 3 balls)"
    assert reply(P2, SCENARIO.counts, (1, 0, 2)) == "[propose] (0 books, 1 hats, 1 balls)"
    assert reply((5, 0, 0), (2, 1, 1), (1, 1, 1)) == "[propose] (1 books, 0 hats, 0 balls)"  # exactly half: 5 of 10


def test_the_game_labels_each_player_with_its_own_values_and_the_others_proposal():
    game, state = new_game(max_turns=6)
    first = game.to_act(state)[0]
    other = state.other(first)
    assert game.request_labels(state, first) == {"dond_values": list(state.values[first]),
                                                 "dond_pool": [1, 1, 3]}
    play(game, state, ["[message] hello", "[message] hi"])
    play(game, state, ["[propose] (1 books, 1 hats, 0 balls)"])
    assert game.request_labels(state, other)["dond_offer"] == [1, 1, 0]
    assert "dond_offer" not in game.request_labels(state, first)


def test_without_labels_it_refuses_clearly():
    with pytest.raises(BackendError, match="only plays Deal or No Deal"):
        fair_partner(GenerateRequest(messages=[Message(role="user", content="hi")]))


def _learner(request: GenerateRequest) -> str:
    """Says hello, then claims a seeded share of the pool (its own labels give the pool)."""
    if not any(m.role == "assistant" for m in request.messages):
        return "[message] hello"
    pool, seed = request.context["dond_pool"], request.sampling.seed or 0
    return "[propose] " + format_proposal(tuple((seed >> (4 * i)) % (c + 1) for i, c in enumerate(pool)))


def test_whole_games_the_learners_proposal_decides_the_deal_by_the_rule():
    from importlib import resources

    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    shipped = resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml"
    entry = yaml.safe_load(shipped.read_text(encoding="utf-8"))["models"]["fair-negotiator"]
    partner = ScriptedModel("partner", **entry["args"])
    config = {"game": "dond", "game_args": {"max_turns": 6},
              "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 40, "seed": 3}, "limit": 24},
              "agents": {"learner": {"role": "negotiator", "model": "learner"},
                         "partner": {"role": "negotiator", "model": "partner"}},
              "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}}
    learner = ScriptedModel("learner", mode="callable", function=_learner)
    with Arena.from_config(config, models={"learner": learner, "partner": partner}) as arena:
        records = arena.play(arena.jobs())
    assert len(records) == 24
    deals = 0
    for r in records:
        m = r.outcome.metrics
        me = next(p for p, s in r.seats.items() if s.agent == "learner")
        other = next(p for p in r.seats if p != me)
        claim = m["proposals"][me]
        rest = [c - x for c, x in zip(m["counts"], claim, strict=True)]
        fair = sum(x * v for x, v in zip(rest, m["values"][other], strict=True)) * 2 >= \
            sum(c * v for c, v in zip(m["counts"], m["values"][other], strict=True))
        assert m["deal"] is fair and m["n_invalid_total"] == 0
        assert r.outcome.rewards[me] == (sum(x * v for x, v in zip(claim, m["values"][me], strict=True)) if fair else 0)
        deals += fair
        said = [e.content for e in r.events if e.player == other and e.tag == "turn"]
        assert said[0].startswith("[message] I care most about the ")
        assert "dond_values" not in r.model_dump_json() and "dond_offer" not in r.model_dump_json()
    assert 0 < deals < 24  # both outcomes occur: the proposal decides
