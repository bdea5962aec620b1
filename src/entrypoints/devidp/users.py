"""The test users of the development identity provider: pick one to sign in as, no password."""

from __future__ import annotations

import hashlib

import attrs

from authgate.entrypoints.devidp.clients import DevClient


@attrs.frozen
class TestUser:
    """A person the development provider vouches for."""

    key: str
    given_name: str
    family_name: str
    email: str
    email_verified: bool = True
    note: str | None = None

    @property
    def name(self) -> str:
        return f"{self.given_name} {self.family_name}"


USERS: tuple[TestUser, ...] = (
    TestUser("ada", "Ada", "Lovelace", "ada@example.test"),
    TestUser("grace", "Grace", "Hopper", "grace@example.test"),
    TestUser("alan", "Alan", "Turing", "alan@example.test"),
    TestUser(
        "mallory",
        "Mallory",
        "Unverified",
        "mallory@example.test",
        email_verified=False,
        note="the provider says this email address is not verified",
    ),
)


USERS_BY_KEY = {user.key: user for user in USERS}


def subject_for(client: DevClient, user: TestUser) -> str:
    """The user's stable identifier at a client, in the style of the provider it imitates.

    Deterministic, so that accounts kept in a database across restarts still match; different
    per client, as with real providers (one person, one identifier per provider).
    """
    digest = hashlib.sha256(f"{client.client_id}\0{user.key}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    if client.shape == "apple":  # Apple: "000123.<32 hex>.0456"
        return f"{number % 1_000_000:06d}.{digest[8:24].hex()}.{number % 10_000:04d}"
    if client.shape == "profile":  # Graph API: an app-scoped numeric id
        return str(10**15 + number % 9 * 10**14 + number % 10**14)
    return str(10**20 + number % 10**20)  # Google: a 21-digit number
