"""The fast signature check of ID and event tokens decides exactly as joserfc does.

Every token here, well formed, malformed or forged, goes through the check the adapter uses
(``_verify_signature``: the fast path, which leaves what it does not cover to joserfc) and
through joserfc alone (``_joserfc_payload``, the check as it was); both must return the same
payload or refuse with the same text. The common tokens must be decided by the fast path itself
(else the comparison would prove nothing).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc import jws
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey
from joserfc.registry import JWS_HEADER_REGISTRY, is_str

from authgate.adapters.identity import id_token
from authgate.ports.identity import VerificationFailed

RSA_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGS = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "256": hashes.SHA256,
    "384": hashes.SHA384,
    "512": hashes.SHA512,
}
PAYLOAD = {"iss": "https://idp.example", "sub": "10001", "aud": "client", "nonce": "n"}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(value: Any) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode())


class Keys:
    """One RSA key (every RS*/PS*) and one EC key per curve, private, with their public JWKs."""

    def __init__(self) -> None:
        self.rsa_private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec_private = {
            "ES256": ec.generate_private_key(ec.SECP256R1()),
            "ES384": ec.generate_private_key(ec.SECP384R1()),
            "ES512": ec.generate_private_key(ec.SECP521R1()),
        }

    def public(self, algorithm: str, /, **parameters: Any) -> Key:
        if algorithm.startswith(("RS", "PS")):
            return RSAKey.import_key(self.rsa_private.public_key(), parameters or None)
        return ECKey.import_key(self.ec_private[algorithm].public_key(), parameters or None)

    def sign(self, alg: str, signing_input: bytes) -> bytes:
        """A signature over ``signing_input`` computed here with cryptography (not joserfc)."""
        digest = HASHES[alg[2:]]
        if alg.startswith("RS"):
            return self.rsa_private.sign(signing_input, padding.PKCS1v15(), digest())
        if alg.startswith("PS"):
            pss = padding.PSS(mgf=padding.MGF1(digest()), salt_length=digest().digest_size)
            return self.rsa_private.sign(signing_input, pss, digest())
        private = self.ec_private[alg]
        r, s = decode_dss_signature(private.sign(signing_input, ec.ECDSA(digest())))
        size = (private.curve.key_size + 7) // 8
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")

    def token(
        self,
        alg: str,
        header: dict[str, Any] | None = None,
        payload: Any = PAYLOAD,
        *,
        head: str | None = None,
        body: str | None = None,
    ) -> str:
        head = head if head is not None else b64json(header or {"alg": alg, "kid": "k1"})
        body = body if body is not None else b64json(payload)
        signing_input = f"{head}.{body}".encode()
        return f"{head}.{body}.{b64(self.sign(alg, signing_input))}"


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


def outcome(check: Callable[[str, Key, str], bytes], token: str, key: Key, alg: str) -> Any:
    try:
        return ("payload", check(token, key, alg))
    except VerificationFailed as e:
        return ("refused", str(e))
    except Exception as e:  # whatever joserfc lets through must stay the same too
        return ("raised", type(e).__name__)


def assert_same(token: str, key: Key, alg: str) -> Any:
    got = outcome(id_token._verify_signature, token, key, alg)
    reference = outcome(id_token._joserfc_payload, token, key, alg)
    assert got == reference, (token, alg)
    return got


def decided_fast(token: str, key: Key, alg: str) -> bool:
    try:
        return id_token._fast_payload(token, key, alg, "ID token") is not None
    except VerificationFailed:
        return True


# -- the common case: decided by the fast path, as joserfc decides it ---------------------------


@pytest.mark.parametrize("alg", [*RSA_ALGS, *EC_ALGS])
def test_a_good_token_verifies_on_the_fast_path(keys: Keys, alg: str) -> None:
    key = keys.public(alg, kid="k1", use="sig", alg=alg)
    token = keys.token(alg, {"alg": alg, "kid": "k1", "typ": "JWT"})
    signed = json.dumps(PAYLOAD, separators=(",", ":")).encode()
    assert assert_same(token, key, alg) == ("payload", signed)
    assert decided_fast(token, key, alg)


@pytest.mark.parametrize("alg", [*RSA_ALGS, *EC_ALGS])
def test_a_token_signed_by_joserfc_verifies_on_the_fast_path(keys: Keys, alg: str) -> None:
    if alg.startswith(("RS", "PS")):
        private: Key = RSAKey.import_key(keys.rsa_private)
    else:
        private = ECKey.import_key(keys.ec_private[alg])
    token = jws.serialize_compact({"alg": alg, "kid": "k1"}, b'{"sub":"x"}', private, [alg])
    key = keys.public(alg)
    assert assert_same(token, key, alg) == ("payload", b'{"sub":"x"}')
    assert decided_fast(token, key, alg)


@pytest.mark.parametrize("alg", [*RSA_ALGS, *EC_ALGS])
def test_a_forged_signature_is_refused_on_the_fast_path_with_joserfcs_text(
    keys: Keys, alg: str
) -> None:
    key = keys.public(alg)
    token = keys.token(alg)
    head, body, signature = token.split(".")
    forged_body = b64json({**PAYLOAD, "sub": "10002"})
    for forged in (
        f"{head}.{forged_body}.{signature}",  # payload changed after signing
        f"{head}.{body}.{b64(bytes(len(base64.urlsafe_b64decode(signature + '==='))))}",
        f"{head}.{body}.",  # no signature
        f"{head}.{body}.{signature[:-4]}",  # shorter (for EC: r||s of the wrong length)
    ):
        assert assert_same(forged, key, alg) == (
            "refused",
            "ID token signature does not verify (bad_signature)",
        )
        assert decided_fast(forged, key, alg)


def test_an_ec_signature_in_der_is_refused(keys: Keys) -> None:
    key = keys.public("ES256")
    head, body, _ = keys.token("ES256").split(".")
    der = keys.ec_private["ES256"].sign(f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
    assert assert_same(f"{head}.{body}.{b64(der)}", key, "ES256")[0] == "refused"


def test_another_key_is_refused(keys: Keys) -> None:
    other = Keys()
    for alg in ("RS256", "PS256", "ES256"):
        assert assert_same(keys.token(alg), other.public(alg), alg)[0] == "refused"


# -- headers -------------------------------------------------------------------------------------


HEADERS: list[dict[str, Any]] = [
    {"alg": "RS256"},
    {"alg": "RS256", "kid": "k1", "typ": "JWT", "cty": "JWT", "x5t": "abc", "x5t#S256": "d"},
    {"alg": "RS256", "kid": 1},  # a kid that is not a string
    {"alg": "RS256", "typ": None},
    {"alg": "RS256", "typ": ["JWT"]},
    {"alg": "RS512"},  # not the algorithm asked for
    {"alg": "none"},
    {"alg": "HS256"},
    {"kid": "k1"},  # no alg
    {"alg": "RS256", "crit": ["exp"], "exp": 1},
    {"alg": "RS256", "crit": ["b64"], "b64": False},
    {"alg": "RS256", "b64": True},
    {"alg": "RS256", "crit": []},
    {"alg": "RS256", "jku": "https://evil.example/jwks"},
    {"alg": "RS256", "jku": "ftp://evil.example/jwks"},
    {"alg": "RS256", "jwk": {"kty": "RSA"}},
    {"alg": "RS256", "x5c": ["MIIB"]},
    {"alg": "RS256", "x5u": "https://evil.example/cert"},
    {"alg": "RS256", "unknown": "member"},
    {"alg": "RS256", "kid": "k" * 400},  # a header over joserfc's 512 bytes
]


@pytest.mark.parametrize("header", HEADERS, ids=lambda h: json.dumps(h)[:60])
def test_headers_are_judged_alike(keys: Keys, header: dict[str, Any]) -> None:
    key = keys.public("RS256")
    assert_same(keys.token("RS256", header), key, "RS256")


@pytest.mark.parametrize(
    "head",
    [
        '{"alg":"RS256","alg":"none"}',  # duplicate members: the last one counts, for both
        '{"alg":"none","alg":"RS256"}',
        '{"alg":"RS256","kid":"a","kid":"b"}',
        '["RS256"]',
        '"RS256"',
        "null",
        "{",
        '{"alg":"RS256"} trailing',
        '{"alg":"RS256"}\n',
        ' {"alg":"RS256"}',
        '{"alg":"RS\\u0032\\u0035\\u0036"}',
        '{"alg":"RS256","kid":"\\ud800"}',
    ],
)
def test_odd_header_json_is_judged_alike(keys: Keys, head: str) -> None:
    key = keys.public("RS256")
    token = keys.token("RS256", head=b64(head.encode()))
    assert_same(token, key, "RS256")


def test_a_header_in_utf16_is_judged_alike(keys: Keys) -> None:
    token = keys.token("RS256", head=b64('{"alg":"RS256"}'.encode("utf-16")))
    assert_same(token, keys.public("RS256"), "RS256")


# -- base64url and the compact form --------------------------------------------------------------


def spoil(token: str, part: int, how: str) -> str:
    parts = token.split(".")
    segment = parts[part]
    match how:
        case "padding":
            segment += "=" * (-len(segment) % 4 or 4)
        case "plus":
            segment = segment[:3] + "+" + segment[4:]
        case "slash":
            segment = segment[:3] + "/" + segment[4:]
        case "junk":
            segment = segment[:5] + "!" + segment[5:]
        case "space":
            segment = segment[:5] + " " + segment[5:]
        case "newline":
            segment = segment + "\n"
        case "non_ascii":
            segment = segment[:5] + "é" + segment[5:]
        case "one_more":  # a length of 4n+1: never valid base64
            segment += "A"
        case "trailing_bits":  # the last character carries bits that decode to nothing
            last = segment[-1]
            if len(segment) % 4:
                alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                segment = segment[:-1] + alphabet[(alphabet.index(last) + 1) % 64]
        case "empty":
            segment = ""
    parts[part] = segment
    return ".".join(parts)


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
@pytest.mark.parametrize("part", [0, 1, 2], ids=["header", "payload", "signature"])
@pytest.mark.parametrize(
    "how",
    [
        "padding",
        "plus",
        "slash",
        "junk",
        "space",
        "newline",
        "non_ascii",
        "one_more",
        "trailing_bits",
        "empty",
    ],
)
def test_spoiled_base64_is_judged_alike(keys: Keys, alg: str, part: int, how: str) -> None:
    token = keys.token(alg, {"alg": alg, "kid": "key-1"}, {**PAYLOAD, "x": "ab"})
    assert_same(spoil(token, part, how), keys.public(alg), alg)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.rsplit(".", 1)[0],  # two parts
        lambda t: t + ".",  # four parts
        lambda t: t + ".extra",
        lambda t: "." + t,
        lambda t: t.replace(".", "..", 1),
        lambda t: t + "A" * 1100,  # a signature over joserfc's 1,024 characters
    ],
)
def test_broken_compact_forms_are_judged_alike(keys: Keys, make: Callable[[str], str]) -> None:
    assert_same(make(keys.token("RS256")), keys.public("RS256"), "RS256")


@pytest.mark.parametrize(
    "payload",
    [b"", b"not json", b"[1,2]", b'"text"', b"\xff\xfe", b'{"a":1,"a":2}', b"x" * 5000],
)
def test_any_signed_payload_is_returned_alike(keys: Keys, payload: bytes) -> None:
    for alg in ("RS256", "ES384"):
        token = keys.token(alg, body=b64(payload))
        assert assert_same(token, keys.public(alg), alg) == ("payload", payload)
        assert decided_fast(token, keys.public(alg), alg)


# -- keys ----------------------------------------------------------------------------------------


def test_keys_are_judged_alike(keys: Keys) -> None:
    token = keys.token("RS256")
    es256 = keys.token("ES256")
    cases: list[tuple[str, Key, str]] = [
        (token, keys.public("RS256", use="enc"), "RS256"),
        (token, keys.public("RS256", use="sig"), "RS256"),
        (token, keys.public("RS256", alg="RS512"), "RS256"),
        (token, keys.public("RS256", alg="PS256"), "RS256"),
        (token, keys.public("RS256", key_ops=["verify"]), "RS256"),
        (token, keys.public("RS256", key_ops=["sign"]), "RS256"),
        (token, RSAKey.import_key(keys.rsa_private), "RS256"),  # a private key
        (token, keys.public("ES256"), "RS256"),  # an EC key for RS256
        (es256, keys.public("RS256"), "ES256"),  # an RSA key for ES256
        (es256, keys.public("ES384"), "ES256"),  # the wrong curve
        (es256, ECKey.import_key(keys.ec_private["ES256"]), "ES256"),
        (es256, keys.public("ES256", use="enc"), "ES256"),
        (keys.token("ES384"), keys.public("ES256"), "ES384"),
        (token, OKPKey.generate_key("Ed25519"), "RS256"),
    ]
    for token_, key, alg in cases:
        assert_same(token_, key, alg)


def test_eddsa_is_left_to_joserfc() -> None:
    private = OKPKey.generate_key("Ed25519", private=True)
    public = OKPKey.import_key(private.as_dict(private=False))
    with pytest.warns(SecurityWarning):  # joserfc's deprecation of "EdDSA", kept on its path
        token = jws.serialize_compact({"alg": "EdDSA"}, b"{}", private, ["EdDSA"])
        assert id_token._verify_signature(token, public, "EdDSA") == b"{}"
    assert id_token._fast_payload(token, public, "EdDSA", "ID token") is None


def test_alg_none_and_hs256_are_left_to_joserfc(keys: Keys) -> None:
    body = b64json(PAYLOAD)
    none = f"{b64json({'alg': 'none'})}.{body}."
    assert id_token._fast_payload(none, keys.public("RS256"), "none", "ID token") is None
    assert_same(none, keys.public("RS256"), "RS256")


# -- random spoiling -----------------------------------------------------------------------------


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    alg=st.sampled_from(["RS256", "PS384", "ES256", "ES512"]),
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=10_000),
            st.sampled_from(["replace", "insert", "delete"]),
            st.sampled_from(list("AQgw-_+/=.!é \x00Zz09")),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_randomly_spoiled_tokens_are_judged_alike(
    keys: Keys, alg: str, edits: list[tuple[int, str, str]]
) -> None:
    token = keys.token(alg, {"alg": alg, "kid": "k1", "typ": "JWT"})
    for position, how, char in edits:
        i = position % (len(token) + 1)
        if how == "replace" and i < len(token):
            token = token[:i] + char + token[i + 1 :]
        elif how == "insert":
            token = token[:i] + char + token[i:]
        elif i < len(token):
            token = token[:i] + token[i + 1 :]
    assert_same(token, keys.public(alg), alg)


# -- the fast path's tables agree with joserfc's -------------------------------------------------


def test_the_fast_algorithms_are_joserfcs() -> None:
    for name, fast in id_token._FAST_ALGORITHMS.items():
        model: Any = jws.JWSRegistry.algorithms[name]
        assert model.security_warning is None  # joserfc would warn: not a fast case
        if isinstance(fast, id_token._RsaAlgorithm):
            assert model.key_type == "RSA"
            assert type(fast.hash) is model.hash_alg
            assert type(fast.padding) is type(model.padding)
            if isinstance(model.padding, padding.PSS):
                assert isinstance(fast.padding, padding.PSS)
                assert fast.padding._salt_length == model.padding._salt_length
                assert type(fast.padding.mgf._algorithm) is type(model.padding.mgf._algorithm)
        else:
            assert model.key_type == "EC"
            assert type(fast.ecdsa.algorithm) is model.hash_alg
            expected = ECKey.binding._dss_curves[model.curve].name
            assert fast.curve == expected


def test_the_plain_header_members_are_strings_for_joserfc() -> None:
    for member in id_token._PLAIN_MEMBERS:
        assert JWS_HEADER_REGISTRY[member].validate is is_str


def test_a_decoded_header_is_a_copy(keys: Keys) -> None:
    token = keys.token("RS256", {"alg": "RS256", "kid": "k1"})
    first = id_token.header_of(token)
    first["alg"] = "none"
    assert id_token.header_of(token) == {"alg": "RS256", "kid": "k1"}
