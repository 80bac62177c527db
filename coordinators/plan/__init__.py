"""From definition to action plans (pure): the coord: library, submission resolution, materialization, start."""

from __future__ import annotations

from coordinators.plan.library import REGISTRY, InstanceRef, StorageQuery
from coordinators.plan.materialize import ActionPlan, iter_action_plans, plan_action
from coordinators.plan.resolve import ResolvedCoordinator, ResolvedDataset, resolve_coordinator
from coordinators.plan.start import StartResolution, deferred_inputs, resolve_at_start

__all__ = [
    "REGISTRY",
    "ActionPlan",
    "InstanceRef",
    "ResolvedCoordinator",
    "ResolvedDataset",
    "StartResolution",
    "StorageQuery",
    "deferred_inputs",
    "iter_action_plans",
    "plan_action",
    "resolve_at_start",
    "resolve_coordinator",
]
