"""TextWorld cooking: one player cooks a meal in a TextWorldExpress CookingWorld game."""
