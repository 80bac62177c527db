"""What a `batch:` action's configuration asks `submit_batch` for, and how a batch names the run that opened it (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from coordinators.batch_launch import (
    BatchRefused,
    external_id_of,
    parse_external_id,
    profile_of,
    submission,
)
from workflows.launch import UnknownApplication


@pytest.mark.parametrize(
    ("configuration", "expected"),
    [
        pytest.param({"payload_url": "file:///d/1200/batch.checkm"},
                     {"payload_url": "file:///d/1200/batch.checkm", "type": "manifest-of-manifests"}, id="defaults"),
        pytest.param({"payload_url": " memory://x ", "batch.type": "container", "batch.priority": " 7 ", "batch.mode": "update",
                      "batch.submitter": "dep", "batch.what": "w", "batch.who": "a", "batch.when": "2024", "batch.where": "ark:/1",
                      "input": "ignored: the coordinator's own"},
                     {"payload_url": "memory://x", "type": "container", "priority": 7, "submission_mode": "update",
                      "submitter": "dep", "erc_what": "w", "erc_who": "a", "erc_when": "2024", "erc_where": "ark:/1"},
                     id="every-property"),
        pytest.param({"payload_url": "file:///d/a,b.checkm"}, {"payload_url": "file:///d/a,b.checkm", "type": "manifest-of-manifests"},
                     id="a-comma-in-one-url"),
        pytest.param({"payload_url": "file:///d", "batch.priority": ""}, {"payload_url": "file:///d", "type": "manifest-of-manifests"},
                     id="empty-means-default"),
    ],
)
def test_properties_become_submission_arguments(configuration: dict[str, Any], expected: dict[str, Any]) -> None:
    """`payload_url` and the `batch.*` properties map onto submit_batch; blanks keep its defaults."""
    assert submission(configuration) == expected


@pytest.mark.parametrize(
    ("configuration", "reason"),
    [
        pytest.param({}, "no payload_url property", id="no-payload"),
        pytest.param({"payload_url": "file:///d/1200,file:///d/1201/batch.checkm"}, "names 2 URLs", id="several-instances"),
        pytest.param({"payload_url": "file:///d", "batch.priority": "high"}, "'high' is not a number", id="priority-text"),
        pytest.param({"payload_url": "file:///d", "batch.profile": "x"}, "unknown property 'batch.profile'", id="unknown-property"),
    ],
)
def test_bad_configurations_are_refused_with_the_reason(configuration: dict[str, Any], reason: str) -> None:
    """What cannot open a batch is refused naming the property."""
    with pytest.raises(BatchRefused, match=reason):
        submission(configuration)


def test_a_batch_names_the_run_that_opened_it() -> None:
    """`<action id>#<run>` round-trips; other external ids (an API submitter's) name no run."""
    action = "0000003-260101000000000-oozie-C@12"
    assert parse_external_id(external_id_of(action, 2)) == (action, 2)
    for other in ("", "my-batch-7", "no-at#1", f"{action}#x", f"{action}"):
        assert parse_external_id(other) is None, other


@pytest.mark.parametrize(("app_path", "profile"), [("batch:demo", "demo"), ("batch: demo ", "demo")])
def test_the_profile_follows_the_scheme(app_path: str, profile: str) -> None:
    """`batch:<profile>`."""
    assert profile_of(app_path) == profile


@pytest.mark.parametrize("app_path", ["batch:", "batch:  ", "task:examples.noop"])
def test_an_app_path_without_a_profile_is_unknown(app_path: str) -> None:
    """Nothing to open a batch with."""
    with pytest.raises(UnknownApplication):
        profile_of(app_path)
