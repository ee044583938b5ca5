"""What the Kuhn Poker experiment reports a policy did with each card: moves read as TextArena reads
them (its action wrapper brackets a reply that has no bracket), so a bare `call` is a call, not an
invalid move, and a reply TextArena would refuse is counted as invalid."""

from __future__ import annotations

from types import SimpleNamespace

from sparring.learning.experiments.textarena_kuhn import moves_by_card


def _call(player: str, card: str, text: str) -> SimpleNamespace:
    message = SimpleNamespace(content=f"[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{card}'")
    return SimpleNamespace(player=player, op="generate", messages=[message],
                           completions=[SimpleNamespace(text=text)])


def test_moves_are_read_per_card_as_textarena_reads_them():
    seats = {"Player 0": SimpleNamespace(agent="policy"), "Player 1": SimpleNamespace(agent="opponent")}
    record = SimpleNamespace(seats=seats, calls=[
        _call("Player 0", "K", "[Bet]"), _call("Player 0", "K", " call "), _call("Player 0", "J", "I fold"),
        _call("Player 0", "Q", "[check] then [bet]"), _call("Player 1", "Q", "[fold]")])
    assert moves_by_card([record]) == {"J": {"invalid": 1}, "K": {"bet": 1, "call": 1}, "Q": {"check": 1}}


def test_information_sets_and_the_scored_strategy():
    import math

    from sparring.learning.experiments.textarena_kuhn import strategy
    from sparring.stats.kuhn import read_infoset as infoset
    from sparring.types import Message

    first = "[GAME] ### Starting round 1 out of 1 rounds. Your card is: 'J'\n[GAME] Your available actions are: '[check]', '[bet]'"
    after = ("[GAME] ### Starting round 1 out of 1 rounds. Your card is: 'Q'\n[Player 1] [bet]\n"
             "[GAME] Player 1, submitted move: '[bet]'.\n[GAME] Your available actions are: '[fold]', '[call]'")
    assert infoset(first) == ("J, first to act", ["check", "bet"])
    assert infoset(after) == ("Q, after bet", ["fold", "call"])
    assert infoset("[GAME] Player 1 won the hand.") is None

    class Scorer:  # log-probabilities of the options; the strategy normalises over the legal moves
        def __init__(self):
            self.requests = []

        def score(self, requests):
            self.requests += requests
            return [[math.log(0.3), math.log(0.1)] if "'J'" in r.messages[-1].content else [math.log(0.2)] * 2
                    for r in requests]

    def call(player, text):
        return SimpleNamespace(player=player, op="generate", messages=[Message(role="user", content=text)],
                               completions=[SimpleNamespace(text="[bet]")])

    seats = {"Player 0": SimpleNamespace(agent="policy"), "Player 1": SimpleNamespace(agent="opponent")}
    records = [SimpleNamespace(seats=seats, calls=[call("Player 0", first), call("Player 1", after)]),
               SimpleNamespace(seats=seats, calls=[call("Player 0", first), call("Player 0", after)])]
    scorer = Scorer()
    out = strategy(scorer, records)
    assert out == {"J, first to act": {"check": 0.75, "bet": 0.25}, "Q, after bet": {"fold": 0.5, "call": 0.5}}
    assert sorted(o for r in scorer.requests for o in r.options) == ["[bet]", "[call]", "[check]", "[fold]"]  # once each


def test_the_card_experiment_scores_the_whole_strategy_and_its_exploitability(monkeypatch):
    """textarena-kuhn-card: a policy's strategy at all 12 information sets gives its exploitability;
    a set of decisions that misses some (the quick size's few hands) says which, with no number."""
    from sparring.learning.experiments import textarena_kuhn_card as card
    from sparring.stats import kuhn

    demos = SimpleNamespace(records=[])
    monkeypatch.setattr(card, "scored_strategy", lambda ctx, alias, records, agent: kuhn.equilibrium(1 / 6))
    out = card.full_strategy(None, "policy", demos)
    assert out["exploitability"] == 0.0 and out["best_response"] == {"vs_first": 0.0556, "vs_second": -0.0556}
    # the equilibrium neither wins nor loses against the held-out rule; greedy (its ties at 0.5 broken
    # to the first move) it wins 1/12 a hand
    assert out["payoff_vs_rule"] == {"scored": 0.0, "greedy": 0.0833}
    always = {k: {"bet": 1.0, "call": 1.0} for k in kuhn.INFOSETS}
    monkeypatch.setattr(card, "scored_strategy", lambda ctx, alias, records, agent: always)
    assert card.full_strategy(None, "policy", demos)["exploitability"] == 0.3333
    partial = {k: v for k, v in always.items() if not k.startswith("J")}
    monkeypatch.setattr(card, "scored_strategy", lambda ctx, alias, records, agent: partial)
    out = card.full_strategy(None, "policy", demos)
    assert out["exploitability"] is None and out["missing_infosets"] == [k for k in kuhn.INFOSETS if k.startswith("J")]


