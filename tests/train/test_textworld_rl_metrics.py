"""The textworld-rl experiment's failure analysis: which lost games cooked an ingredient with an
appliance the recipe does not ask for. Commands and recipes as TextWorldExpress's CookingWorld writes
them (its gold agent cooks with `cook X in stove|oven|barbeque|toaster`)."""

from __future__ import annotations

from types import SimpleNamespace

from sparring.learning.experiments.textworld_rl import appliance_errors

RECIPE = ("Gather all following ingredients and follow the directions to prepare this tasty meal.\n\n"
          "Ingredients:\n  chicken wing\n  red apple\n\nDirections:\n  grill the chicken wing\n"
          "  slice the red apple\n  roast the red apple\n  prepare meal\n")


def _game(commands: list[str], success: bool = False) -> SimpleNamespace:
    events = [SimpleNamespace(tag="observation", content="You are in the kitchen."),
              SimpleNamespace(tag="command", content="read cookbook"),
              SimpleNamespace(tag="observation", content=RECIPE)]
    events += [SimpleNamespace(tag="command", content=c) for c in commands]
    return SimpleNamespace(events=events, outcome=SimpleNamespace(metrics={"success": success}))


def test_a_lost_game_that_cooked_with_the_wrong_appliance_is_flagged():
    games = [
        _game(["cook red apple in stove"]),                     # roast wants the oven
        _game(["cook chicken wing in oven"]),                   # grill wants the barbeque / toaster
        _game(["cook chicken wing in barbeque", "cook red apple in oven"]),   # right, and lost anyway
        _game(["cook chicken wing in toaster"]),                # a small world's grill
        _game(["cook red apple in stove"], success=True),       # a won game is never a failure of this kind
        _game(["cook banana in stove"]),                        # not in the recipe: not this failure
        _game(["look around"]),
    ]
    assert appliance_errors(games) == [True, True, False, False, False, False, False]
