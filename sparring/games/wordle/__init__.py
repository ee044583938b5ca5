"""Wordle (clembench): guess a five-letter word in six tries from letter feedback; `wordle` has one
player, `wordle_withcritic` adds a critic who sees each proposed guess and says keep or change."""
