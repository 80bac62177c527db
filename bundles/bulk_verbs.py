"""Bulk verbs on bundle jobs (operations.bulk): one selected bundle's verb, checked and carried out in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bundles.commands import BundleKillXCommand, BundleResumeXCommand, BundleSuspendXCommand
from bundles.commands.control import check_verb
from bundles.models import BundleJob
from kernel.permissions import check_modify
from xcommands.base import XCommand


def act(bundle_id: str, verb: str, user: Any) -> None:
    """Kill, suspend or resume one bundle for `user`, in the caller's transaction (under the bundle's key)."""
    bundle = BundleJob.objects.select_for_update().get(pk=bundle_id)
    check_modify(user, bundle)
    check_verb(bundle.status, verb, bundle.id)
    commands: dict[str, Callable[..., XCommand]] = {
        "kill": BundleKillXCommand, "suspend": BundleSuspendXCommand, "resume": BundleResumeXCommand,
    }
    commands[verb](bundle_id=bundle_id).run()
