"""Authentication: passwords, tokens, login sessions, PATs and the request → Actor loader."""
