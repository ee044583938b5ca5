"""TextArena's competitive text games (TicTacToe, Kuhn Poker, negotiation, ...) on sparring's engine:
any installed TextArena environment id as a sparring game (`pip install 'sparring[textarena]'`);
`game` registers it as "textarena"."""
