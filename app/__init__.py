"""The Dash dashboard: pages, thin callbacks, pure figure builders."""
