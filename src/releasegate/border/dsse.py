"""DSSE envelopes signed with Ed25519 (https://github.com/secure-systems-lab/dsse, protocol v1), made and checked
with the reference implementation, securesystemslib (`securesystemslib.dsse.Envelope`, `CryptoSigner`,
`SSlibKey`): the signature is over PAE(payloadType, payload), never over the JSON of the envelope, so no
re-serialisation can change what was signed. Keys are PEM files: a PKCS#8 Ed25519 private key (`releasegate
attest --generate-key`, or `openssl genpkey -algorithm ed25519`) and its SubjectPublicKeyInfo public key.

Around securesystemslib, three checks stay by hand, because its reader cannot keep them: it decodes base64
leniently (skipping any character that is not base64), it skips a signature that fails rather than refusing the
envelope, and it matches a signature to a key by key id only (a signature that names no key is never checked).
So the envelope's fields are read here first, strictly; every signature that names a given key, or names none,
must verify; then `Envelope.verify` (threshold 1) names the key that verified."""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .files import exists, read_capped, replace_file

if TYPE_CHECKING:  # strict: securesystemslib.signer re-exports without __all__. The signing libraries load
    # where a key or an envelope is handled, never on `gate`'s path
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from securesystemslib.signer import Key, SSlibKey  # type: ignore[attr-defined,unused-ignore]

__all__ = ["PAYLOAD_TYPE", "pae", "sign_envelope", "envelope_problem", "verified_by", "load_private_key",
           "load_public_key", "public_key_from_pem", "generate_key", "key_id"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_KEY_BYTES = 64 * 1024
MAX_SIGNATURES = 16
"""Signatures an envelope may carry; more is not an attestation."""
MAX_KEYS = 16
"""Public keys one check may trust (the current one and those being retired)."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, each LEN the
    ASCII decimal byte length (securesystemslib's `Envelope.pae`)."""
    from securesystemslib.dsse import Envelope

    return Envelope(payload, payload_type, {}).pae()


def key_id(public_key: Ed25519PublicKey) -> str:
    """The key's id in an envelope: the sha256 of its raw 32 bytes, in hex."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return hashlib.sha256(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()


def _sslib_key(public_key: Ed25519PublicKey) -> SSlibKey:
    """The key as securesystemslib holds it, under releasegate's key id (envelopes already written name it)."""
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined,unused-ignore]

    return SSlibKey.from_crypto(public_key, keyid=key_id(public_key))


