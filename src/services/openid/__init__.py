"""authgate as the OpenID Provider of applications: its use cases, one per module."""
