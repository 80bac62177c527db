"""The OpenAPI schema at /api/schema/ is accurate enough for schemathesis: no request makes a 500.

A bounded property-based run: every operation of the native API (coordinators, bundles, batches,
dataset events, keyed jobs) gets generated valid and invalid requests from the schema, sent as an authenticated
user through the WSGI application; responses must not be server errors and must match the
documented status codes, content types and bodies.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from batches.models import Batch, BatchJob, BatchReport, Collection, Profile
from bundles.models import BundleAction, BundleJob
from coordinators.services import submit_coordinator
from project.wsgi import application
from tests.coordinators.api.factories import bulk_actions, coordinator_xml, token, user, window

FULLY_CHECKED = ("/api/v1/coordinator-", "/api/v1/bundle-", "/api/v1/batch", "/api/v1/collections")  # keyed jobs and dataset events do not document their 400/403 yet
#: Examples per operation and mode: 15 by default; CI's PostgreSQL pass takes fewer (SCHEMA_FUZZ_EXAMPLES), the
#: answers' conformance being checked in full on SQLite just before.
MAX_EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "15"))
#: A path segment as the schema documents every path parameter: its only negative holds a `/`, which no URL can carry.
SEGMENT = {"type": "string", "pattern": "^[^/]+$"}


def nothing_to_get_wrong(operation: Any) -> bool:
    """No query and no body, and path parameters that are any segment: no negative case exists.

    Hypothesis would search about 1.5 s per such operation before it says so (`Unsatisfiable`);
    the authentication header and cookie are the caller's, never generated.
    """
    return not len(operation.query) and not len(operation.body) and all(
        parameter.definition.get("schema") == SEGMENT for parameter in operation.path_parameters
    )


@pytest.fixture
def caller(db: None) -> User:
    """An authenticated submitter with one real job and one bundle of it (so some generated ids hit a row)."""
    account = user("fuzz")
    job = submit_coordinator(coordinator_xml(), window(), owner=account, start=False)
    bulk_actions(job.id, 20)
    bundle = BundleJob.objects.create(id="0000000-260101000000000-B", app_name="fuzz", definition="<bundle-app/>",
                                      owner=account, status="RUNNING")
    BundleAction.objects.create(id=f"{bundle.id}_c", bundle=bundle, coord_name="c", coord_job=job, status=job.status)
    stored_batch(account)
    return account


def stored_batch(owner: User) -> None:
    """A failed batch of collection `fuzz` with two jobs and a report, stored as rows (ids 1: generated ids hit them)."""
    collection = Collection.objects.create(name="fuzz")
    profile = Profile.objects.create(name="fuzz", collection=collection, task="examples.noop")
    batch = Batch.objects.create(profile=profile, collection=collection, owner=owner, submitter="fuzz", type="file",
                                 payload_url="memory://fuzz/a", status="failed")
    for number, status in ((1, "completed"), (2, "failed")):
        BatchJob.objects.create(batch=batch, number=number, status=status, object_key=f"batch-job:{number}",
                                payload_url="memory://fuzz/a", payload_type="file", working_dir="", local_ids=["a"])
    body = {"counts": {"jobs": 2, "completed": 1, "failed": 1, "deleted": 0, "unresolved": 1}}
    BatchReport.objects.create(batch=batch, number=1, kind="initial", body=body, text="report\n", csv="outcome,job\n")


@pytest.fixture
def test_connection_kept() -> Iterator[None]:
    """Requests through the WSGI app must not close the test's database connection (as Django's test client)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(caller: User, test_connection_kept: None) -> Any:
    """The schema as served at /api/schema/ (it needs authentication, like the rest of the API)."""
    return schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", application, headers={"Authorization": f"Token {token(caller)}"}
    )


def test_no_request_makes_a_server_error(api_schema: Any, caller: User) -> None:
    """Generated requests (valid and invalid) never get a 5xx; answers match the documented codes, types and schemas."""
    headers = {"Authorization": f"Token {token(caller)}"}
    conformance = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        # Every operation must never answer 5xx; the coordinator API (this suite's subject) must
        # also answer only documented codes, content types and bodies.
        checks = conformance if operation.path.startswith(FULLY_CHECKED) else [not_a_server_error]
        modes = [GenerationMode.POSITIVE] + ([] if nothing_to_get_wrong(operation) else [GenerationMode.NEGATIVE])
        for mode in modes:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate],
            )
            def check(case: Any) -> None:
                case.call_and_validate(headers=headers, checks=checks)  # noqa: B023 - run at once, in this iteration

            try:
                check()
            except Unsatisfiable:
                assert mode == GenerationMode.NEGATIVE, operation.label  # nothing to get wrong (no parameters)
            except Exception as exc:
                raise AssertionError(f"{operation.label} ({mode}): {exc}") from exc
