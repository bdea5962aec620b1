"""Revocation channels: in-process (one instance), Redis pub/sub, PostgreSQL LISTEN/NOTIFY."""

from .local import LocalRevocations
from .postgres import PostgresRevocations
from .redis import RedisRevocations

__all__ = ["LocalRevocations", "PostgresRevocations", "RedisRevocations"]
