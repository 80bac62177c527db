"""Bundles for interface tests: an application on disk (coordinators and bundle.xml), submitted and settled, or rows stored directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from bundles import services
from bundles.models import BundleAction, BundleJob
from coordinators.models import CoordinatorAction
from oozie.definitions import serialize_hadoop_configuration
from tests.bundles.factories import bundle_xml, window, write_coordinator
from tests.coordinators.api.factories import bulk_actions, bulk_jobs
from tests.support.bundles import settle

NAMES = ("daily", "hourly")


def bundle_app(root: Path, names: tuple[str, ...] = NAMES, **kwargs: Any) -> Path:
    """Coordinator applications under `root` and a bundle.xml naming them (bundle_xml's options); its path."""
    paths = [(name, write_coordinator(root, name)) for name in names]
    xml = root / "bundle.xml"
    xml.write_text(bundle_xml(paths, **kwargs))
    return xml


def running_bundle(owner: User, root: Path, *, acl: str = "", back: int = 3, ahead: int = 60, **kwargs: Any) -> BundleJob:
    """A bundle of two coordinators (daily, hourly), submitted by `owner` with `oozie.job.acl`, started and settled."""
    xml = bundle_app(root, **kwargs)
    properties = {**window(back, ahead), "oozie.job.acl": acl}
    bundle = services.submit_bundle(xml.read_text(), properties, owner=owner, app_path=str(xml))
    settle()
    return BundleJob.objects.get(pk=bundle.pk)


def finish(bundle: BundleJob, name: str = "daily", status: str = "SUCCEEDED") -> None:
    """Mark every action of one coordinator of the bundle finished (so it can be rerun)."""
    action = BundleAction.objects.get(bundle=bundle, coord_name=name)
    CoordinatorAction.objects.filter(job_id=action.coord_job_id).update(status=status)


def stored_bundle(owner: User, coordinators: int, actions: int) -> BundleJob:
    """A RUNNING bundle stored as rows (no commands): `coordinators` coordinator jobs with `actions` actions each."""
    bundle = BundleJob.objects.create(
        id="0000001-260101000000000-B", app_name="stored", definition="<bundle-app/>", owner=owner, status="RUNNING",
    )
    jobs = bulk_jobs(owner, coordinators)
    BundleAction.objects.bulk_create([
        BundleAction(id=f"{bundle.id}_c{n}", bundle=bundle, coord_name=f"c{n}", coord_job_id=job_id, status="RUNNING")
        for n, job_id in enumerate(jobs)
    ])
    for job_id in jobs:
        bulk_actions(job_id, actions, statuses=("SUCCEEDED", "WAITING"))
    return bundle


def configuration_xml(properties: dict[str, str]) -> bytes:
    """A Hadoop XML configuration, as Oozie clients POST it."""
    return serialize_hadoop_configuration(properties)
