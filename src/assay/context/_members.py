"""The safety rules for the members of a context archive, as a pure state machine.

The archive is read as a stream, so members are judged one at a time, in order, against what
came before: that is exactly what the file system looks like when each one is extracted. Links
are resolved the way the kernel would, component by component and through the links already
seen, so a chain of individually harmless links cannot walk out of the root. Nothing may be
written through a symlink, so every member name is a physical path. Because a later
link can change where an earlier one leads (``a -> p/..`` followed by ``p -> .``), every link is
resolved once more against the complete set by :meth:`MemberChecker.finish`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assay.context._sizes import format_limit, format_size
from assay.errors import InvalidContext, TooLarge

MemberKind = Literal["file", "dir", "symlink", "hardlink"]
_ALLOWED: tuple[MemberKind, ...] = ("file", "dir", "symlink", "hardlink")

# Linux gives up after 40 links in one lookup; a longer chain can only be a loop or an attack.
_MAX_LINK_HOPS = 40


@dataclass(frozen=True)
class MemberInfo:
    """One accepted member: its normalised name (``/``-separated, no ``./``), what it is, its
    size in bytes (0 for anything but a regular file), its permission bits as they will be
    extracted, and for links the target."""

    name: str
    kind: MemberKind
    size: int
    mode: int
    linkname: str = ""


class _Escape(Exception):
    pass


class _Loop(Exception):
    pass


def normalize_name(raw: str, *, what: str = "member") -> str:
    """``raw`` as a plain relative path: ``./`` and empty components dropped, ``""`` for the
    root itself. Absolute paths and ``..`` components are refused."""
    if raw.startswith("/"):
        raise InvalidContext(
            f"context archive {what} {raw!r} is an absolute path; every member must be relative "
            "to the context root"
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidContext(
            f"context archive {what} {raw!r} has a '..' component; members must stay inside the "
            "context root"
        )
    return "/".join(parts)


def normalize_mode(mode: int, kind: MemberKind) -> int:
    """Permission bits as extracted: only the owner's executable bit of a file is kept."""
    if kind == "dir":
        return 0o755
    if kind == "symlink":
        return 0o777
    return 0o755 if mode & 0o100 else 0o644


