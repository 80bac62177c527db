"""Operation tests: the test operation types (commands run in process: tests/support/engine.py)."""

from __future__ import annotations

import tests.operations.types  # noqa: F401 - registers the test operation types
