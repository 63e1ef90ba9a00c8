"""Users: the directory of people, their profiles and settings."""
