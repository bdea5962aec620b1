"""Test support shared across suites (fixtures, store factories)."""
