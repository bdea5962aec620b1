"""The OpenID Provider's HTTP endpoints, one per module."""
