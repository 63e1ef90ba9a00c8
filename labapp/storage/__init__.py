"""Storage: locations, slots, check-in, check-out, location moves and their log."""
