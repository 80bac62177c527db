"""From definition to action plans (pure): the coord: library, submission resolution, materialization, start."""

from __future__ import annotations

from coordinators.plan.library import REGISTRY, InstanceRef, StorageQuery
from coordinators.plan.logic import Logic, LogicError, Outcome, describe_waiting
from coordinators.plan.materialize import ActionPlan, ActionPlanner, iter_action_plans, plan_action
from coordinators.plan.resolve import ResolvedCoordinator, ResolvedDataset, resolve_coordinator
from coordinators.plan.start import (
    StartResolution,
    deferred_inputs,
    logic_outcome,
    resolve_at_start,
    resolve_when_ready,
)

__all__ = [
    "REGISTRY",
    "ActionPlan",
    "ActionPlanner",
    "InstanceRef",
    "Logic",
    "LogicError",
    "Outcome",
    "ResolvedCoordinator",
    "ResolvedDataset",
    "StartResolution",
    "StorageQuery",
    "deferred_inputs",
    "describe_waiting",
    "iter_action_plans",
    "logic_outcome",
    "plan_action",
    "resolve_at_start",
    "resolve_coordinator",
    "resolve_when_ready",
]
