"""scope: cluster performance profiler and failure diagnoser for distributed PyTorch training.

The core package: run-directory model, store, ingest, the Finding model and the CLI.
It never imports `app`, and only the CLI imports `collectors` or `analyzers`.
"""

__version__ = "0.1.0"
