"""The games, one folder each: rules, state, instances and sources, prompts, hooks and report
section. Games never call models: they turn actions into state. The contract they implement is
`sparring.gameapi`; nothing outside a game's folder imports it (the registry finds it)."""
