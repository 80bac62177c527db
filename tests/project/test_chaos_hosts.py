"""The multi-host drill: worker hosts in network namespaces, cut from PostgreSQL, Redis or both past the lease.

The links are real (veth pairs between namespaces the drill creates); a cut drops packets
without an answer, as a broken cable does. The short drill cuts host 1 from everything and
host 2 from Redis for less than the idle-in-transaction timeout, then host 1 from PostgreSQL
and host 2 from everything for longer; afterwards nothing may be lost, committed twice,
reordered, stuck or wrongly failed, every re-run must be explained by a cut, and every pool
process of both workers must take work again. Skipped, saying why, where namespaces cannot
be made (not root, no `ip`).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command

from tests.project.test_chaos import _skip_reason, assert_no_harm, run_drill
from tooling.chaos.hosts import Network, unavailable_reason

pytestmark = pytest.mark.integration

NO_NAMESPACES = unavailable_reason()


def _listener(address: str) -> tuple[socket.socket, int]:
    """A TCP server on `address` that accepts (and closes) every connection, from a thread."""
    server = socket.create_server((address, 0))
    server.settimeout(0.2)

    def accept() -> None:
        while server.fileno() != -1:
            try:
                conn, _ = server.accept()
                conn.close()
            except TimeoutError:
                continue
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


def _connects_from(network: Network, host: int, address: str, port: int) -> bool:
    """Whether a process inside the host's namespace can open a TCP connection to address:port within 2 s."""
    code = f"import socket; socket.create_connection(({address!r}, {port}), timeout=2).close()"
    done = subprocess.run(network.wrap(host, [sys.executable, "-c", code]),  # noqa: S603
                          capture_output=True, text=True, timeout=30, check=False)
    return done.returncode == 0


def _reconnects_from(network: Network, host: int, address: str, port: int, seconds: float = 10.0) -> bool:
    """Whether the host can connect again within `seconds` of a heal (a cut address's neighbour entry may need a retry)."""
    deadline = time.monotonic() + seconds
    while not _connects_from(network, host, address, port):
        if time.monotonic() >= deadline:
            return False
    return True


@pytest.fixture
def network() -> Iterator[Network]:
    made = Network.create(hosts=1)
    try:
        yield made
    finally:
        made.destroy()


def _left_behind(network: Network) -> list[str]:
    """Namespaces, links and routes of `network` still present."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout  # noqa: S607
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout  # noqa: S607
    routes = subprocess.run(["ip", "route", "show", network.subnet], capture_output=True, text=True,  # noqa: S607
                            check=True).stdout
    found = [network.namespace(h) for h in range(1, network.hosts + 1) if network.namespace(h) in names.split()]
    found += [line.split(":")[1].strip() for line in links.splitlines() if f" cx{network.tag}h" in line]
    return found + ([routes.strip()] if routes.strip() else [])


@pytest.mark.skipif(NO_NAMESPACES is not None, reason=str(NO_NAMESPACES))
def test_a_cut_drops_one_link_without_an_answer_and_healing_restores_it(network: Network) -> None:
    """Cutting PostgreSQL's link leaves Redis's working; connects time out (no refusal); heal restores it."""
    pg_server, pg_port = _listener(network.server_address(1, "postgres"))
    redis_server, redis_port = _listener(network.server_address(1, "redis"))
    try:
        assert _connects_from(network, 1, network.server_address(1, "postgres"), pg_port)
        assert not _connects_from(network, 1, "127.0.0.1", pg_port), "the host reached this host's loopback"
        network.cut(1, "postgres")
        assert not _connects_from(network, 1, network.server_address(1, "postgres"), pg_port)
        assert _connects_from(network, 1, network.server_address(1, "redis"), redis_port)
        network.heal(1, "postgres")
        network.cut(1, "host")
        assert not _connects_from(network, 1, network.server_address(1, "redis"), redis_port)
        network.heal(1, "host")
        assert _reconnects_from(network, 1, network.server_address(1, "postgres"), pg_port)
        assert _reconnects_from(network, 1, network.server_address(1, "redis"), redis_port)
    finally:
        pg_server.close()
        redis_server.close()


@pytest.mark.skipif(NO_NAMESPACES is not None, reason=str(NO_NAMESPACES))
def test_destroy_kills_what_runs_inside_and_leaves_nothing() -> None:
    network = Network.create(hosts=2)
    sleeper = subprocess.Popen(network.wrap(2, ["sleep", "300"]))  # noqa: S603
    try:
        assert len(_left_behind(network)) == 2 + 4 + 1  # namespaces, root link ends, the blackhole route
    finally:
        network.destroy()
    assert sleeper.wait(timeout=10) != 0
    assert _left_behind(network) == []
    network.destroy()  # twice is harmless


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
@pytest.mark.parametrize(("argv", "message"), [
    (["--hosts", "3"], "written for --hosts 2"),
    (["--hosts", "2", "--workers", "3"], "one worker per host"),
    (["--hosts", "2", "--lease", "5", "--idle-in-transaction", "5"], "no cut past the 5 s lease"),
])
def test_impossible_drills_are_refused_before_anything_is_made(argv: list[str], message: str) -> None:
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout  # noqa: S607
    with pytest.raises(CommandError, match=message):
        call_command("chaos", *argv)
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout  # noqa: S607
    assert after == before


@pytest.mark.skipif(NO_NAMESPACES is not None or _skip_reason() is not None,
                    reason=str(NO_NAMESPACES or _skip_reason()))
def test_cut_hosts_lose_nothing_and_every_rerun_is_explained_by_a_cut() -> None:
    done, report = run_drill("--hosts", "2", "--quick")
    assert [fault["fault"].split(":")[0] for fault in report["faults"]] == ["cut-host", "cut-redis", "cut-postgres",
                                                                          "cut-host"]
    assert {fault["fault"].split(":")[2] for fault in report["faults"]} == {"below", "above"}
    assert all(fault["in_flight"]["nodes_running"] > 0 for fault in report["faults"]), report["faults"]
    assert_no_harm(report)
    # A host cut past its lease loses its actions to the other host: each re-run names its cut.
    assert report["reruns"], "no cut past the lease caused a re-run"
    assert all(rerun["explained_by"] and rerun["explained_by"].startswith("cut-") for rerun in report["reruns"])
    assert report["reruns_unexplained"] == 0
    # Both workers took work with every process afterwards: no leaked slot, no stopped consumer.
    assert [(w["worker"], w["alive"], w["took_work"]) for w in report["worker_capacity"]] == [
        ("chaos-h1", True, 3), ("chaos-h2", True, 3)]
    assert report["workers_dead_or_degraded"] == []
    assert report["quiet"]["with_suspended_commands"] <= report["quiet"]["idle_commands"] + 2, report["quiet"]
    assert report["web"]["server_errors"] == 0 and report["web"]["recovered"], report["web"]
    assert report["ok"] and done.returncode == 0, done.stderr[-4000:]
    assert "worker hosts removed" in done.stderr
