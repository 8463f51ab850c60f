"""Inflating a gzip stream held in memory, a bounded amount at a time.

``tarfile``'s own gzip support would inflate whatever a header asks for; this reader hands out
inflated bytes only as they are read and stops the moment the total passes a cap, so a small
archive that inflates to gigabytes costs no more than the cap to refuse.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable

from assay.context._sizes import format_size
from assay.errors import InvalidContext, TooLarge

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_CHUNK = 64 * 1024


def check_gzip_magic(data: bytes) -> None:
    """Refuse bytes that are not gzip at all, before any parsing."""
    if data[:2] != _GZIP_MAGIC:
        raise InvalidContext(
            f"context archive is not gzip data (it starts with {data[:8]!r}); expected a .tar.gz "
            "as made by `tar czf` or the assay CLI"
        )


class BoundedGunzip(io.RawIOBase):
    """A read-only file of the inflated content of ``data`` (one or more gzip members).

    ``cap`` is asked after every step how many inflated bytes are acceptable so far; the
    caller can raise it as it learns more (tar headers of more members).
    """

    def __init__(self, data: bytes, cap: Callable[[], int]) -> None:
        super().__init__()
        check_gzip_magic(data)
        self._data = memoryview(data)
        self._pos = 0
        self._cap = cap
        self._dec = zlib.decompressobj(_GZIP_WBITS)
        self._buffer = b""
        self._finished = False
        self.inflated = 0

    def readable(self) -> bool:
        return True

    # typeshed says ``Buffer``, which has no slice assignment to type against before 3.12.
    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        want = len(buffer)
        while not self._buffer and not self._finished:
            self._buffer = self._inflate_some()
        chunk, self._buffer = self._buffer[:want], self._buffer[want:]
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def drain(self) -> None:
        """Inflate what is left, still under the cap: this checks the gzip trailer (CRC and
        length) and refuses trailing bytes that are not gzip."""
        self._buffer = b""
        while not self._finished:
            self._inflate_some()

    def _inflate_some(self) -> bytes:
        try:
            return self._step()
        except zlib.error as exc:
            raise InvalidContext(f"context archive is not valid gzip data: {exc}") from None

    def _step(self) -> bytes:
        dec = self._dec
        if dec.eof:
            self._next_member()
            return b""
        if dec.unconsumed_tail:
            source: bytes | memoryview = dec.unconsumed_tail
        elif self._pos < len(self._data):
            source = self._data[self._pos : self._pos + _CHUNK]
            self._pos += len(source)
        else:
            raise InvalidContext(
                "context archive is truncated: the gzip stream ends before its end marker"
            )
        out = dec.decompress(source, _CHUNK)
        self.inflated += len(out)
        cap = self._cap()
        if self.inflated > cap:
            raise TooLarge(
                f"context archive inflates to more than {format_size(cap)} (its file data plus "
                "tar headers); refusing it without inflating the rest"
            )
        return out

    def _next_member(self) -> None:
        rest = bytes(self._dec.unused_data) + bytes(self._data[self._pos :])
        if not rest.strip(b"\0"):
            # Some writers pad a stream with zeros to a block size; that is not another member.
            self._finished = True
            return
        if rest[:2] != _GZIP_MAGIC:
            raise InvalidContext(
                f"context archive has {len(rest)} bytes of trailing data after its gzip stream"
            )
        self._data = memoryview(rest)
        self._pos = 0
        self._dec = zlib.decompressobj(_GZIP_WBITS)
