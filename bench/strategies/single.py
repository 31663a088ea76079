"""`none`: one process, no workers."""

from .base import ONE_PROCESS, SINGLE, Strategy, register

NONE = register(Strategy(ONE_PROCESS, "one process", "one process", SINGLE))
