"""A plug-in game in its own installed package: sparring finds it through the `sparring.games`
entry point; nothing in sparring names it (tests/engine/test_plugin_game.py)."""
