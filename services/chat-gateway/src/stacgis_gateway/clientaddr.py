"""The client's address as the trusted proxy saw it, for limits on requests that carry no identity.

Only a peer listed in `GATEWAY_TRUSTED_PROXIES` is believed about who is behind it: its
X-Forwarded-For is read from the right (the entry the nearest proxy appended) past every further
trusted proxy, so an address a client wrote into the header itself never counts. With no trusted
peer the address is the connection's own.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence

from starlette.requests import Request

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@functools.lru_cache(maxsize=8)
def trusted_networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def trusted(address: Address | None, networks: Sequence[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


def client_address(request: Request, networks: Sequence[Network], header: str = "X-Forwarded-For") -> str:
    peer = parse_address(request.client.host) if request.client else None
    if peer is None:
        return "unknown"
    if not trusted(peer, networks):
        return str(peer)
    hops = [part for value in request.headers.getlist(header) for part in value.split(",")]
    for hop in reversed(hops):
        address = parse_address(hop)
        if address is None:
            # Garbage the proxy passed on from the client: the proxy's own view is all we know.
            return str(peer)
        if not trusted(address, networks):
            return str(address)
    return str(peer)
