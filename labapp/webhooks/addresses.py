"""Where a webhook may deliver (SSRF): the URL's form when it is saved, and every address
its host resolves to at each delivery.

A URL is ``http`` or ``https`` with a host, no user name or password, at most
:data:`MAX_URL` ASCII characters and no spaces or control characters. An address is refused when
it is not a public one (loopback, private, link-local, shared, multicast, reserved,
unspecified; an IPv4 address mapped into IPv6, or carried by 6to4 or Teredo, is judged as
the IPv4 address), unless it lies in one of the networks the setting
``WEBHOOK_ALLOWED_NETWORKS`` lists. A host that resolves to any refused address is refused
whole (a name answering both a public and a private address could be sent to either).

A host is resolved on a thread of its own, waited for at most the delivery's timeout: the
system resolver may take tens of seconds when a name server does not answer, and the
webhooks lane must not wait that long for one receiver. A lookup that has not answered in
time is a failed attempt (retried as any); its thread ends when the resolver gives up.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_URL = 2000
SCHEMES = {"http": 80, "https": 443}
# The form of a URL :func:`parse_url` accepts, as the API document states it: a scheme of
# SCHEMES in any case, a host name or an address in brackets (no user name or password), a
# port from 1 to 65535 (leading zeros allowed, as urllib reads them; empty: the scheme's),
# then printable ASCII.
# parse_url checks the same and says what is wrong.
_PORT = r"0*(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
URL_PATTERN = (r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])"
               rf"(:({_PORT})?)?([/?#][!-~]*)?$")


class AddressRefused(Exception):
    """A URL or an address webhooks may not deliver to; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where one delivery goes: the URL's parts and the checked addresses of its host."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def parse_url(url: str) -> SplitResult:
    """The parts of a URL webhooks may use; AddressRefused naming what is wrong."""
    if len(url) > MAX_URL:
        raise AddressRefused(f"longer than {MAX_URL} characters")
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in url):
        raise AddressRefused("spaces and control characters are not allowed")
    if not url.isascii():
        raise AddressRefused("only ASCII characters: percent-encode the path, write an "
                             "international host name in its xn-- form")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise AddressRefused(f"not a URL: {error}") from None
    if parts.scheme not in SCHEMES:
        raise AddressRefused("only http:// and https:// URLs")
    if not parts.hostname:
        raise AddressRefused("the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("user names and passwords in the URL are not allowed "
                             "(the signature tells the receiver who calls)")
    if port == 0:
        raise AddressRefused("port 0")
    return parts


def _judged(address: Address) -> Address:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return address


def refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why ``address`` may not be delivered to (None: it may)."""
    judged = _judged(address)
    if any(judged in network or address in network for network in allowed):
        return None
    if judged.is_loopback:
        return f"{address} is a loopback address"
    if judged.is_link_local:
        return f"{address} is a link-local address"
    if judged.is_private:
        return f"{address} is a private address"
    if judged.is_multicast or judged.is_unspecified or judged.is_reserved \
            or not judged.is_global:
        return f"{address} is not a public address"
    return None


def literal_refusal(url: str, allowed: Sequence[Network]) -> str | None:
    """Why the URL cannot be saved, judging its form and, when its host is an address
    literal, that address (names are judged at each delivery); None when it can."""
    try:
        parts = parse_url(url)
    except AddressRefused as error:
        return str(error)
    try:
        address = ipaddress.ip_address(parts.hostname or "")
    except ValueError:
        return None
    return refusal(address, allowed)


def _resolved(host: str, port: int, timeout: float) -> list[tuple[Any, ...]]:
    """``getaddrinfo(host, port)`` on a daemon thread, waited for at most ``timeout``
    seconds (AddressRefused when it fails or is still looking then)."""
    answer: list[list[tuple[Any, ...]]] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def look_up() -> None:
        try:
            answer.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except BaseException as error:  # handed to the waiting thread below
            failure.append(error)
        finally:
            done.set()

    threading.Thread(target=look_up, name=f"resolve {host[:40]}", daemon=True).start()
    if not done.wait(timeout):
        raise AddressRefused(f"{host} did not resolve within {timeout:g} s")
    if failure:
        if isinstance(failure[0], (socket.gaierror, UnicodeError)):
            raise AddressRefused(f"{host} does not resolve: {failure[0]}") from None
        raise failure[0]
    return answer[0]


def target(url: str, allowed: Sequence[Network], timeout: float) -> Target:
    """Resolve the URL's host within ``timeout`` seconds and check every address it has
    (AddressRefused at the first refused one, when it resolves to none or not in time)."""
    parts = parse_url(url)
    host = parts.hostname or ""
    port = parts.port or SCHEMES[parts.scheme]
    found = _resolved(host, port, timeout)
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        why = refusal(address, allowed)
        if why is not None:
            raise AddressRefused(f"{host} resolves to {why}")
        if str(address) not in addresses:
            addresses.append(str(address))
    if not addresses:
        raise AddressRefused(f"{host} resolves to no address")
    path = parts.path or "/"
    return Target(parts.scheme, host, port, path + (f"?{parts.query}" if parts.query else ""),
                  tuple(addresses))
