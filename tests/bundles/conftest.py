"""Bundle tests run commands in process (see tests/coordinators/runtime/conftest.py)."""

from __future__ import annotations

from tests.coordinators.runtime.conftest import in_process_engine, run_pending_commands  # noqa: F401 - fixture
