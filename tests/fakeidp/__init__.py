"""A fake identity provider of our own, served on loopback for the tests (see server.py)."""

from tests.fakeidp.clock import SettableClock
from tests.fakeidp.model import (
    AuthorizeRefused,
    Callback,
    FakeUser,
    ReceivedRevocation,
    RecordedRequest,
    RevocationStyle,
    Shape,
    Tamper,
    TokenMode,
)
from tests.fakeidp.provider import FakeProvider, appsecret_proof, s256
from tests.fakeidp.server import FakeIdP

__all__ = [
    "AuthorizeRefused",
    "Callback",
    "FakeIdP",
    "FakeProvider",
    "FakeUser",
    "ReceivedRevocation",
    "RecordedRequest",
    "RevocationStyle",
    "SettableClock",
    "Shape",
    "Tamper",
    "TokenMode",
    "appsecret_proof",
    "s256",
]
