"""The repositories of one open transaction, as the unit-of-work adapters hand them out."""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity
from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords
from authgate.ports.unit_of_work import HolderWrites


@attrs.frozen
class BoundRepositories:
    """:class:`~authgate.ports.unit_of_work.Transaction`: repositories bound to one transaction."""

    accounts: AccountRepository
    events: SignInEventLog
    sessions: SessionRecords
    seen_events: SeenEvents
    provider_tokens: ProviderTokenStore
    revocations: RevocationOutbox

    async def sign_in_to_holder(
        self, identity: ProviderIdentity, now: dt.datetime, writes: HolderWrites
    ) -> tuple[LinkedIdentity, Account] | None:
        """:meth:`~authgate.ports.unit_of_work.Transaction.sign_in_to_holder` through the
        repositories: the look-up, then the writes a sign-in makes, in its order."""
        found = await self.accounts.find_with_identity(identity)
        if found is None or found[0].disabled_reason is not None:
            return found
        account_id = found[1].id
        await self.accounts.record_login(account_id, now)
        await self.sessions.add(attrs.evolve(writes.session, account_id=account_id))
        if writes.token is not None:
            await self.provider_tokens.put(attrs.evolve(writes.token, account_id=account_id))
        await self.events.record(attrs.evolve(writes.event, account_id=account_id))
        return found
