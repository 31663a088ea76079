"""What every distributed rank uses, whatever its framework: spec and result files, phase timelines, data."""
