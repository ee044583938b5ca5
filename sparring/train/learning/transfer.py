"""placeholder until wired."""
