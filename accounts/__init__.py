"""Accounts: logging in (one lockout for every way in), API tokens and their expiry, passwords.

Modules: ``auth`` (the authentication backend, token authentication, password changes), ``api``
(``/api/auth/...``).
"""
