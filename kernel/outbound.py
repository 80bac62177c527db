"""Outbound HTTP requests to URLs users name: only to the hosts OUTBOUND_ALLOWED_HOSTS lists.

Workflow notification URLs and batch http(s) payloads make the server send requests on a
submitter's behalf. Without a rule that is server-side request forgery: the server's own
loopback services, the cloud metadata endpoint (169.254.169.254) and the internal network
are one URL away. The rule, checked at submission (`check_url`: no DNS) and again when the
request is made (`open_url`, `request`: with DNS):

1. The scheme is http or https; the URL has no userinfo (`user:pass@`), no control
   characters, spaces or backslashes, and its host is a host name or a canonical IP address
   (`127.1`, `0x7f000001`, `2130706433` and `0177.0.0.1` are refused: resolvers read them as
   addresses the allow-list would not recognise). IPv6 zone ids (`%eth0`) are refused.
2. The host matches an entry of OUTBOUND_ALLOWED_HOSTS (default empty: no request at all):
   an exact host name (`hooks.example.com`), a leading-wildcard domain (`*.example.com`:
   subdomains only, not `example.com` itself), or an IP address or network (`10.0.0.0/8`,
   `127.0.0.1`, `::1`); each optionally with `:port` (IPv6 in brackets: `[::1]:8080`),
   without a port any port. Host name entries match host names, IP entries IP literals;
   IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is read as the IPv4 address it maps.
3. Guarded addresses (loopback, link-local including the cloud metadata endpoints,
   unspecified and `0.0.0.0/8`, multicast, reserved and broadcast, their IPv4-mapped forms)
   are refused unless an IP entry lying inside that same guarded range covers the address:
   `127.0.0.1` or `169.254.169.254/32` allow themselves, `0.0.0.0/0` allows neither.
4. When the request is made the host name is resolved and EVERY address it resolves to is
   checked by rule 3: a host name entry never lets a loopback or link-local answer through,
   so DNS rebinding gains nothing. The connection then goes to a checked address (pinned:
   nothing resolves the name again); the Host header, TLS SNI and certificate check use the
   name as written.
5. Redirects are not followed: a 3xx is the answer (`open_url` raises OutboundHTTPError).
   No proxy from the environment is used: a proxy would resolve the name itself.

Private addresses (10/8, 192.168/16, fc00::/7) are not guarded: a listed name may resolve to
them, as internal webhook receivers do. An entry that cannot be read raises
ImproperlyConfigured when a URL is checked.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

SETTING = "OUTBOUND_ALLOWED_HOSTS"
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_CHARS = 4096
USER_AGENT = "oozie-py-scheduler"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# What each guarded range is, as a refusal names it. These reach this machine, its link (the
# metadata service hands out cloud credentials) or many hosts, never one chosen remote host.
GUARDED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(network), kind) for network, kind in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("100.100.100.200/32", "cloud metadata"),  # Alibaba's metadata service (outside 169.254/16)
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # 255.255.255.255 (broadcast) too
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("fd00:ec2::254/128", "cloud metadata"),  # AWS's IPv6 metadata endpoint (a unique local address)
        ("ff00::/8", "multicast"),
    )
)

_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
# Characters a request target may hold as they are; anything else (non-ASCII) is %-escaped.
_TARGET_SAFE = "!$&'()*+,/:;=?@[]~%"


class OutboundRefused(ValueError):  # noqa: N818 - reads as the reason: "OutboundRefused: ..."
    """A URL the server may not send a request to (scheme, userinfo, or a host OUTBOUND_ALLOWED_HOSTS does not allow)."""


class OutboundHTTPError(OSError):
    """An answer outside 2xx (a 3xx included: redirects are not followed); `status` is its code."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Entry:
    """One OUTBOUND_ALLOWED_HOSTS entry: a host name, a `*.domain` or an IP network, and its port (None: any)."""

    text: str
    name: str = ""
    suffix: str = ""  # ".example.com" for "*.example.com"
    network: IPNetwork | None = None
    port: int | None = None

    def allows_port(self, port: int) -> bool:
        """Whether the entry lets this port through (an entry without a port allows every port)."""
        return self.port is None or self.port == port

    def matches_name(self, host: str, port: int) -> bool:
        """Whether a (canonical) host name and port match this host name or wildcard entry."""
        if not self.allows_port(port):
            return False
        return host == self.name if self.name else bool(self.suffix) and host.endswith(self.suffix)

    def covers(self, address: IPAddress, port: int) -> bool:
        """Whether this IP entry covers the address and port."""
        return self.network is not None and self.allows_port(port) and address in self.network


