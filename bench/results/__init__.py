"""Results on disk: the record, its schema, the store and the sweep manifests."""
