"""Who is calling and what they may see and do."""
