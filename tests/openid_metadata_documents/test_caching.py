"""A fetched document is kept as its answer's caching headers say (Cache-Control max-age, else
Expires), never below the floor nor above the ceiling; a refused one a short while; and one
fetch serves every request that asks for the same URL meanwhile."""

from __future__ import annotations

import asyncio
import email.utils

from tests.openid.harness import Op

from .conftest import DocumentSite, MakeOp, document_of, slow
from .test_code_flow import native

PATH = "/clients/tool.json"


async def statuses(op: Op, url: str, times: int = 1) -> list[int]:
    return [(await op.authorize(native(url))).status for _ in range(times)]


async def test_max_age_is_honoured(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op(min_cache_seconds=1)
    url = site.document(PATH, headers={"Cache-Control": "public, max-age=120"})
    assert await statuses(op, url, 3) == [200, 200, 200]
    assert site.hits[PATH] == 1  # within max-age: not fetched again
    op.clock.advance(119)
    assert await statuses(op, url) == [200]
    assert site.hits[PATH] == 1
    op.clock.advance(2)  # past max-age: fetched again
    assert await statuses(op, url, 2) == [200, 200]
    assert site.hits[PATH] == 2


async def test_expires_is_honoured_and_the_ceiling_holds(
    make_op: MakeOp, site: DocumentSite
) -> None:
    op = await make_op(min_cache_seconds=1, max_cache_seconds=600)
    date = op.clock.timestamp()
    expires = site.document(
        PATH,
        headers={
            "Date": email.utils.formatdate(date, usegmt=True),
            "Expires": email.utils.formatdate(date + 300, usegmt=True),
        },
    )
    long = site.document("/clients/long.json", headers={"Cache-Control": "max-age=999999"})
    assert await statuses(op, expires) == [200] and await statuses(op, long) == [200]
    op.clock.advance(290)
    assert await statuses(op, expires) == [200] and site.hits[PATH] == 1
    op.clock.advance(20)
    assert await statuses(op, expires) == [200] and site.hits[PATH] == 2
    op.clock.advance(300)  # 610 s: past the ceiling, whatever max-age said
    assert await statuses(op, long) == [200]
    assert site.hits["/clients/long.json"] == 2


async def test_no_store_is_kept_for_the_floor(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op(min_cache_seconds=30)
    url = site.document(PATH, headers={"Cache-Control": "no-store"})
    assert await statuses(op, url, 2) == [200, 200] and site.hits[PATH] == 1
    op.clock.advance(31)
    assert await statuses(op, url) == [200] and site.hits[PATH] == 2


async def test_a_refused_document_is_kept_a_short_while(
    make_op: MakeOp, site: DocumentSite
) -> None:
    op = await make_op(failure_cache_seconds=20)
    url = site.document(PATH, client_id="https://elsewhere.example/x.json")
    assert await statuses(op, url, 3) == [400, 400, 400]
    assert site.hits[PATH] == 1
    site.document(PATH)  # the site fixes its document
    op.clock.advance(19)
    assert await statuses(op, url) == [400] and site.hits[PATH] == 1
    op.clock.advance(2)
    assert await statuses(op, url) == [200] and site.hits[PATH] == 2


async def test_concurrent_requests_share_one_fetch(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op()
    url = site.serve(PATH, slow(0.3, document_of(site.url(PATH))))
    answers = await asyncio.gather(*(op.authorize(native(url)) for _ in range(8)))
    assert [a.status for a in answers] == [200] * 8
    assert site.hits[PATH] == 1


async def test_no_failure_caching_when_set_to_zero(make_op: MakeOp, site: DocumentSite) -> None:
    """``failure_cache_seconds: 0``: a refused document is fetched again at the next request,
    as the draft asks (the per-host budget still bounds the fetches)."""
    op = await make_op(failure_cache_seconds=0)
    url = site.document(PATH, client_id="https://elsewhere.example/x.json")
    assert await statuses(op, url, 2) == [400, 400]
    assert site.hits[PATH] == 2
