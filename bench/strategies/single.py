"""`none`: one process, no workers."""

from .base import SINGLE, Strategy, register

NONE = register(Strategy("none", "one process", "one process", SINGLE))
