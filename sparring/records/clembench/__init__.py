"""clembench's episode layout, both ways: its recorded games read in (`reader.py`), sparring's
runs written out (`export.py`), an episode sparring played logged as clembench's game master would
(`played.py`) and scored as clembench's scorers would (`scores.py`)."""
