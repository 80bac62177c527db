"""`manage.py bench materialize-plan`: plans of 100,000 minute-frequency actions with a 24-instance input."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from coordinators.plan import iter_action_plans, resolve_coordinator
from datasets.timeline import parse_datetime
from oozie.definitions import parse_coordinator

APP = """<coordinator-app name="bench" frequency="${coord:minutes(1)}" start="2020-01-01T00:00Z" end="2030-01-01T00:00Z"
    timezone="America/New_York" xmlns="uri:oozie:coordinator:0.4">
  <datasets>
    <dataset name="ticks" frequency="${coord:minutes(1)}" initial-instance="2019-01-01T00:00Z" timezone="UTC">
      <uri-template>${base}/ticks/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
    </dataset>
    <dataset name="out" frequency="${coord:minutes(1)}" initial-instance="2019-01-01T00:00Z" timezone="UTC">
      <uri-template>${base}/out/${YEAR}${MONTH}${DAY}/${HOUR}${MINUTE}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="window" dataset="ticks">
      <start-instance>${coord:current(-23)}</start-instance><end-instance>${coord:current(0)}</end-instance>
    </data-in>
  </input-events>
  <output-events><data-out name="result" dataset="out"><instance>${coord:current(0)}</instance></data-out></output-events>
  <action><workflow><app-path>task:examples.pipeline.aggregate</app-path><configuration>
    <property><name>input</name><value>${coord:dataIn('window')}</value></property>
    <property><name>output</name><value>${coord:dataOut('result')}</value></property>
    <property><name>day</name><value>${coord:formatTime(coord:nominalTime(), 'yyyy-MM-dd')}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""


def run_materialize_plan_bench(actions: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Compute the plans of `actions` actions; report actions per second."""
    app = parse_coordinator(APP, "bench.xml")
    resolved = resolve_coordinator(app, {"base": "s3://bucket"}, user="bench")
    now = parse_datetime("2026-01-01T00:00Z")
    log(f"planning {actions} actions (minute frequency, 24-instance input range)")
    started = time.perf_counter()
    uris = 0
    last = None
    for plan in iter_action_plans(resolved, now=now, max_actions=actions):
        uris += len(plan.data_in["window"])
        last = plan
    elapsed = time.perf_counter() - started
    if last is None or last.number != actions or uris != actions * 24:
        raise RuntimeError(f"benchmark produced {0 if last is None else last.number} actions and {uris} URIs")
    return {
        "actions": actions,
        "seconds": round(elapsed, 3),
        "actions_per_s": round(actions / elapsed, 1),
        "input_uris_per_s": round(uris / elapsed, 1),
    }
