"""Recorded clembench games that sparring does not implement (imported by `sparring import
clembench`): transcripts to browse, report and export, not to play; `game` registers "clembench"."""
