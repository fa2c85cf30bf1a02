"""A per-rank table and an analyzer that reads it, written as a newcomer would add them: one module each, and
one registry line each (tests/test_rank_table_registry.py holds the two lines)."""
