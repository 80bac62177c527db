"""Bundle definitions: parsing (XSD-validated, hardened) and phase-1 resolution (pure: no Django)."""

from __future__ import annotations

from bundles.definitions.model import (
    BundleApp,
    BundleCoordinator,
    ResolvedBundle,
    ResolvedCoordinator,
)
from bundles.definitions.parser import DuplicateCoordinatorError, parse_bundle
from bundles.definitions.resolve import resolve_bundle, run_configuration

__all__ = [
    "BundleApp",
    "BundleCoordinator",
    "DuplicateCoordinatorError",
    "ResolvedBundle",
    "ResolvedCoordinator",
    "parse_bundle",
    "resolve_bundle",
    "run_configuration",
]
