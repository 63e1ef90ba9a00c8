"""Search: exact, like, full-text and merged, over everything the caller may see."""
