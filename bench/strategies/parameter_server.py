"""Data parallel through a parameter server: workers push gradients and pull weights, synchronously (`ps_sync`: the
server applies one averaged update a step) or asynchronously (`ps_async`: Downpour SGD, each worker at its own
pace)."""

from .base import PARAMETER_SERVER, Strategy, register

PS_SYNC = register(Strategy("ps_sync", "parameter server, synchronous", "parameter server, synchronous",
                            PARAMETER_SERVER, link_model="ps", synchronous=True, server_update=True, hatch=".."))
PS_ASYNC = register(Strategy("ps_async", "parameter server, asynchronous", "parameter server, asynchronous",
                             PARAMETER_SERVER, link_model="ps", hatch="oo",
                             line="--", global_step="chunk time / steps per worker (asynchronous: steps run on the "
                                                     "workers as scheduled)"))