class MemberChecker:
    """Accepts or refuses archive members in order; raises on the first unsafe one.

    ``limit`` caps the sum of regular file sizes. It is checked against each member's declared
    size before its data is read, so an oversized member is refused without inflating it.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.files = 0
        self.members = 0
        self._kinds: dict[str, MemberKind] = {}
        self._implicit_dirs: set[str] = set()
        self._links: dict[str, str] = {}

    def add(
        self, raw_name: str, kind: str, size: int, linkname: str, mode: int
    ) -> MemberInfo | None:
        """Judge the next member. Returns its normalised form, or ``None`` for an entry naming
        the root directory itself (``./``), which has nothing to extract."""
        self.members += 1
        if kind not in _ALLOWED:
            raise InvalidContext(
                f"context archive member {raw_name!r} is a {kind}; a context may hold only "
                "regular files, directories, and links that stay inside it"
            )
        member_kind: MemberKind = kind
        name = normalize_name(raw_name)
        if not name:
            if member_kind == "dir":
                return None
            raise InvalidContext(
                f"context archive member {raw_name!r} names the root itself but is a {kind}, "
                "not a directory"
            )
        self._check_place(raw_name, name, member_kind)
        stored_link = ""
        if member_kind == "symlink":
            stored_link = self._check_symlink(raw_name, name, linkname)
        elif member_kind == "hardlink":
            stored_link = self._check_hardlink(raw_name, linkname)
        if member_kind == "file":
            self._count(raw_name, size)
        if member_kind != "dir":
            self.files += 1
        self._record(name, member_kind, stored_link)
        return MemberInfo(
            name=name,
            kind=member_kind,
            size=size if member_kind == "file" else 0,
            mode=normalize_mode(mode, member_kind),
            linkname=stored_link,
        )

    def finish(self) -> None:
        """Re-resolve every symlink against the complete archive (see the module docstring)."""
        for name, target in self._links.items():
            self._resolve_link(name, name, target)

    # -- the rules -------------------------------------------------------------------------

    def _count(self, raw_name: str, size: int) -> None:
        if size < 0:
            raise InvalidContext(f"context archive member {raw_name!r} declares a negative size")
        if self.total + size > self.limit:
            raise TooLarge(
                f"context archive unpacks to more than the {format_limit(self.limit)} limit: "
                f"member {raw_name!r} ({format_size(size)}) brings the total to "
                f"{format_size(self.total + size)}; leave big files out of the context "
                "(.assayignore) and load data from outside it"
            )
        self.total += size

    def _check_place(self, raw_name: str, name: str, kind: MemberKind) -> None:
        # Writing through a symlink is refused outright: no packer needs it, and it keeps every
        # member name a physical path, which is what link resolution looks names up by.
        parts = name.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            held = self._kinds.get(prefix)
            if held is not None and held != "dir":
                raise InvalidContext(
                    f"context archive member {raw_name!r} lies under {prefix!r}, which is a "
                    f"{held} earlier in the archive, not a directory"
                )
        held = self._kinds.get(name)
        if held is not None and not (held == "dir" and kind == "dir"):
            raise InvalidContext(
                f"context archive member {raw_name!r} appears twice (as a {held}, then as a "
                f"{kind}); each path may occur once"
            )
        if name in self._implicit_dirs and kind != "dir":
            raise InvalidContext(
                f"context archive member {raw_name!r} is a {kind}, but earlier members already "
                "used it as a directory"
            )

    def _check_symlink(self, raw_name: str, name: str, linkname: str) -> str:
        if not linkname:
            raise InvalidContext(f"context archive symlink {raw_name!r} has an empty target")
        if linkname.startswith("/"):
            raise InvalidContext(
                f"context archive symlink {raw_name!r} points to the absolute path {linkname!r}; "
                "links must be relative and stay inside the context root"
            )
        self._resolve_link(raw_name, name, linkname)
        return linkname

    def _resolve_link(self, raw_name: str, name: str, linkname: str) -> None:
        parent = name.split("/")[:-1]
        try:
            self._resolve([*parent, *linkname.split("/")])
        except _Escape:
            raise InvalidContext(
                f"context archive symlink {raw_name!r} points to {linkname!r}, which resolves "
                "outside the context root"
            ) from None
        except _Loop:
            raise InvalidContext(
                f"context archive symlink {raw_name!r} points to {linkname!r}, which is part of a "
                "symlink loop"
            ) from None

    def _check_hardlink(self, raw_name: str, linkname: str) -> str:
        # Hard link targets are relative to the archive root, not to the link's directory.
        if linkname.startswith("/") or ".." in linkname.split("/"):
            raise InvalidContext(
                f"context archive hard link {raw_name!r} points to {linkname!r}, outside the "
                "context root"
            )
        target = normalize_name(linkname, what="hard link target")
        if self._kinds.get(target) not in ("file", "hardlink"):
            raise InvalidContext(
                f"context archive hard link {raw_name!r} points to {linkname!r}, which is not a "
                "regular file earlier in the archive"
            )
        return target

    def _record(self, name: str, kind: MemberKind, linkname: str) -> None:
        parts = name.split("/")
        self._implicit_dirs.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
        self._kinds[name] = kind
        if kind == "symlink":
            self._links[name] = linkname

    def _resolve(self, parts: list[str]) -> tuple[str, ...]:
        """Where ``parts`` (relative to the root) lands, following the links seen so far.

        Raises :class:`_Escape` as soon as a ``..`` would climb above the root, even if a later
        component would come back down: nothing may be reached by leaving the root.
        """
        resolved: list[str] = []
        pending = list(reversed(parts))
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    raise _Escape
                resolved.pop()
                continue
            resolved.append(part)
            target = self._links.get("/".join(resolved))
            if target is None:
                continue
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise _Loop
            if target.startswith("/"):
                raise _Escape
            resolved.pop()
            pending.extend(reversed(target.split("/")))
        return tuple(resolved)
