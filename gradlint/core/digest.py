"""Content digests for cache keys: blake2b, without `import hashlib` (which loads
OpenSSL, a few milliseconds of a pre-commit run)."""

from __future__ import annotations

try:
    from _blake2 import blake2b  # what hashlib.blake2b is
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b


def hex_digest(data: bytes, size: int = 16) -> str:
    return blake2b(data, digest_size=size).hexdigest()