def test_a_conversation_view_decision_reads_as_the_rendered_one():
    """In the conversation view a decision's observation is spread over the prompt's user turns;
    joined they give the same information set and card as the rendered view's one observation."""
    import pytest

    pytest.importorskip("textarena")
    from sparring.engine.play import Arena
    from sparring.learning.experiments.textarena_kuhn import GAME, moves_by_card, observation
    from sparring.stats.kuhn import read_infoset

    def play(view: str) -> list:
        cfg = {"name": f"kuhn-{view}", "game": "textarena", "view": view, "game_args": GAME,
               "dataset": {"name": "seeds", "split": "test", "args": {"n": 6}},
               "agents": {"policy": {"role": "player", "model": "textarena-random"},
                          "opponent": {"role": "player", "model": "textarena-kuhn-rule"}},
               "tournament": {"type": "custom", "matchups": [["policy", "opponent"]], "flip": True},
               "run": {"seed": 0}}
        with Arena.from_config(cfg) as arena:
            return arena.play(arena.jobs())

    def decisions(records: list) -> list:
        return [read_infoset(observation(c.messages)) for r in records for c in r.calls if c.op == "generate"]

    grown, rendered = play("conversation"), play("rendered")
    assert any(len(c.messages) > 2 for r in grown for c in r.calls)  # some hands took a second decision
    assert decisions(grown) == decisions(rendered) and None not in decisions(grown)
    assert moves_by_card(grown) == moves_by_card(rendered) and "?" not in moves_by_card(grown)


def test_the_fit_experiment_reads_the_demonstrations_own_frequencies_and_trains_against_a_pool(tmp_path):
    """textarena-kuhn-fit: what SFT can learn is counted from the demonstrations (each move's share
    per information set; a reply that is not a legal move there is not counted), and its fixed arm
    meets one of two opponents per group."""
    from sparring.learning.context import Context
    from sparring.learning.experiments import textarena_kuhn_fit as fit
    from sparring.types import Message

    first = "[GAME] ### Starting round 1 out of 1 rounds. Your card is: '{}'\n[GAME] Your available actions are: '[check]', '[bet]'"

    def call(card: str, move: str) -> SimpleNamespace:
        return SimpleNamespace(op="generate", messages=[Message(role="user", content=first.format(card))],
                               completions=[SimpleNamespace(text=move)])

    records = [SimpleNamespace(calls=[call("Q", "[check]"), call("Q", "[check]"), call("K", "[bet]"),
                                      call("K", "[check]"), call("K", "[call]")])]
    assert fit.demonstrated(records) == {"K, first to act": {"check": 0.5, "bet": 0.5},
                                         "Q, first to act": {"check": 1.0, "bet": 0.0}}
    ctx = Context(out=tmp_path, size="quick", model="tiny", label="tiny")
    cfg = fit.pool_config(ctx, fit.SIZES["quick"], str(tmp_path / "start"))
    assert cfg["opponents"] == {"mode": "pool"} and cfg["baseline"] == "group"
    agents = cfg["experiment"]["agents"]
    assert {agents["opponent"]["model"], agents["random"]["model"]} == set(fit.POOL)
    assert cfg["experiment"]["tournament"]["matchups"] == [["learner", "opponent"], ["learner", "random"]]


def test_the_fit_experiment_trains_no_arm_from_a_start_that_does_not_read_its_card(monkeypatch, tmp_path):
    """Below the gate the experiment reports the start and stops; at or above it the arms run."""
    import pytest

    pytest.importorskip("textarena")
    from sparring.learning.arms import Measured
    from sparring.learning.context import Context
    from sparring.learning.experiments import textarena_kuhn_fit as fit

    demos = SimpleNamespace(records=[])
    monkeypatch.setattr(fit, "warm_start", lambda ctx, size, **kw: (
        str(tmp_path / "start"), {"rows": 192, "steps": 48, "games": 96}, demos))
    from sparring.learning.experiments import textarena_kuhn_card as card

    arms: list[str] = []
    monkeypatch.setattr(card, "run_arm", lambda ctx, exp, name, *a, **kw: arms.append(name) or SimpleNamespace(
        curves=lambda: {}))
    monkeypatch.setattr(card, "plot_training", lambda *a, **kw: None)
    ctx = Context(out=tmp_path, size="full", model=str(tmp_path), label="tiny")  # a directory: nothing loads
    for reads, expected in ((0.05, []), (0.5, ["kuhn-fit-pool", "kuhn-fit-selfplay-rae"])):
        info = {"card_dependence": reads, "exploitability": 0.7}
        monkeypatch.setattr(fit, "measure", lambda *a, info=info, **kw: Measured({}, {}, {}, ["h"], dict(info)))
        arms.clear()
        exp = fit.run(ctx)
        assert arms == expected
        assert exp.stages[0].info["card_dependence"] == reads
        assert any("arms not run" in n for n in exp.notes) == (reads < fit.GATE)


def test_the_hand_experiment_plays_every_game_on_the_hands_lines(tmp_path):
    """textarena-kuhn-hand: the demonstrations', the arms' and the held-out games all cut each
    observation to the hand; the rest is textarena-kuhn-fit's."""
    from sparring.learning.context import Context
    from sparring.learning.experiments import textarena_kuhn as kuhn
    from sparring.learning.experiments import textarena_kuhn_fit as fit
    from sparring.learning.experiments import textarena_kuhn_hand as hand

    ctx = Context(out=tmp_path, size="full", model="tiny", label="tiny")
    size = hand.SIZES["full"]
    cut = {**kuhn.GAME, "observation_from": "### Starting round"}
    assert kuhn.game(size) == cut and kuhn.game(kuhn.SIZES["full"]) == kuhn.GAME
    assert kuhn._heldout("policy", size)["game_args"] == cut
    assert fit.pool_config(ctx, size, "start")["experiment"]["game_args"] == cut
    assert kuhn.arm_config(ctx, size, "start", "selfplay-rae", arms=fit.ARMS)["experiment"]["game_args"] == cut
    assert {k: v for k, v in size.items() if k != "game_args"} == kuhn.SIZES["full"]
    assert hand.FIT["full"]["epochs"] > fit.FIT["full"]["epochs"]
