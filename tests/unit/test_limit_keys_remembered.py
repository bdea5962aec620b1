"""ClientAddress.limit_key remembers its answers without changing them."""

from __future__ import annotations

import ipaddress

from authgate.entrypoints.http.common import caller
from authgate.entrypoints.http.common.caller import ClientAddress


def test_keys_are_the_same_the_second_time() -> None:
    addresses = ClientAddress([], ipv6_prefix=64)
    expected = {
        "192.0.2.7": "192.0.2.7",
        "::ffff:192.0.2.7": "192.0.2.7",
        "2001:db8:1:2::5": "2001:db8:1:2::/64",
        "2001:db8:1:2:ffff::9": "2001:db8:1:2::/64",
        "fe80::1%eth0": "fe80::/64",
        "unix-socket-peer": "unix-socket-peer",
    }
    for _ in range(2):
        assert {a: addresses.limit_key(a) for a in expected} == expected


def test_the_remembered_keys_stay_bounded() -> None:
    addresses = ClientAddress([], ipv6_prefix=48)
    for i in range(caller._KEYS_KEPT * 2 + 10):
        host = f"2001:db8:{i:x}::1"
        assert addresses.limit_key(host) == str(ipaddress.ip_network(f"{host}/48", strict=False))
    assert len(addresses._keys) <= caller._KEYS_KEPT
