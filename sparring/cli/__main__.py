"""`python -m sparring.cli`."""

from sparring.cli import main

main()
