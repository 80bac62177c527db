"""The figures as Prometheus metric families (`scheduler_*`), and the /metrics view with its access check."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from monitoring.figures import Figures

# Upper bounds of the wait and run time buckets, in seconds (+Inf is added).
BUCKETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


ENTITY_HELP = {
    "coordinator_jobs": "Coordinator jobs by status.",
    "coordinator_actions": "Coordinator actions by status.",
    "bundle_jobs": "Bundle jobs by status.",
    "workflow_jobs": "Workflow jobs (runs launched by coordinator actions) by status.",
    "batches": "Batches by status.",
    "batch_jobs": "Batch jobs by status.",
}


def buckets(values: Iterable[float]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs over BUCKETS and +Inf."""
    ordered = sorted(values)
    result: list[tuple[str, float]] = []
    index = 0
    for bound in BUCKETS:
        while index < len(ordered) and ordered[index] <= bound:
            index += 1
        result.append((_bound(bound), float(index)))
    result.append(("+Inf", float(len(ordered))))
    return result


def _bound(value: float) -> str:
    return repr(float(value))


class SchedulerCollector:
    """A prometheus_client collector yielding the `scheduler_*` families of one Figures object."""

    def __init__(self, figures: Figures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        """The metric families, all gauges (histograms over a sliding window are gauge histograms)."""
        figures = self.figures
        queued = GaugeMetricFamily("scheduler_commands_queued", "Commands waiting to run, by command class.", labels=["command"])
        running = GaugeMetricFamily("scheduler_commands_running", "Commands running or rolling back under a lease, by command class.", labels=["command"])
        parked = GaugeMetricFamily("scheduler_commands_parked", "Commands parked after a double fault (an operator must act), by command class.", labels=["command"])
        oldest = GaugeMetricFamily(
            "scheduler_commands_oldest_queued_age_seconds",
            "Age of the oldest waiting command of each class (0 when none waits).", labels=["command"],
        )
        for name, load in figures.commands.items():
            queued.add_metric([name], load.queued)
            running.add_metric([name], load.running)
            parked.add_metric([name], load.parked)
            oldest.add_metric([name], figures.age(load.oldest_queued_at))
        yield from (queued, running, parked, oldest)

        window = figures.window_seconds
        wait = GaugeHistogramMetricFamily(
            "scheduler_command_wait_seconds",
            f"Time from enqueue to first start of the commands finished in the last {window}s "
            f"(among the {figures.sample_size} last enqueued).",
            labels=["command"],
        )
        run = GaugeHistogramMetricFamily(
            "scheduler_command_run_seconds",
            f"Time from first start to end (retries included) of the commands finished in the last {window}s "
            f"(among the {figures.sample_size} last enqueued).",
            labels=["command"],
        )
        done = GaugeMetricFamily(
            "scheduler_commands_finished_in_window",
            f"Commands finished in the last {window}s (among the {figures.sample_size} last enqueued), by class and status.",
            labels=["command", "status"],
        )
        for name, commands in sorted(figures.finished_by_class().items()):
            waits = [command.wait_seconds for command in commands]
            runs = [command.run_seconds for command in commands]
            wait.add_metric([name], buckets(waits), sum(waits))
            run.add_metric([name], buckets(runs), sum(runs))
            by_status: dict[str, int] = defaultdict(int)
            for command in commands:
                by_status[command.status] += 1
            for status, count in sorted(by_status.items()):
                done.add_metric([name, status], count)
        yield from (wait, run, done)
        yield GaugeMetricFamily("scheduler_metrics_window_seconds", "The window of the command time histograms.", value=window)

        for entity, counts in figures.statuses.items():
            family = GaugeMetricFamily(f"scheduler_{entity}", ENTITY_HELP[entity], labels=["status"])
            for status, count in counts.items():
                family.add_metric([status], count)
            yield family

        due = GaugeMetricFamily(
            "scheduler_coordinator_actions_due",
            "Actions whose nominal time has passed that have not started (WAITING for inputs or READY).",
            labels=["status"],
        )
        for status, count in figures.due_actions.items():
            due.add_metric([status], count)
        yield due
        yield GaugeMetricFamily(
            "scheduler_coordinator_actions_due_oldest_age_seconds",
            "Seconds since the nominal time of the oldest due action not yet started (0 when none).",
            value=figures.age(figures.oldest_due_at),
        )

        workers = GaugeMetricFamily(
            "scheduler_worker_last_seen_seconds",
            "Unix time a worker process (host:pid) was last heard of: its lease heartbeats, or the end of its last recent command.",
            labels=["worker"],
        )
        for worker, moment in figures.workers.items():
            workers.add_metric([worker], moment.timestamp())
        yield workers


def prometheus_text(figures: Figures, accept: str = "") -> tuple[bytes, str]:
    """The exposition of the figures in the format the Accept header asks for, and its content type."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulerCollector(figures))
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
