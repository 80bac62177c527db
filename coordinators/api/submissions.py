"""What both API faces check before a submission reaches the domain actions: who submits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel.permissions import JobPermissionDenied, is_admin

USER_NAME = "user.name"


def submitter_properties(properties: Mapping[str, str], caller: Any) -> dict[str, str]:
    """The properties with `user.name` checked against the authenticated caller (seed 001, section 9).

    A `user.name` naming someone else is refused unless the caller is an admin; a missing one is
    filled in with the caller's name. The job's owner is the caller either way (never `user.name`).
    """
    result = dict(properties)
    name = caller.get_username()
    claimed = result.get(USER_NAME)
    if claimed is None or claimed == "":
        result[USER_NAME] = name
    elif claimed != name and not is_admin(caller):
        raise JobPermissionDenied(f"user.name {claimed!r} does not match the authenticated user {name!r}")
    return result
