"""A stored client (added by the operator with a back-channel logout URI) is told when a
session it received tokens in ends, as a configured one is: the logout is owed inside the unit
of work that ends the session, which reads the stored client in that same unit (a second
unit opened there would wait for ever in memory and behind SQLite's one writer). On memory,
SQLite and PostgreSQL, over HTTP."""

from __future__ import annotations

import asyncio

from authgate.services.openid.registration import ClientAdministration
from tests.openid_logout.conftest import (  # noqa: F401
    Provider,
    Receiver,
    op,
    receiver,
)
from tests.openid_logout.test_backchannel_logout import settled, told

from .conftest import WEB_REDIRECT


async def test_a_stored_client_is_told_when_the_session_ends(op: Provider) -> None:  # noqa: F811
    administration = ClientAdministration(
        units=op.resources.stores.units, clock=op.resources.shared.clock
    )
    added = await administration.add(
        {
            "client_name": "Stored",
            "redirect_uris": [WEB_REDIRECT],
            "backchannel_logout_uri": op.receiver.uri("stored"),
        },
        client_id="stored",
    )
    assert added.client.client().backchannel_logout_uri == op.receiver.uri("stored")
    session = await op.signed_in()
    await op.served(session, "webapp", "stored")
    family = await op.family(session, "stored")

    answer = await asyncio.wait_for(
        op.client.post("/v1/auth/logout", headers=session.bearer), timeout=20
    )

    assert answer.status == 204
    await told(op, session, "webapp", "stored")
    assert not await op.family_live(family)
    await settled(op)
