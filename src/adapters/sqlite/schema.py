"""The SQLite schema, applied by the adapter when it opens the file (no separate migrate step).

``PRAGMA user_version`` records how many of :data:`VERSIONS` are applied; each version's
statements run in one ``BEGIN IMMEDIATE`` transaction that re-reads the version first, so two
processes opening a new file at once apply it once. Times: :class:`.db.SqliteDialect`.
"""

from __future__ import annotations

from .db import Database

VERSIONS: list[list[str]] = [
    [
        """
        CREATE TABLE accounts (
            id            TEXT PRIMARY KEY,
            email         TEXT,
            name          TEXT,
            profile       TEXT NOT NULL DEFAULT '{}',
            created_at    TEXT NOT NULL,
            last_login_at TEXT
        )
        """,
        # The unique constraint behind race-safe account creation (spec 2.8's account key).
        """
        CREATE TABLE identities (
            provider   TEXT NOT NULL,
            subject    TEXT NOT NULL,
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            email      TEXT,
            linked_at  TEXT NOT NULL,
            is_primary INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (provider, subject)
        )
        """,
        "CREATE INDEX identities_account_idx ON identities (account_id, linked_at)",
        """
        CREATE TABLE sign_in_events (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,
            at             TEXT NOT NULL,
            provider       TEXT NOT NULL,
            outcome        TEXT NOT NULL,
            client_address TEXT,
            user_agent     TEXT,
            account_id     TEXT,
            detail         TEXT
        )
        """,
        "CREATE INDEX sign_in_events_at_idx ON sign_in_events (at)",
    ],
    # 2: whether the provider said the email address is verified (1 only when it said true).
    # Rows written before this version are 0: nobody recorded that they were verified.
    [
        "ALTER TABLE accounts ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE identities ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0",
    ],
    # 3: pending sign-ins keyed by provider, state and browser (the binding hash), and the state
    # kept only as a hash: a caller-chosen value no longer collides with another browser's.
    # Pending sign-ins live ten minutes; those in flight at the upgrade are dropped (version 1
    # made the table keyed by the state; a new file has none to drop).
    [
        "DROP TABLE IF EXISTS sign_in_states",
        """
        CREATE TABLE sign_in_states (
            lookup        TEXT NOT NULL,
            binding_hash  TEXT NOT NULL,
            provider      TEXT NOT NULL,
            redirect_uri  TEXT NOT NULL,
            intent        TEXT NOT NULL,
            code_verifier TEXT,
            nonce         TEXT,
            created_at    TEXT NOT NULL,
            expires_at    TEXT NOT NULL,
            return_to     TEXT,
            account_id    TEXT,
            PRIMARY KEY (lookup, binding_hash)
        )
        """,
        "CREATE INDEX sign_in_states_expires_idx ON sign_in_states (expires_at)",
    ],
    # 4: the server-side record of every session (never the token), as PostgreSQL's 0004.
    [
        """
        CREATE TABLE sessions (
            id                  TEXT PRIMARY KEY,
            account_id          TEXT NOT NULL,
            provider            TEXT NOT NULL,
            created_at          TEXT NOT NULL,
            expires_at          TEXT NOT NULL,
            absolute_expires_at TEXT NOT NULL,
            auth_time           TEXT NOT NULL,
            client_address      TEXT,
            user_agent          TEXT,
            provider_session    TEXT,
            revoked_at          TEXT
        )
        """,
        "CREATE INDEX sessions_account_idx ON sessions (account_id, created_at)",
        "CREATE INDEX sessions_expires_idx ON sessions (expires_at)",
        "CREATE INDEX sign_in_events_account_idx ON sign_in_events (account_id, at)",
    ],
    # 5: provider events, as PostgreSQL's 0005: the one-time jti store, the identity's
    # provider-reported state, and finding the sessions of a provider's sid.
    [
        """
        CREATE TABLE provider_event_ids (
            issuer     TEXT NOT NULL,
            jti        TEXT NOT NULL,
            seen_at    TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (issuer, jti)
        )
        """,
        "CREATE INDEX provider_event_ids_expires_idx ON provider_event_ids (expires_at)",
        "ALTER TABLE identities ADD COLUMN disabled_reason TEXT",
        "ALTER TABLE identities ADD COLUMN email_disabled INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX sessions_provider_session_idx ON sessions (provider, provider_session) "
        "WHERE provider_session IS NOT NULL",
    ],
    # 6: provider tokens kept sealed for revocation, and the revocation outbox, as
    # PostgreSQL's 0006.
    [
        """
        CREATE TABLE provider_tokens (
            account_id TEXT NOT NULL,
            provider   TEXT NOT NULL,
            subject    TEXT NOT NULL,
            key_id     TEXT NOT NULL,
            ciphertext TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (account_id, provider),
            FOREIGN KEY (provider, subject) REFERENCES identities (provider, subject)
                ON DELETE CASCADE
        )
        """,
        "CREATE INDEX provider_tokens_identity_idx ON provider_tokens (provider, subject)",
        "CREATE INDEX provider_tokens_key_idx ON provider_tokens (key_id)",
        """
        CREATE TABLE provider_token_revocations (
            id              TEXT PRIMARY KEY,
            account_id      TEXT NOT NULL,
            provider        TEXT NOT NULL,
            subject         TEXT NOT NULL,
            key_id          TEXT NOT NULL,
            ciphertext      TEXT NOT NULL,
            created_at      TEXT NOT NULL,
            attempts        INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT NOT NULL,
            leased_until    TEXT,
            last_error      TEXT
        )
        """,
        "CREATE INDEX provider_token_revocations_due_idx "
        "ON provider_token_revocations (next_attempt_at)",
    ],
    # 7: the session that started a pending link or re-authentication, as PostgreSQL's 0007.
    ["ALTER TABLE sign_in_states ADD COLUMN session_id TEXT"],
    # 8: authgate as an OpenID Provider, as PostgreSQL's 0008: authorization codes, token
    # families and their refresh tokens, grants and session clients. Scopes are one text of
    # space-separated scope tokens (a scope token never holds a space).
    [
        """
        CREATE TABLE oauth_codes (
            code_hash      TEXT PRIMARY KEY,
            client_id      TEXT NOT NULL,
            account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            session_id     TEXT NOT NULL,
            redirect_uri   TEXT NOT NULL,
            scopes         TEXT NOT NULL,
            nonce          TEXT,
            code_challenge TEXT NOT NULL,
            auth_time      TEXT NOT NULL,
            created_at     TEXT NOT NULL,
            expires_at     TEXT NOT NULL,
            redeemed_at    TEXT,
            family_id      TEXT
        )
        """,
        "CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at)",
        "CREATE INDEX oauth_codes_account_idx ON oauth_codes (account_id)",
        """
        CREATE TABLE oauth_token_families (
            family_id  TEXT PRIMARY KEY,
            client_id  TEXT NOT NULL,
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            session_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            revoked_at TEXT,
            UNIQUE (family_id, client_id, account_id, session_id)
        )
        """,
        "CREATE INDEX oauth_token_families_account_idx "
        "ON oauth_token_families (account_id, client_id, created_at)",
        "CREATE INDEX oauth_token_families_session_idx ON oauth_token_families (session_id)",
        "CREATE INDEX oauth_token_families_expires_idx ON oauth_token_families (expires_at)",
        """
        CREATE TABLE oauth_refresh_tokens (
            token_hash  TEXT PRIMARY KEY,
            family_id   TEXT NOT NULL,
            client_id   TEXT NOT NULL,
            account_id  TEXT NOT NULL,
            session_id  TEXT NOT NULL,
            scopes      TEXT NOT NULL,
            auth_time   TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            expires_at  TEXT NOT NULL,
            replaced_at TEXT,
            FOREIGN KEY (family_id, client_id, account_id, session_id)
                REFERENCES oauth_token_families (family_id, client_id, account_id, session_id)
                ON DELETE CASCADE
        )
        """,
        "CREATE INDEX oauth_refresh_tokens_family_idx "
        "ON oauth_refresh_tokens (family_id, client_id, account_id, session_id)",
        "CREATE INDEX oauth_refresh_tokens_expires_idx ON oauth_refresh_tokens (expires_at)",
        """
        CREATE TABLE oauth_grants (
            account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            client_id    TEXT NOT NULL,
            scopes       TEXT NOT NULL,
            granted_at   TEXT NOT NULL,
            last_used_at TEXT,
            PRIMARY KEY (account_id, client_id)
        )
        """,
        """
        CREATE TABLE oauth_session_clients (
            session_id TEXT NOT NULL,
            client_id  TEXT NOT NULL,
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            first_at   TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (session_id, client_id)
        )
        """,
        "CREATE INDEX oauth_session_clients_account_idx "
        "ON oauth_session_clients (account_id, first_at)",
        "CREATE INDEX oauth_session_clients_expires_idx ON oauth_session_clients (expires_at)",
    ],
    # 9: the back-channel logouts owed to clients, as PostgreSQL's 0009.
    [
        """
        CREATE TABLE backchannel_logouts (
            id              TEXT PRIMARY KEY,
            client_id       TEXT NOT NULL,
            account_id      TEXT NOT NULL,
            session_id      TEXT NOT NULL,
            created_at      TEXT NOT NULL,
            attempts        INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT NOT NULL,
            leased_until    TEXT,
            last_error      TEXT
        )
        """,
        "CREATE INDEX backchannel_logouts_due_idx ON backchannel_logouts (next_attempt_at)",
    ],
    # 10: passkeys and their ceremonies' challenges, as PostgreSQL's 0010.
    [
        """
        CREATE TABLE passkeys (
            id              TEXT PRIMARY KEY,
            credential_id   BLOB NOT NULL UNIQUE,
            account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            public_key      BLOB NOT NULL,
            sign_count      INTEGER NOT NULL,
            transports      TEXT NOT NULL,
            aaguid          TEXT NOT NULL,
            backup_eligible INTEGER NOT NULL,
            backed_up       INTEGER NOT NULL,
            name            TEXT NOT NULL,
            created_at      TEXT NOT NULL,
            last_used_at    TEXT
        )
        """,
        "CREATE INDEX passkeys_account_idx ON passkeys (account_id, created_at)",
        """
        CREATE TABLE passkey_challenges (
            binding_hash TEXT NOT NULL,
            ceremony     TEXT NOT NULL,
            challenge    BLOB NOT NULL,
            account_id   TEXT,
            session_id   TEXT,
            created_at   TEXT NOT NULL,
            expires_at   TEXT NOT NULL,
            PRIMARY KEY (binding_hash, ceremony)
        )
        """,
        "CREATE INDEX passkey_challenges_expires_idx ON passkey_challenges (expires_at)",
    ],
    # 11: where each passkey came from, and the passkey a session was signed in with, as
    # PostgreSQL's 0011.
    [
        "ALTER TABLE passkeys ADD COLUMN added_by_session TEXT",
        "ALTER TABLE passkeys ADD COLUMN added_from_address TEXT",
        "ALTER TABLE passkeys ADD COLUMN added_from_user_agent TEXT",
        "ALTER TABLE sessions ADD COLUMN passkey_id TEXT",
    ],
    # The device authorizations (RFC 8628), as PostgreSQL's 0014_device_authorizations.
    [
        """
        CREATE TABLE oauth_device_authorizations (
            device_code_hash TEXT PRIMARY KEY,
            user_code_hash   TEXT NOT NULL,
            client_id        TEXT NOT NULL,
            scopes           TEXT NOT NULL,
            status           TEXT NOT NULL,
            created_at       TEXT NOT NULL,
            expires_at       TEXT NOT NULL,
            poll_interval    INTEGER NOT NULL,
            last_polled_at   TEXT,
            account_id       TEXT REFERENCES accounts (id) ON DELETE CASCADE,
            session_id       TEXT,
            auth_time        TEXT
        )
        """,
        "CREATE INDEX oauth_device_authorizations_user_code_idx "
        "ON oauth_device_authorizations (user_code_hash)",
        "CREATE INDEX oauth_device_authorizations_expires_idx "
        "ON oauth_device_authorizations (expires_at)",
        "CREATE INDEX oauth_device_authorizations_account_idx "
        "ON oauth_device_authorizations (account_id)",
    ],
    # 13: stored clients and initial access tokens, as PostgreSQL's 0013 (numbered before
    # 0014, merged after it: PostgreSQL applies each pending file, SQLite each version in turn).
    [
        """
        CREATE TABLE oauth_clients (
            client_id               TEXT PRIMARY KEY,
            origin                  TEXT NOT NULL,
            metadata                TEXT NOT NULL,
            secrets                 TEXT NOT NULL,
            registration_token_hash TEXT,
            created_at              TEXT NOT NULL,
            updated_at              TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE oauth_initial_tokens (
            token_hash TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            spent_at   TEXT
        )
        """,
    ],
    # 14: resource indicators kept with codes and token families, and the revoked access
    # tokens of clients' own (client_credentials), as PostgreSQL's 0012 (numbered before 0013
    # and 0014, merged after them). Resources are one text of space-separated URIs, as scopes
    # (a resource URI never holds a space).
    [
        "ALTER TABLE oauth_codes ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE oauth_token_families ADD COLUMN resources TEXT NOT NULL DEFAULT ''",
        """
        CREATE TABLE oauth_revoked_tokens (
            token_id   TEXT PRIMARY KEY,
            client_id  TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            revoked_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX oauth_revoked_tokens_expires_idx ON oauth_revoked_tokens (expires_at)",
    ],
]


class SchemaTooNew(Exception):
    """The file was written by a newer version of the service."""


async def apply(db: Database) -> list[int]:
    """Bring the schema up to date; returns the versions applied."""
    applied: list[int] = []
    while True:
        async with db.transaction() as held:
            row = await held.fetchrow("PRAGMA user_version")
            current = int(row[0]) if row else 0
            if current > len(VERSIONS):
                raise SchemaTooNew(
                    f"the database file has schema version {current}; this version of "
                    f"authgate knows up to {len(VERSIONS)}"
                )
            if current == len(VERSIONS):
                return applied
            for statement in VERSIONS[current]:
                await db.conn.execute(statement)
            # PRAGMA takes no bound parameter; the value is our own integer.
            await db.conn.execute(f"PRAGMA user_version = {current + 1:d}")
        applied.append(current + 1)
