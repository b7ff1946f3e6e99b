"""Which host names and addresses stay on this machine.

Shared by the HTTP guards (a server bound to anything else needs a bearer token) and the S3
endpoint check (plain http is only accepted towards this machine), so both draw the line in the
same place. Standard library only: it is imported before anything heavy loads.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
