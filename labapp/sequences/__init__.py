"""Id sequences: prefix + zero-padded number, handed out atomically."""
