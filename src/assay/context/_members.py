"""The safety rules for the members of a context archive, as a pure state machine.

The archive is read as a stream, so members are judged one at a time, in order, against what
came before: that is exactly what the file system looks like when each one is extracted. Links
are resolved the way the kernel would, component by component and through the links already
seen, so a chain of individually harmless links cannot walk out of the root. Nothing may be
written through a symlink, so every member name is a physical path. Because a later
link can change where an earlier one leads (``a -> p/..`` followed by ``p -> .``), every link is
resolved once more against the complete set by :meth:`MemberChecker.finish`.

What the archive has built so far is kept as a tree of names, one node per path (directories
that members only imply included), so judging a member costs a step per component of its name
and the memory held grows with the number of paths, never with their lengths multiplied
together. The limits on paths (:mod:`assay.context._paths`), on the number of paths and on the
work of resolving links keep both small whatever the archive says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assay.context._paths import parts_problem, shown, split_name, text_problem
from assay.context._sizes import MAX_MEMBERS, format_limit, format_size
from assay.errors import InvalidContext, TooLarge

MemberKind = Literal["file", "dir", "symlink", "hardlink"]
_ALLOWED: tuple[MemberKind, ...] = ("file", "dir", "symlink", "hardlink")

# Linux gives up after 40 links in one lookup; a longer chain can only be a loop or an attack.
_MAX_LINK_HOPS = 40

# Components looked at while resolving links, over the whole archive and both passes (about a
# second of work). Each lookup is cheap, but 40 hops of deep targets for each of 100,000 links is
# not; a real link needs a few dozen.
_MAX_RESOLVE_STEPS = 4_000_000


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


class _Tangled(Exception):
    pass


class _Node:
    """One path the archive creates. ``kind`` is ``None`` for a directory that no member names
    but deeper members imply; ``target`` holds a symlink's target, split on ``/``."""

    __slots__ = ("children", "kind", "target")

    def __init__(self, kind: MemberKind | None, target: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.target = target
        self.children: dict[str, _Node] = {}


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
    ``max_members`` caps both the members read and the paths they create.
    """

    def __init__(self, limit: int, *, max_members: int = MAX_MEMBERS) -> None:
        self.limit = limit
        self.max_members = max_members
        self.total = 0
        self.files = 0
        self.members = 0
        self.paths = 0
        self._root = _Node("dir")
        self._links: list[tuple[str, list[str], str]] = []
        self._steps = 0

    def add(
        self, raw_name: str, kind: str, size: int, linkname: str, mode: int
    ) -> MemberInfo | None:
        """Judge the next member. Returns its normalised form, or ``None`` for an entry naming
        the root directory itself (``./``), which has nothing to extract."""
        self.members += 1
        if self.members > self.max_members:
            raise self._too_many(raw_name)
        problem = text_problem(raw_name)
        if problem is not None:
            raise InvalidContext(f"context archive member {shown(raw_name)} {problem}")
        if kind not in _ALLOWED:
            raise InvalidContext(
                f"context archive member {shown(raw_name)} is a {kind}; a context may hold only "
                "regular files, directories, and links that stay inside it"
            )
        member_kind: MemberKind = kind
        parts = split_name(raw_name)
        if not parts:
            if member_kind == "dir":
                return None
            raise InvalidContext(
                f"context archive member {shown(raw_name)} names the root itself but is a "
                f"{kind}, not a directory"
            )
        problem = parts_problem(parts)
        if problem is not None:
            raise InvalidContext(f"context archive member {shown(raw_name)} {problem}")
        parent, held = self._place(raw_name, parts, member_kind)
        stored_link = ""
        if member_kind == "symlink":
            stored_link = self._check_symlink(raw_name, parts, linkname)
        elif member_kind == "hardlink":
            stored_link = self._check_hardlink(raw_name, linkname)
        if member_kind == "file":
            self._count(raw_name, size)
        if member_kind != "dir":
            self.files += 1
        if held is not None:
            held.kind = "dir"  # only a directory may take the place of an implied one
        else:
            self._new_paths(raw_name, 1)
            target = tuple(stored_link.split("/")) if member_kind == "symlink" else ()
            parent.children[parts[-1]] = _Node(member_kind, target)
        if member_kind == "symlink":
            self._links.append((raw_name, parts[:-1], stored_link))
        return MemberInfo(
            name="/".join(parts),
            kind=member_kind,
            size=size if member_kind == "file" else 0,
            mode=normalize_mode(mode, member_kind),
            linkname=stored_link,
        )

    def finish(self) -> None:
        """Re-resolve every symlink against the complete archive (see the module docstring)."""
        for raw_name, parent, linkname in self._links:
            self._resolve_link(raw_name, parent, linkname)

    # -- the rules -------------------------------------------------------------------------

    def _too_many(self, raw_name: str) -> InvalidContext:
        return InvalidContext(
            f"context archive holds more than {self.max_members:,} files, directories and links "
            f"(the limit on a context, counting the directories their paths imply); refused at "
            f"member {shown(raw_name)}; leave data, environments and build output out of the "
            "context (.assayignore)"
        )

    def _new_paths(self, raw_name: str, count: int) -> None:
        self.paths += count
        if self.paths > self.max_members:
            raise self._too_many(raw_name)

    def _count(self, raw_name: str, size: int) -> None:
        if size < 0:
            raise InvalidContext(
                f"context archive member {shown(raw_name)} declares a negative size"
            )
        if self.total + size > self.limit:
            raise TooLarge(
                f"context archive unpacks to more than the {format_limit(self.limit)} limit: "
                f"member {shown(raw_name)} ({format_size(size)}) brings the total to "
                f"{format_size(self.total + size)}; leave big files out of the context "
                "(.assayignore) and load data from outside it"
            )
        self.total += size

    def _place(
        self, raw_name: str, parts: list[str], kind: MemberKind
    ) -> tuple[_Node, _Node | None]:
        """The node of the member's directory (directories it implies are created) and the node
        already at its path, if any."""
        # Writing through a symlink is refused outright: no packer needs it, and it keeps every
        # member name a physical path, which is what link resolution looks names up by.
        node = self._root
        for depth, part in enumerate(parts[:-1]):
            child = node.children.get(part)
            if child is None:
                missing = parts[depth:-1]
                self._new_paths(raw_name, len(missing))
                for name in missing:
                    child = node.children[name] = _Node(None)
                    node = child
                return node, None
            if child.kind not in (None, "dir"):
                raise InvalidContext(
                    f"context archive member {shown(raw_name)} lies under "
                    f"{shown('/'.join(parts[: depth + 1]))}, which is a {child.kind} earlier in "
                    "the archive, not a directory"
                )
            node = child
        held = node.children.get(parts[-1])
        if held is None:
            return node, None
        if held.kind is None:
            if kind != "dir":
                raise InvalidContext(
                    f"context archive member {shown(raw_name)} is a {kind}, but earlier members "
                    "already used it as a directory"
                )
        elif not (held.kind == "dir" and kind == "dir"):
            raise InvalidContext(
                f"context archive member {shown(raw_name)} appears twice (as a {held.kind}, then "
                f"as a {kind}); each path may occur once"
            )
        return node, held

    def _check_symlink(self, raw_name: str, parts: list[str], linkname: str) -> str:
        if not linkname:
            raise InvalidContext(f"context archive symlink {shown(raw_name)} has an empty target")
        if linkname.startswith("/"):
            raise InvalidContext(
                f"context archive symlink {shown(raw_name)} points to the absolute path "
                f"{shown(linkname)}; links must be relative and stay inside the context root"
            )
        problem = text_problem(linkname) or parts_problem(linkname.split("/"))
        if problem is not None:
            raise InvalidContext(
                f"context archive symlink {shown(raw_name)} points to {shown(linkname)}, which "
                f"{problem}"
            )
        self._resolve_link(raw_name, parts[:-1], linkname)
        return linkname

    def _resolve_link(self, raw_name: str, parent: list[str], linkname: str) -> None:
        try:
            self._resolve([*parent, *linkname.split("/")])
        except _Escape:
            raise InvalidContext(
                f"context archive symlink {shown(raw_name)} points to {shown(linkname)}, which "
                "resolves outside the context root"
            ) from None
        except _Loop:
            raise InvalidContext(
                f"context archive symlink {shown(raw_name)} points to {shown(linkname)}, which "
                "is part of a symlink loop"
            ) from None
        except _Tangled:
            raise InvalidContext(
                f"context archive symlink {shown(raw_name)} points to {shown(linkname)}: the "
                f"archive's links take more than {_MAX_RESOLVE_STEPS:,} steps to resolve, far "
                "more than a code tree needs; store fewer or shorter chains of links"
            ) from None

    def _check_hardlink(self, raw_name: str, linkname: str) -> str:
        # Hard link targets are relative to the archive root, not to the link's directory.
        if linkname.startswith("/") or ".." in linkname.split("/"):
            raise InvalidContext(
                f"context archive hard link {shown(raw_name)} points to {shown(linkname)}, "
                "outside the context root"
            )
        problem = text_problem(linkname)
        parts = split_name(linkname, what="hard link target")
        problem = problem or parts_problem(parts)
        if problem is not None:
            raise InvalidContext(
                f"context archive hard link {shown(raw_name)} points to {shown(linkname)}, which "
                f"{problem}"
            )
        node: _Node | None = self._root
        for part in parts:
            node = node.children.get(part) if node is not None else None
        if not parts or node is None or node.kind not in ("file", "hardlink"):
            raise InvalidContext(
                f"context archive hard link {shown(raw_name)} points to {shown(linkname)}, which "
                "is not a regular file earlier in the archive"
            )
        return "/".join(parts)

    def _resolve(self, parts: list[str]) -> None:
        """Follow ``parts`` (relative to the root) through the links seen so far.

        Raises :class:`_Escape` as soon as a ``..`` would climb above the root, even if a later
        component would come back down: nothing may be reached by leaving the root.
        """
        # The nodes walked through, root first; None below a path that no member names.
        walked: list[_Node | None] = []
        pending = list(reversed(parts))
        hops = 0
        while pending:
            self._steps += 1
            if self._steps > _MAX_RESOLVE_STEPS:
                raise _Tangled
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not walked:
                    raise _Escape
                walked.pop()
                continue
            here = walked[-1] if walked else self._root
            node = here.children.get(part) if here is not None else None
            if node is not None and node.kind == "symlink":
                hops += 1
                if hops > _MAX_LINK_HOPS:
                    raise _Loop
                pending.extend(reversed(node.target))
                continue
            walked.append(node)
