"""SLA tests run commands in process, like the runtime tests."""

from __future__ import annotations

from tests.coordinators.runtime.conftest import in_process_engine  # noqa: F401 - a fixture
