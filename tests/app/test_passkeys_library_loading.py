"""fido2's ceremonies load on the first passkey ceremony, not when the service starts: a service
with passkeys on that runs none does not hold ``fido2.server`` and what it brings (its data
classes, its COSE keys: 1.8 MiB of idle memory). Checked in a fresh interpreter, which builds
the whole service and answers a request that is no ceremony, then one that is."""

from __future__ import annotations

from pathlib import Path

from tests.support.fresh_service import probe

PASSKEYS = {
    "passkeys": {"enabled": True, "rp_id": "example.com", "origins": ["https://app.example.com"]}
}

REQUESTS = """
HEAVY = ("fido2.server", "fido2.webauthn", "fido2.cose")

def loaded():
    return ",".join(m for m in HEAVY if m in sys.modules) or "-"

live = await client.get("/health/liveness")
print(live.status, "fido2.utils" in sys.modules, loaded())
options = await client.post("/v1/passkeys/authentication/options")
print(options.status, loaded())
"""


def test_fido2_s_ceremonies_load_on_the_first_ceremony(tmp_path: Path) -> None:
    started, ceremony = probe(tmp_path, PASSKEYS, REQUESTS)
    # Started: the type hints' fast path was checked (fido2.utils), nothing else of fido2.
    assert started == "200 True -"
    assert ceremony == "200 fido2.server,fido2.webauthn,fido2.cose"
