"""PyTorch: the adapter, its model definitions and its distributed rank."""
