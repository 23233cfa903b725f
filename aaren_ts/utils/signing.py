"""Keyed signatures (HMAC-SHA256) on the files aaren_ts writes, for tamper evidence.

The files carry checksums, which detect damage: anyone who alters a file on purpose can compute the
checksum again. A signature is computed with a secret key: without that key no one can alter a
signed file and give it a signature that matches. Saving with ``signing_key=`` signs an estimator's
archive (``save``), an ONNX export (``to_onnx``) or a streamer's state (``OnnxStreamer.save_state``);
reading with the same ``signing_key=`` refuses a file whose signature is missing or does not match,
before anything in it is parsed. Reading without a key ignores a signature.

Each signature covers a ``purpose`` (which kind of file, and for an archive which estimator) ahead of
the content, so a signature from one kind of file does not verify another. Standard library only: the
torch-free :mod:`aaren_ts.onnx` uses it too.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

__all__ = ["MIN_KEY_BYTES", "SIGNATURE_LENGTH", "check_signature", "key_bytes", "signature"]

#: The shortest key accepted, in bytes (``secrets.token_bytes(32)`` makes a good one).
MIN_KEY_BYTES = 16
#: The length of a signature: the hexadecimal digits of an HMAC-SHA256.
SIGNATURE_LENGTH = 64


def key_bytes(key: bytes | str) -> bytes:
    """``key`` as bytes (a ``str`` in UTF-8), refusing anything shorter than :data:`MIN_KEY_BYTES`.

    Raises
    ------
    TypeError
        If ``key`` is neither ``bytes`` nor ``str``.
    ValueError
        If it is shorter than :data:`MIN_KEY_BYTES` bytes.
    """
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes | bytearray):
        raise TypeError(f"signing_key must be bytes or str, got {type(key).__name__}")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(
            f"signing_key has {len(key)} byte(s); a signing key needs at least {MIN_KEY_BYTES} "
            "(for example secrets.token_bytes(32), kept secret)"
        )
    return bytes(key)


def signature(key: bytes | str, purpose: str, parts: Iterable[bytes]) -> str:
    """The HMAC-SHA256 of ``purpose`` and ``parts`` (each prefixed by its length) under ``key``, as
    :data:`SIGNATURE_LENGTH` lowercase hexadecimal digits."""
    mac = hmac.new(key_bytes(key), digestmod=hashlib.sha256)
    for part in (purpose.encode("utf-8"), *parts):
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def check_signature(
    key: bytes | str, purpose: str, parts: Iterable[bytes], written: bytes | str | None, shown: str
) -> None:
    """Refuse content whose ``written`` signature is missing or is not :func:`signature` of
    ``purpose`` and ``parts`` under ``key`` (compared in constant time).

    Raises
    ------
    ValueError
        Naming the file ``shown``: unsigned, or altered after signing (or signed with another key).
    """
    if written is None:
        raise ValueError(
            f"{shown} is not signed; with a signing_key only files signed with that key are read "
            "(save it again with signing_key=, or read it without one if you trust its source)"
        )
    if isinstance(written, str):
        written = written.encode("ascii", "replace")
    expected = signature(key, purpose, parts).encode("ascii")
    if not hmac.compare_digest(expected, bytes(written)):
        raise ValueError(
            f"{shown}: its signature does not match the signing key: it was altered after it was "
            "signed, or signed with another key; refused unread"
        )
