"""`bench pages` at a tiny size: it renders every page it names, reports each figure, and deletes what it stored.

Not a timed test: the figures are for the benchmark's runs (docs/benchmarks.md), not for CI.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from coordinators.models import CoordinatorAction, CoordinatorJob
from tooling.benchmarks.pages import run_pages_bench
from workflows.models import WorkflowJob, WorkflowNode

PAGES = {
    "dashboard", "grid_jobs_first_page", "grid_jobs_last_page", "grid_big_job_newest", "grid_big_job_first_48h",
    "grid_big_job_whole", "gantt_big_job_newest", "gantt_big_job_whole", "grid_jobs_first_page_whole_range",
}


@pytest.mark.django_db(transaction=True)
def test_pages_bench_times_every_page_and_cleans_up() -> None:
    """60 jobs, the big one of 300 actions with workflow runs: each page answers 200 (else the bench raises), is timed
    with its queries and budget verdict, and nothing of the run is left behind."""
    lines: list[str] = []
    figures = run_pages_bench(60, 300, 6, 2, lines.append)
    assert PAGES <= set(figures)
    assert figures["jobs"] == 60 and figures["workflow_nodes"] == 4 * 299  # every launched action: start + 3 nodes
    for page in PAGES:
        assert figures[page]["median_ms"] > 0 and figures[page]["queries"] >= 3, page
        assert figures[page]["under_300_ms"] in {"yes", "NO"}
    assert figures["all_under_300_ms"] == ("yes" if figures["slowest_median_ms"] < 300 else "NO")
    assert not (CoordinatorJob.objects.exists() or CoordinatorAction.objects.exists() or WorkflowJob.objects.exists())
    assert not WorkflowNode.objects.exists() and not User.objects.filter(username__startswith="bench-pages-").exists()
    assert any("deleting" in line for line in lines)
