"""Authentication core: passwords, tokens, login sessions, PATs and login throttling."""
