"""Sealed secrets (labapp/sealing.py): opened only by the key that sealed them or a fallback
listed after it, only for their own purpose; anything else is Unreadable, never an error of
the cipher or of base64."""
from __future__ import annotations

import base64

import pytest

from labapp import sealing

PURPOSE = b"tests of sealing"


def test_a_sealed_value_opens_with_its_key_and_hides_the_value() -> None:
    sealed = sealing.seal("JBSWY3DPEHPK3PXP", "key one", PURPOSE)
    assert sealing.is_sealed(sealed) and "JBSWY3DPEHPK3PXP" not in sealed
    assert sealing.unseal(sealed, ("key one",), PURPOSE) == "JBSWY3DPEHPK3PXP"
    # A fresh nonce each time: the same value sealed twice reads differently.
    assert sealing.seal("JBSWY3DPEHPK3PXP", "key one", PURPOSE) != sealed


def test_a_fallback_key_opens_what_it_sealed_before_the_rotation() -> None:
    sealed = sealing.seal("value", "old key", PURPOSE)
    assert sealing.unseal(sealed, ("new key", "older key", "old key"), PURPOSE) == "value"
    with pytest.raises(sealing.Unreadable, match="SECRET_KEY_FALLBACKS"):
        sealing.unseal(sealed, ("new key",), PURPOSE)
    with pytest.raises(sealing.Unreadable):
        sealing.unseal(sealed, (), PURPOSE)


def test_a_value_sealed_for_one_purpose_never_opens_as_another() -> None:
    sealed = sealing.seal("value", "key", PURPOSE)
    with pytest.raises(sealing.Unreadable):
        sealing.unseal(sealed, ("key",), b"another purpose")


@pytest.mark.parametrize("stored", [
    "JBSWY3DPEHPK3PXP",                        # kept in clear
    "v1:",                                     # nothing sealed
    "v1:" + base64.b64encode(b"too short for a nonce and its tag").decode(),
    "v1:not base64 at all!",
    "v1:\x00\x1b[31m",
])
def test_what_is_not_a_whole_sealed_value_is_unreadable(stored: str) -> None:
    with pytest.raises(sealing.Unreadable):
        sealing.unseal(stored, ("key",), PURPOSE)


def test_one_key_given_as_a_string_is_refused_not_read_as_its_characters() -> None:
    sealed = sealing.seal("value", "k", PURPOSE)
    with pytest.raises(TypeError):
        sealing.unseal(sealed, "k", PURPOSE)


def test_sealed_anew_moves_a_value_under_the_current_key_only_when_it_needs_it() -> None:
    keys = ("new key", "old key")
    in_clear = sealing.sealed_anew("value", keys, PURPOSE)
    assert in_clear is not None and sealing.unseal(in_clear, keys[:1], PURPOSE) == "value"
    assert sealing.sealed_anew(sealing.seal("value", "new key", PURPOSE), keys, PURPOSE) is None
    moved = sealing.sealed_anew(sealing.seal("value", "old key", PURPOSE), keys, PURPOSE)
    assert moved is not None and sealing.unseal(moved, keys[:1], PURPOSE) == "value"
    lost = sealing.seal("value", "a key nobody kept", PURPOSE)
    assert sealing.sealed_anew(lost, keys, PURPOSE) is None
