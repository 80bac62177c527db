"""A real OpenSSH server on loopback for the ssh action's tests: Debian's openssh-server, run by the test as its user (a plugin of the root conftest).

`sshd` (a fixture) makes a host key and a user key in the test's tmp dir, starts
`/usr/sbin/sshd -D -f <tmp config> -p <free port>` on 127.0.0.1 with the user key authorized,
and points the ssh action's settings at it (key, known_hosts with the host key, the port).
A machine without sshd skips, saying how to install it; under CI it fails, like the browser
tests (tests/support/browser.py), so the check cannot quietly stop running.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SSHD = "/usr/sbin/sshd"
PRIVILEGE_SEPARATION_DIR = Path("/run/sshd")  # sshd run as root insists on it


def missing_sshd() -> str | None:
    """Why no sshd test can run here, or None."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing (apt-get install openssh-server)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (apt-get install openssh-client)"
    return None


def need_sshd() -> None:
    """Skip (fail under CI) when sshd cannot run here."""
    reason = missing_sshd()
    if reason is not None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI must run the ssh action tests: {reason}")
        pytest.skip(reason)


@dataclass(frozen=True)
class Server:
    """The running server: where it listens, who logs in, with which key."""

    port: int
    user: str
    key: Path
    known_hosts: Path

    @property
    def host(self) -> str:
        return f"{self.user}@127.0.0.1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@pytest.fixture
def sshd(tmp_path: Path, settings: Any) -> Iterator[Server]:
    """A private sshd on 127.0.0.1 for the current user; the ssh action's settings point at it."""
    need_sshd()
    home = tmp_path / "sshd"
    home.mkdir()
    _keygen(home / "host_key")
    _keygen(home / "user_key")
    (home / "authorized_keys").write_text((home / "user_key.pub").read_text())
    port = _free_port()
    (home / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nHostKey {home / 'host_key'}\nAuthorizedKeysFile {home / 'authorized_keys'}\n"
        f"PidFile {home / 'sshd.pid'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        "LogLevel ERROR\n"
    )
    known_hosts = home / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {(home / 'host_key.pub').read_text()}")
    if os.geteuid() == 0:
        PRIVILEGE_SEPARATION_DIR.mkdir(mode=0o755, exist_ok=True)
    log = (home / "sshd.log").open("wb")
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(home / "sshd_config"), "-p", str(port)],
                               stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(home / 'sshd.log').read_text()}") from None
                time.sleep(0.1)
        server = Server(port, getpass.getuser(), home / "user_key", known_hosts)
        settings.WORKFLOW_SSH_KEY_FILE = str(server.key)
        settings.WORKFLOW_SSH_STRICT_HOST_KEY_CHECKING = "yes"
        settings.WORKFLOW_SSH_OPTIONS = [f"Port={port}", f"UserKnownHostsFile={known_hosts}", "ConnectTimeout=10"]
        yield server
    finally:
        process.kill()
        process.wait()
        log.close()
