"""The null framework: measures the harness's own overhead."""
