"""The learning suite's experiments, in the order it runs them. A module of its own, with no
imports, so that `sparring learning --help` names them without importing the suite (the help
stays instant) and the list is written once."""

ORDER = ("textworld-sft", "textworld-sft-data", "textworld-rl", "textworld-easy-rl", "textworld-turn-rl", "textworld-turn-rl-256", "textworld-turn-rl-progress", "textworld-turn-rl-refused", "textworld-turn-rl-state", "textworld-turn-rl-state-64", "textworld-turn-rl-state-128", "textworld-turn-rl-balanced", "textworld-expert-iteration", "textworld-expert-iteration-all", "dond-selfplay", "dond-selfplay-mutual", "dond-rl", "dond-rl-conversation", "dond-rl-conversation-8", "dond-selfplay-rl", "dond-mutual-rl", "trl-dond", "debate-dpo",
         "debate-dpo-evidence", "debate-dpo-contrast", "debate-dpo-contrast-extras", "grpo",
         "textarena-tictactoe", "textarena-tictactoe-rl", "textarena-tictactoe-pool", "textarena-kuhn", "textarena-kuhn-card", "textarena-kuhn-fit", "textarena-kuhn-hand", "transfer")
