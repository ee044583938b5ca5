"""Training on games: exporters (SFT / DPO / KTO rows derived from episode records), TRL trainer
wrappers (LoRA by default), and the iterative loops that play, export, train and evaluate."""
