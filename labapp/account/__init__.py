"""A user's own account: logging in and out, token refresh, personal access tokens, the
password change and the profile page (the faces over :mod:`labapp.auth`)."""