def sign_envelope(payload: bytes, private_key: Ed25519PrivateKey, payload_type: str = PAYLOAD_TYPE
                  ) -> dict[str, Any]:
    """The DSSE envelope of `payload` (an in-toto statement, or what `payload_type` names), with one signature by
    `private_key`."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner  # type: ignore[attr-defined,unused-ignore]

    envelope = Envelope(payload, payload_type, {})
    envelope.sign(CryptoSigner(private_key, _sslib_key(private_key.public_key())))
    return {"payloadType": payload_type, **envelope.to_dict()}


def envelope_problem(envelope: object, public_keys: Ed25519PublicKey | list[Ed25519PublicKey]
                     ) -> tuple[str | None, bytes | None]:
    """Why the envelope does not stand for any of `public_keys` (None when it does), and its payload once
    decoded (`verified_by` also says which key)."""
    problem, payload, _ = verified_by(envelope, public_keys)
    return problem, payload


def verified_by(envelope: object, public_keys: Ed25519PublicKey | list[Ed25519PublicKey],
                payload_type: str = PAYLOAD_TYPE, what: str = "an in-toto statement"
                ) -> tuple[str | None, bytes | None, str | None]:
    """Why the envelope does not stand (None when it does), its payload, and the id of the key that verified. It
    stands when a signature verifies with one of the keys over PAE(payloadType, payload) and no signature that
    names one of the keys (or names none) fails: a second signature made to look like a trusted key's is never
    passed over. Signatures naming other keys are someone else's and are not counted. `payload_type` and `what`:
    the kind of envelope expected (an in-toto statement, or reviewers' signed labels)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import Signature  # type: ignore[attr-defined,unused-ignore]

    keys: list[Key] = [_sslib_key(k) for k in (public_keys if isinstance(public_keys, list) else [public_keys])]
    if not isinstance(envelope, dict) or envelope.get("payloadType") != payload_type:
        return f"not a DSSE envelope of {what} (payloadType {payload_type})", None, None
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures or len(signatures) > MAX_SIGNATURES:
        return f"an envelope carries 1 to {MAX_SIGNATURES} signatures", None, None
    payload = _b64(envelope.get("payload"))
    if payload is None:
        return "the payload is not base64", None, None
    signed, good = Envelope(payload, payload_type, {}), {}
    for entry in signatures:
        keyid = entry.get("keyid") if isinstance(entry, dict) else None
        mine = [k for k in keys if keyid in (None, "", k.keyid)]
        if not mine:
            continue
        raw = _b64(entry.get("sig")) if isinstance(entry, dict) else None
        verifier = next((k for k in mine if _verifies(k, raw, signed.pae())), None) if raw is not None else None
        if verifier is None or raw is None:
            return ("a signature for this key does not verify: the statement was changed, or signed by another "
                    "key"), None, None
        good[verifier.keyid] = Signature(verifier.keyid, raw.hex())
    if not good:
        return "no signature by this key (signed by another key?)", None, None
    signed.signatures = good
    accepted = signed.verify(keys, 1)  # the reference's own check, over the signatures read above
    return None, payload, sorted(accepted)[0]


def _verifies(key: Key, raw: bytes, data: bytes) -> bool:
    from securesystemslib.exceptions import UnverifiedSignatureError, VerificationError
    from securesystemslib.signer import Signature  # type: ignore[attr-defined,unused-ignore]

    try:
        key.verify_signature(Signature(key.keyid, raw.hex()), data)
    except (UnverifiedSignatureError, VerificationError):
        return False
    return True


def _b64(value: object) -> bytes | None:
    """Strict base64 (securesystemslib's decoder skips characters that are not base64)."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file `path`; InputError naming it otherwise."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    data = read_capped(path, what="private key", max_bytes=MAX_KEY_BYTES)
    try:
        key = load_pem_private_key(data, password=None)
    except TypeError:
        raise InputError("the private key is encrypted: give an unencrypted PEM key (keep it in your CI's secret "
                         "store)", file=path) from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"not a PEM private key ({type(exc).__name__})", file=path,
                         hint="make one with releasegate attest --generate-key FILE") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError("not an Ed25519 key", file=path, hint="openssl genpkey -algorithm ed25519 -out FILE")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM file `path` (a private key's public half is accepted too)."""
    data = read_capped(path, what="public key", max_bytes=MAX_KEY_BYTES)
    if b"PRIVATE KEY" in data:
        return load_private_key(path).public_key()
    key, problem = _public_key(data)
    if key is None:
        raise InputError(problem, file=path)
    return key


def public_key_from_pem(pem: str) -> Ed25519PublicKey | None:
    """The Ed25519 public key a PEM text holds (a rubric's reviewer key); None when it holds none."""
    return _public_key(pem.encode("utf-8"))[0]


def _public_key(data: bytes) -> tuple[Ed25519PublicKey | None, str]:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        return None, f"not a PEM public key ({type(exc).__name__})"
    return (key, "") if isinstance(key, Ed25519PublicKey) else (None, "not an Ed25519 public key")


def generate_key(path: Path) -> Path:
    """A new Ed25519 key: the private key in `path` (mode 0600), the public key in `path`.pub; never over an
    existing file."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

    public = Path(f"{path}.pub")
    for target in (Path(path), public):
        if exists(target):
            raise InputError("exists already: a key is never replaced", file=target, hint="choose another name")
    key = Ed25519PrivateKey.generate()
    replace_file(Path(path), key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()),
                 what="private key", mode=0o600)
    replace_file(public, key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo),
                 what="public key")
    return public
