"""Bulk verbs on bundle jobs (operations.bulk): one selected bundle's verb, checked and carried out in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bundles.models import BundleJob
from kernel.permissions import check_modify
from xcommands.base import XCommand


def act(bundle_id: str, verb: str, user: Any) -> None:
    """Kill, suspend or resume one bundle for `user`, in the caller's transaction (under the bundle's key)."""
    from bundles.commands import BundleKillXCommand, BundleResumeXCommand, BundleSuspendXCommand  # noqa: PLC0415 - bulk_verbs loads with the app registry (BundlesConfig.ready) in every process; the bundle command stack (coordinator commands, planner, EL) is needed only when a bulk operation runs
    from bundles.commands.control import check_verb  # noqa: PLC0415 - bulk_verbs loads with the app registry (BundlesConfig.ready) in every process; the bundle command stack is needed only when a bulk operation runs

    bundle = BundleJob.objects.select_for_update().get(pk=bundle_id)
    check_modify(user, bundle)
    check_verb(bundle.status, verb, bundle.id)
    commands: dict[str, Callable[..., XCommand]] = {
        "kill": BundleKillXCommand, "suspend": BundleSuspendXCommand, "resume": BundleResumeXCommand,
    }
    commands[verb](bundle_id=bundle_id).run()
