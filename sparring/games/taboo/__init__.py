"""Taboo (clembench): a describer makes a guesser find a target word without saying the target or
any of its taboo words; `game` registers it as "taboo"."""
