"""`manage.py job -D name=value`: job properties over the -config file's, expanded with them as Oozie does.

Oozie's CLI merges `-D` values into the job configuration (a Hadoop Configuration): they override
the file, `${name}` references between both are expanded recursively, a reference to no
property stays literal and is refused by name where it is used, a cycle is refused.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from bundles.models import BundleJob
from coordinators.models import CoordinatorJob
from tests.coordinators.api.factories import user
from tests.oozieapi.test_oozie_job_properties import CRON_EXTRA, examples, job_properties
from workflows.models import WorkflowJob

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    """The command's output (a CommandError propagates)."""
    out = io.StringIO()
    call_command("job", *args, stdout=out)
    return out.getvalue()


def test_d_overrides_the_file_and_feeds_its_references(tmp_path: Path) -> None:
    """The file's nameNode is wrong; `-D nameNode=...` wins, and ${nameNode} in the file's paths reads it."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    for app, extra in (("no-op", ()), ("cron", CRON_EXTRA), ("bundle", CRON_EXTRA)):
        config = tmp_path / f"{app}.properties"
        config.write_text(job_properties(Path("/nowhere"), app, *extra))
        out = run("-submit", "-config", str(config), "-D", f"nameNode=file://{hdfs}", "-user", "ann")
        assert out.startswith("job: "), out
    assert WorkflowJob.objects.get().app_path == f"file://{hdfs}/user/ann/examples/apps/no-op"
    coordinator = CoordinatorJob.objects.get()
    assert coordinator.configuration["nameNode"] == f"file://{hdfs}"
    assert coordinator.configuration["workflowAppUri"] == f"file://{hdfs}/user/ann/examples/apps/cron"
    assert BundleJob.objects.get().app_path == f"file://{hdfs}/user/ann/examples/apps/bundle"


def test_d_values_reference_the_file_and_each_other(tmp_path: Path) -> None:
    """`-D root=${nameNode}/user/${user.name}` and `-D oozie.wf.application.path=${root}/...`: recursive, both ways."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    config = tmp_path / "bare.properties"
    config.write_text(f"nameNode=file://{hdfs}\nexamplesRoot=examples\n")
    run("-submit", "-config", str(config), "-user", "ann", "-D", "root=${nameNode}/user/${user.name}",
        "-D", "oozie.wf.application.path=${root}/${examplesRoot}/apps/no-op")
    workflow = WorkflowJob.objects.get()
    assert workflow.app_path == f"file://{hdfs}/user/ann/examples/apps/no-op"
    assert workflow.configuration["root"] == f"file://{hdfs}/user/ann"


def test_the_dry_runs_use_the_expanded_values(tmp_path: Path) -> None:
    """Coordinator, bundle and workflow dry-runs read the application the -D values name, and store nothing."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    for app, extra in (("cron", CRON_EXTRA), ("bundle", CRON_EXTRA), ("no-op", ())):
        config = tmp_path / f"{app}.properties"
        config.write_text(job_properties(Path("/nowhere"), app, *extra))
        out = run("-dryrun", "-config", str(config), "-D", f"nameNode=file://{hdfs}", "-D", "queueName=night",
                  "-user", "ann", "-format", "json")
        if app == "cron":
            actions = json.loads(out)["actions"]
            assert len(actions) == 6
            assert actions[0]["app_path"] == f"file://{hdfs}/user/ann/examples/apps/cron"
            assert actions[0]["configuration"]["queueName"] == "night"
        elif app == "no-op":
            assert json.loads(out)["app_path"] == f"file://{hdfs}/user/ann/examples/apps/no-op"
        else:
            assert f"{hdfs}/user/ann/examples/apps/cron" in out
    assert not (WorkflowJob.objects.exists() or CoordinatorJob.objects.exists() or BundleJob.objects.exists())


def test_an_unresolved_reference_is_refused_by_name(tmp_path: Path) -> None:
    """`${nameNod}` (a typo, defined nowhere) in an application path: one line naming it, nothing stored."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    config = tmp_path / "job.properties"
    config.write_text(f"nameNode=file://{hdfs}\n")
    for verb in ("-submit", "-dryrun"):
        with pytest.raises(CommandError, match=r"\$\{nameNod\} names no property .*-D nameNod="):
            run(verb, "-config", str(config), "-user", "ann", "-D", "oozie.wf.application.path=${nameNod}/apps/no-op")
    assert not WorkflowJob.objects.exists()


def test_a_cycle_and_malformed_values_are_refused(tmp_path: Path) -> None:
    """`-D a=${b} -D b=${a}` refers to itself; `-D novalue` and `-D =x` are not name=value; -D with -info is refused."""
    user("ann")
    hdfs = examples(tmp_path, "ann")
    config = tmp_path / "no-op.properties"
    config.write_text(job_properties(hdfs, "no-op"))
    with pytest.raises(CommandError, match="refers to itself"):
        run("-submit", "-config", str(config), "-user", "ann", "-D", "a=${b}", "-D", "b=${a}")
    for bad in ("novalue", "=x"):
        with pytest.raises(CommandError, match="write -D name=value"):
            run("-submit", "-config", str(config), "-user", "ann", "-D", bad)
    with pytest.raises(CommandError, match="-D goes with"):
        run("-info", "0000001-000000000000000-oozie-oozi-C", "-D", "a=b")
    assert not WorkflowJob.objects.exists()
