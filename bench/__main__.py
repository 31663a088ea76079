"""`python -m bench`: the command-line entry point."""

from .cli import console

console()
