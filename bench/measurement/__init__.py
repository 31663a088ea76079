"""What every run measures and checks: the timing loop, device peak, FLOPs, sanity flags, fairness certificate."""
