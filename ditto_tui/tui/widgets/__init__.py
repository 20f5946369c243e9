"""Reusable widgets of the ditto-tui application."""
