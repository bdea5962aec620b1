"""The scopes of the service's own session tokens."""

from __future__ import annotations

ACCOUNT_READ = "account:read"
ACCOUNT_MANAGE = "account:manage"
# What a session token carries; reading the account takes either, changing it the second.
SESSION_SCOPES = (ACCOUNT_READ, ACCOUNT_MANAGE)
READ_SCOPES = SESSION_SCOPES
