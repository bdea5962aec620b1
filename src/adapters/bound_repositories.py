"""The repositories of one open transaction, as the unit-of-work adapters hand them out."""

from __future__ import annotations

import attrs

from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords


@attrs.frozen
class BoundRepositories:
    """:class:`~authgate.ports.unit_of_work.Transaction`: repositories bound to one transaction."""

    accounts: AccountRepository
    events: SignInEventLog
    sessions: SessionRecords
    seen_events: SeenEvents
    provider_tokens: ProviderTokenStore
    revocations: RevocationOutbox
