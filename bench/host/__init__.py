"""Facts of the machine a run is on: its devices, environment manifest, what else is running, energy."""
