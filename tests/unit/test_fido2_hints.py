"""The fast path beside fido2 (authgate.adapters.webauthn.fido2_hints): fido2's data classes
parse the same with their type hints kept per class as on the library's own path, and the fast
path stays off when fido2 no longer reads its hints the way it was checked against."""

from __future__ import annotations

import typing

import fido2.utils
import pytest
from fido2.webauthn import AuthenticationResponse, RegistrationResponse

from authgate.adapters.webauthn import fido2_hints
from tests.support.webauthn import SoftAuthenticator

OPTIONS = {"rp": {"id": "example.com"}, "user": {"id": "YWNjb3VudA"}, "challenge": "Y2hhbGxlbmdl"}
ORIGIN = "https://app.example.com"


def parsed_both_ways() -> list[tuple[object, object]]:
    authenticator = SoftAuthenticator()
    created = authenticator.create(OPTIONS, ORIGIN)
    asserted = authenticator.get({"challenge": "Y2hhbGxlbmdl"}, ORIGIN)
    pairs = []
    for kind, data in ((RegistrationResponse, created), (AuthenticationResponse, asserted)):
        with fido2_hints.library_path():
            assert fido2.utils.get_type_hints is typing.get_type_hints
            slow = kind.from_dict(data)
        assert fido2_hints.memoize_type_hints()
        assert fido2.utils.get_type_hints is not typing.get_type_hints
        fast = kind.from_dict(data)
        pairs.append((dict(slow), dict(fast)))
    return pairs


def test_both_paths_parse_the_same() -> None:
    for slow, fast in parsed_both_ways():
        assert slow == fast


def test_the_memo_is_for_fido2_classes_only_and_hands_out_copies() -> None:
    assert fido2_hints.memoize_type_hints()
    hints = fido2.utils.get_type_hints(AuthenticationResponse)
    hints["raw_id"] = int
    assert fido2.utils.get_type_hints(AuthenticationResponse)["raw_id"] is bytes

    class Mine:
        x: int

    assert fido2.utils.get_type_hints(Mine) == {"x": int}
    assert Mine not in fido2_hints._HINTS


def test_another_fido2_keeps_the_library_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def something_else(obj: object) -> dict[str, object]:
        return typing.get_type_hints(obj)

    monkeypatch.setattr(fido2.utils, "get_type_hints", something_else)
    assert fido2_hints.memoize_type_hints() is False
    assert fido2.utils.get_type_hints is something_else
    assert "library's own (slower) path" in caplog.text
