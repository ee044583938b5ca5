"""The game contract: what every layer knows about games without knowing any one game.

`Game` (the rules interface) and its value types (Instance, Seat, ActionSpec, Action, Feedback,
Event, Outcome, DatasetConfig), the game registry (`GAMES`, `@register_game`), the typed hooks a
game declares for the layers above it (`GameHooks`), and the word-keyed splits. Low in the
stack (above models and prompts only), so records, agents, the engine, analysis, train and web
import it, and the game folders implement it.
"""

from sparring.gameapi.game import (
           GAMES,
           Action,
           ActionSpec,
           Event,
           Feedback,
           Game,
           Outcome,
           Seat,
           register_game,
)
from sparring.gameapi.hooks import (
           GameHooks,
           HumanReplay,
           Metric,
           MoveTool,
           PanelContext,
           PlayPanel,
           ReplayPlan,
           ToolArg,
)

__all__ = ["GAMES", "Action", "ActionSpec", "Event", "Feedback", "Game", "GameHooks", "HumanReplay", "Metric",
           "MoveTool", "Outcome", "PanelContext", "PlayPanel", "ReplayPlan", "Seat", "ToolArg", "register_game"]
