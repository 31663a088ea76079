"""Sweeps: profiles, the interleaved plan, running each config as a papermill notebook in its Jupyter kernel."""
