"""The `oozie` command against this service's live server: `run_oozie` calls its entry point as the script does."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from oozieclient.cli import main
from tests.oozieclient.ran import Ran, RunOozie


@pytest.fixture
def run_oozie(live_server: Any, in_process_engine: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunOozie]:
    """`run_oozie("job", "-info", id, env={...})`: main() with this server as OOZIE_URL and ann's basic auth by default.

    The login name (what `user.name` defaults to for token and simple authentication) is `joe`,
    whoever runs the tests.
    """
    monkeypatch.setenv("LOGNAME", "joe")
    base = {"OOZIE_URL": f"{live_server.url}/oozie", "OOZIE_USER": "ann", "OOZIE_PASSWORD": "ann-password-123"}

    def run(*argv: str, env: dict[str, str] | None = None, replace_env: bool = False) -> Ran:
        out, err = io.StringIO(), io.StringIO()
        environ = dict(env or {}) if replace_env else {**base, **(env or {})}
        code = main(list(argv), environ=environ, stdout=out, stderr=err)
        return Ran(code, out.getvalue(), err.getvalue())

    yield run
