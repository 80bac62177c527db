"""Worker "hosts" of the multi-host chaos drill: network namespaces joined to this one by veth links.

Host h (1, 2, ...) is a network namespace with two point-to-point links to the root namespace,
one for its PostgreSQL traffic and one for its Redis traffic, so either can be cut alone:

    root 10.N.h.1/30  <->  10.N.h.2/30  host h   (PostgreSQL)
    root 10.N.h.5/30  <->  10.N.h.6/30  host h   (Redis)

PostgreSQL and Redis listen on loopback and on the root ends. A cut sets the root end of a link
down: the host's packets are dropped without an answer (its connections hang and new ones time
out, as across a broken cable), and a blackhole route for the run's 10.N.0.0/16 keeps replies
from leaving by the default route meanwhile. Healing sets the link up again. Nothing else is
touched: no firewall rules, no address outside loopback and 10.N.0.0/16. `destroy` removes the
namespaces (and with them the links) and kills whatever still runs inside, whatever state a run
left them in; `Network.create` cleans up after itself when a step fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass

from tooling.chaos.infra import ChaosSetupError

LINKS = ("postgres", "redis")
CUTS = {"host": LINKS, "postgres": ("postgres",), "redis": ("redis",)}


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)  # noqa: S603
    if check and done.returncode != 0:
        raise ChaosSetupError(f"`{' '.join(argv)}` failed: {done.stderr.strip() or done.returncode}")
    return done


def unavailable_reason() -> str | None:
    """Why worker hosts cannot be made here (None when they can): root and `ip` with netns support."""
    if os.geteuid() != 0:
        return "the multi-host drill needs root to create network namespaces (run it as root, e.g. in CI)"
    if shutil.which("ip") is None:
        return "the multi-host drill needs the `ip` command (apt-get install iproute2)"
    probe = f"chaosprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"network namespaces cannot be created here: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Network:
    """The namespaces and links of one run (tag N picks its names and its 10.N.0.0/16)."""

    tag: int
    hosts: int

    # --- names and addresses ---------------------------------------------------------------

    def namespace(self, host: int) -> str:
        return f"chaos{self.tag}h{host}"

    def _link(self, host: int, which: str, end: str) -> str:
        return f"cx{self.tag}h{host}{which[0]}{end}"  # at most 9 characters (IFNAMSIZ is 16)

    @property
    def subnet(self) -> str:
        return f"10.{self.tag}.0.0/16"

    def server_address(self, host: int, which: str) -> str:
        """The root end of a host's link: where PostgreSQL (or Redis) answers that host."""
        return f"10.{self.tag}.{host}.{1 if which == 'postgres' else 5}"

    def _host_address(self, host: int, which: str) -> str:
        return f"10.{self.tag}.{host}.{2 if which == 'postgres' else 6}"

    def server_addresses(self, which: str) -> list[str]:
        """Every host's root end of one kind of link (what the server listens on besides loopback)."""
        return [self.server_address(h, which) for h in range(1, self.hosts + 1)]

    def wrap(self, host: int, argv: list[str]) -> list[str]:
        """`argv` run inside a host's namespace."""
        return ["ip", "netns", "exec", self.namespace(host), *argv]

    # --- life cycle --------------------------------------------------------------------------

    @classmethod
    def create(cls, hosts: int) -> Network:
        """Make the namespaces and links of a new run (a tag no other run uses); all or nothing."""
        existing = set(_ip("netns", "list").stdout.split())
        for tag in range(100, 200):
            network = cls(tag=tag, hosts=hosts)
            taken = any(network.namespace(h) in existing for h in range(1, hosts + 1))
            if not taken and not _ip("route", "show", network.subnet, check=False).stdout.strip():
                break
        else:
            raise ChaosSetupError("no free 10.N.0.0/16 (N in 100..199) for the drill's links")
        try:
            network._build()
        except BaseException:
            network.destroy()
            raise
        return network

    def _build(self) -> None:
        _ip("route", "add", "blackhole", self.subnet, "metric", "4000")
        for host in range(1, self.hosts + 1):
            ns = self.namespace(host)
            _ip("netns", "add", ns)
            _ip("link", "set", "lo", "up", netns=ns)
            for which in LINKS:
                outside, inside = self._link(host, which, "a"), self._link(host, which, "b")
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
                _ip("link", "set", inside, "netns", ns)
                _ip("addr", "add", f"{self.server_address(host, which)}/30", "dev", outside)
                _ip("addr", "add", f"{self._host_address(host, which)}/30", "dev", inside, netns=ns)
                _ip("link", "set", outside, "up")
                _ip("link", "set", inside, "up", netns=ns)

    def destroy(self) -> None:
        """Kill what runs in the namespaces, delete them and the links; safe to call twice."""
        for host in range(1, self.hosts + 1):
            ns = self.namespace(host)
            pids = _ip("netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _ip("netns", "del", ns, check=False)
            for which in LINKS:
                _ip("link", "del", self._link(host, which, "a"), check=False)
        _ip("route", "del", "blackhole", self.subnet, "metric", "4000", check=False)

    # --- faults ------------------------------------------------------------------------------

    def cut(self, host: int, what: str) -> None:
        """Cut host `host` from PostgreSQL, from Redis, or from both (`what`: postgres, redis, host)."""
        for which in CUTS[what]:
            _ip("link", "set", self._link(host, which, "a"), "down")

    def heal(self, host: int, what: str) -> None:
        """Undo `cut` (the links come back up with their addresses and routes)."""
        for which in CUTS[what]:
            _ip("link", "set", self._link(host, which, "a"), "up")
