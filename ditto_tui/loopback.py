"""Whether a host is this machine only: the one rule for every door that binds, or trusts, loopback."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is this machine only (an IP literal of the loopback range, or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
