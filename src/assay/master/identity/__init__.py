"""Who is asking: users, passwords, tokens, sign-in, and who may change what
(:class:`Actor`).
"""

from __future__ import annotations

from assay.master.identity._users import Actor, UserService

__all__ = ["Actor", "UserService"]
