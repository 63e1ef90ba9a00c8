"""Files: content stored once per SHA-256 in the instance folder, metadata as File entities."""
