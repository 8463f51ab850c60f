"""Password hashes: argon2id, the memory-hard hash OWASP recommends for stored passwords."""

from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from assay.rest.determined import client_hash


@cache
def _hasher() -> PasswordHasher:
    return PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return _hasher().verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@cache
def decoy_hash() -> str:
    """A hash to verify against when no such user exists, so that a wrong user name takes as
    long to refuse as a wrong password and timing does not tell which names exist."""
    return hash_password("no such user; this hash only takes the time a real one would")


def hash_for_determined(password: str) -> str:
    """The hash Determined's clients sign in against: argon2id of what they send for the
    password (its salted SHA-512, :func:`~assay.rest.determined.client_hash`). That digest is
    as good as the password to whoever holds it, so it is stored only under argon2, as the
    password itself is."""
    return hash_password(client_hash(password))


def hash_both(password: str) -> tuple[str, str]:
    """A password's two stored hashes: assay's and the one Determined's clients sign in
    against."""
    return hash_password(password), hash_for_determined(password)
