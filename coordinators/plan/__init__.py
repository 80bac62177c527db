"""From definition to action plans (pure): the coord: library, submission resolution, materialization."""

from __future__ import annotations

from coordinators.plan.library import REGISTRY, InstanceRef
from coordinators.plan.materialize import ActionPlan, iter_action_plans, plan_action
from coordinators.plan.resolve import ResolvedCoordinator, ResolvedDataset, resolve_coordinator

__all__ = [
    "REGISTRY",
    "ActionPlan",
    "InstanceRef",
    "ResolvedCoordinator",
    "ResolvedDataset",
    "iter_action_plans",
    "plan_action",
    "resolve_coordinator",
]
