"""The command-line commands, one module per weight of what they import: `cli.py` parses the arguments and loads
only the module of the command given, so `bench run` (also in a framework's own lean environment) never imports
the report's pandas and matplotlib."""

EXIT_OK, EXIT_RUN_ERROR, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
# What a largest-batch search is over (the batch size is what it searches): its command-line flags.
MAXBATCH_FLAGS = ("framework", "model", "mode", "engine", "device", "precision", "image_size", "threads")
