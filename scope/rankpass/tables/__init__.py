"""The per-rank tables and products, one module each (scope/rankpass/registry.py lists them)."""
