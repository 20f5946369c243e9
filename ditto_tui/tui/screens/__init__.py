"""The screens of the ditto-tui application, one per module with a sibling .tcss."""