@dataclass(frozen=True)
class Destination:
    """A checked URL: where to connect (the vetted addresses) and what to ask for."""

    scheme: str
    host: str  # the canonical host name or IP address: Host header, SNI, certificate check
    port: int
    target: str  # path and query, as sent on the request line
    addresses: tuple[IPAddress, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What `request` returns: the status, the headers and (at most `max_bytes` of) the body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


# ---- the allow-list ---------------------------------------------------------------------------


def plain(address: IPAddress) -> IPAddress:
    """The address itself, or the IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _plain_network(network: IPNetwork) -> IPNetwork:
    mapped = ipaddress.IPv6Network("::ffff:0:0/96")
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(mapped):
        inner = network.network_address.ipv4_mapped
        if inner is not None:  # always, for a subnet of ::ffff:0:0/96
            return ipaddress.IPv4Network(f"{inner}/{network.prefixlen - 96}")
    return network


def canonical_host_name(text: str) -> str | None:
    """The host name in ASCII lower case without a trailing dot; None if it is not one (or looks numeric)."""
    name = text.strip().lower()
    name = name[:-1] if name.endswith(".") else name
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        return None
    if _NUMERIC_LABEL.match(labels[-1]):
        return None  # `127.1`, `0x7f000001`, `2130706433`: a resolver reads these as addresses
    return name


def _ip(text: str) -> IPAddress | None:
    try:
        return plain(ipaddress.ip_address(text))
    except ValueError:
        return None


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ImproperlyConfigured(f"{SETTING} entry {entry!r}: {text!r} is not a port (1-65535)")
    return int(text)


def parse_entry(text: str) -> Entry:
    """Read one entry (`hooks.example.com`, `*.example.com:443`, `10.0.0.0/8`, `[::1]:8080` ...); ImproperlyConfigured if unreadable."""
    raw = text.strip()
    host, port = raw, None
    if raw.startswith("["):
        close = raw.find("]")
        rest = raw[close + 1:] if close > 0 else "?"
        if close < 0 or (rest and not rest.startswith(":")):
            raise ImproperlyConfigured(f"{SETTING} entry {raw!r}: write an IPv6 address with a port as [address]:port")
        host, port = raw[1:close], (_port(rest[1:], raw) if rest else None)
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
        port = _port(port_text, raw)
    # Several colons and no brackets: a bare IPv6 address or network, any port.
    if "%" not in host:
        try:
            return Entry(raw, network=_plain_network(ipaddress.ip_network(host, strict=False)), port=port)
        except ValueError:
            pass
    if host.startswith("*."):
        domain = canonical_host_name(host[2:])
        if domain is not None:
            return Entry(raw, suffix="." + domain, port=port)
    else:
        name = canonical_host_name(host)
        if name is not None:
            return Entry(raw, name=name, port=port)
    raise ImproperlyConfigured(
        f"{SETTING} entry {raw!r} is not a host name, a *.domain, or an IP address or network (each optionally :port)"
    )


@lru_cache(maxsize=16)
def _parsed(texts: tuple[str, ...]) -> tuple[Entry, ...]:
    return tuple(parse_entry(text) for text in texts if text.strip())


def allowed_entries() -> tuple[Entry, ...]:
    """The entries of OUTBOUND_ALLOWED_HOSTS, read (and cached) as the setting is now."""
    return _parsed(tuple(str(text) for text in getattr(settings, SETTING, None) or ()))


def guarded_kind(address: IPAddress) -> tuple[IPNetwork, str] | None:
    """The guarded range (and what it is) the address lies in; None for an ordinary address."""
    for network, kind in GUARDED:
        if network.version == address.version and address in network:
            return network, kind
    return None


def address_allowed(address: IPAddress, port: int, entries: Sequence[Entry]) -> bool:
    """Rule 3: an ordinary address passes; a guarded one only when an IP entry inside its guarded range covers it."""
    guarded = guarded_kind(address)
    if guarded is None:
        return True
    network = guarded[0]
    return any(
        entry.covers(address, port) and entry.network is not None and _inside(entry.network, network)
        for entry in entries
    )


def _inside(inner: IPNetwork, outer: IPNetwork) -> bool:
    """Whether `inner` lies wholly inside `outer` (False across IP versions)."""
    return inner.version == outer.version and inner.network_address in outer and inner.broadcast_address in outer


# ---- checking a URL -----------------------------------------------------------------------------


def _refuse(url_host: str, reason: str) -> OutboundRefused:
    return OutboundRefused(f"{url_host!r}: {reason}" if url_host else reason)


def _destination(url: str) -> Destination:
    """Rules 1 and 2 (no DNS): where the URL points, if OUTBOUND_ALLOWED_HOSTS allows it."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise OutboundRefused(f"not a URL of at most {MAX_URL_CHARS} characters")
    if _UNSAFE.search(url):
        raise OutboundRefused("a URL may not hold spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        explicit_port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise OutboundRefused(f"scheme {parts.scheme or '(none)'!r}: only http and https URLs are called")
    raw_host = parts.hostname or ""
    if "@" in parts.netloc:
        raise _refuse(raw_host, "a URL may not carry a user name or password (user:pass@)")
    if not raw_host:
        raise OutboundRefused("the URL names no host")
    if explicit_port == 0:
        raise _refuse(raw_host, "port 0")
    port = explicit_port if explicit_port is not None else DEFAULT_PORTS[scheme]
    shown = raw_host if explicit_port is None else f"{raw_host}:{explicit_port}"
    if "%" in raw_host:
        raise _refuse(shown, "IPv6 zone ids are not allowed")
    target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_TARGET_SAFE)
    entries = allowed_entries()
    address = _ip(raw_host)
    if address is not None:
        if not any(entry.covers(address, port) for entry in entries):
            raise _refuse(shown, f"not an allowed host for outbound requests ({SETTING})")
        if not address_allowed(address, port, entries):
            kind = (guarded_kind(address) or (None, "guarded"))[1]
            raise _refuse(shown, f"a {kind} address, allowed only by an IP entry of {SETTING} that lists it")
        return Destination(scheme, str(address), port, target, (address,))
    host = canonical_host_name(raw_host)
    if host is None:
        raise _refuse(shown, "not a host name or a canonical IP address")
    if not any(entry.matches_name(host, port) for entry in entries):
        raise _refuse(shown, f"not an allowed host for outbound requests ({SETTING})")
    return Destination(scheme, host, port, target)


def check_url(url: str) -> None:
    """Raise OutboundRefused unless the URL's scheme and host are allowed (rules 1-3, no DNS: for submissions)."""
    _destination(url)


def resolve(url: str) -> Destination:
    """The checked destination with every address its host resolves to checked (rule 4); OSError if it does not resolve."""
    destination = _destination(url)
    if destination.addresses:
        return destination  # an IP literal: checked by `_destination` already
    infos = socket.getaddrinfo(destination.host, destination.port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = _ip(str(sockaddr[0]).split("%", 1)[0])
        if address is not None and address not in addresses:
            addresses.append(address)
    if not addresses:
        raise OSError(f"{destination.host!r} resolves to no IP address")
    entries = allowed_entries()
    for address in addresses:
        if not address_allowed(address, destination.port, entries):
            kind = (guarded_kind(address) or (None, "guarded"))[1]
            raise OutboundRefused(
                f"{destination.host!r} resolves to {address}, a {kind} address: only an IP entry of {SETTING} "
                "listing that address allows it (a host name entry never does)"
            )
    return Destination(destination.scheme, destination.host, destination.port, destination.target, tuple(addresses))


# ---- connecting to the checked address ----------------------------------------------------------


def _connect(addresses: Sequence[IPAddress], port: int, timeout: float) -> socket.socket:
    """A TCP connection to the first of the checked addresses that answers (no name resolution here)."""
    error: OSError | None = None
    for address in addresses:
        sock = socket.socket(socket.AF_INET if address.version == 4 else socket.AF_INET6, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((str(address), port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass  # an optimisation some systems lack, as http.client treats it
        return sock
    raise error if error is not None else OSError("no address to connect to")


class PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to addresses checked beforehand; the host name is only the Host header."""

    def __init__(self, destination: Destination, timeout: float) -> None:
        super().__init__(destination.host, destination.port, timeout=timeout)
        self._addresses = destination.addresses
        self._timeout = timeout

    def connect(self) -> None:
        """Connect to a vetted address instead of resolving the host name again."""
        self.sock = _connect(self._addresses, int(self.port), self._timeout)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to addresses checked beforehand; SNI and the certificate check use the host name."""

    def __init__(self, destination: Destination, timeout: float, context: ssl.SSLContext | None = None) -> None:
        self._tls = context if context is not None else ssl.create_default_context()
        super().__init__(destination.host, destination.port, timeout=timeout, context=self._tls)
        self._addresses = destination.addresses
        self._timeout = timeout

    def connect(self) -> None:
        """Connect to a vetted address, then speak TLS for the host name (certificate checked against it)."""
        sock = _connect(self._addresses, int(self.port), self._timeout)
        try:
            self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def connection(destination: Destination, timeout: float) -> http.client.HTTPConnection:
    """The pinned connection for a resolved destination."""
    if destination.scheme == "https":
        return PinnedHTTPSConnection(destination, timeout)
    return PinnedHTTPConnection(destination, timeout)


@contextmanager
def _exchange(
    url: str, method: str, data: bytes | None, headers: Mapping[str, str] | None, timeout: float,
) -> Iterator[http.client.HTTPResponse]:
    destination = resolve(url)
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    conn = connection(destination, timeout)
    try:
        conn.request(method, destination.target, body=data, headers=sent)
        yield conn.getresponse()
    finally:
        conn.close()


@contextmanager
def open_url(
    url: str,
    *,
    method: str = "GET",
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> Iterator[http.client.HTTPResponse]:
    """The response to a checked, pinned request (read it as a stream); OutboundHTTPError outside 2xx.

    Raises OutboundRefused (not allowed: do not retry) and OSError (no answer, an error status).
    """
    with _exchange(url, method, data, headers, timeout) as response:
        if not 200 <= response.status < 300:
            moved = " (redirects are not followed)" if 300 <= response.status < 400 else ""
            raise OutboundHTTPError(f"HTTP {response.status} {response.reason}{moved}", status=response.status)
        yield response


def request(
    url: str,
    *,
    method: str = "GET",
    data: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    max_bytes: int = 64 * 1024,
) -> Reply:
    """Make a checked, pinned request; its status (any: a 3xx is not followed), headers and first `max_bytes` of body."""
    with _exchange(url, method, data, headers, timeout) as response:
        body = response.read(max_bytes)
        return Reply(response.status, dict(response.getheaders()), body)
