"""Folder put on PYTHONPATH by `scope run`; only its sitecustomize.py matters (this file makes
setuptools ship it with the package)."""
