"""``mcp-server-time`` with its clock pinned, so a recording of it repeats on any day.

Why: the server reads the clock for ``get_current_time`` and for the date ``convert_time`` converts
on (which decides DST and the weekday). Like the fixed git dates of the git server, the clock is
pinned to ``AGENTWORLD_FROZEN_NOW`` (ISO 8601 with an offset; default :data:`FROZEN_NOW`); everything
else is the real server. Run as ``python -m agentworld.domains.mcp.frozen_time [server options]``.
"""

from __future__ import annotations

import os
from datetime import datetime, tzinfo

FROZEN_NOW = "2025-06-16T10:00:00+00:00"


class FrozenDatetime(datetime):
    """``datetime`` whose ``now()`` is the pinned moment (in the zone asked for)."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> FrozenDatetime:
        moment = datetime.fromisoformat(os.environ.get("AGENTWORLD_FROZEN_NOW", FROZEN_NOW))
        local = moment.astimezone(tz) if tz is not None else moment.astimezone().replace(tzinfo=None)
        return cls.fromtimestamp(local.timestamp(), tz) if tz is not None else cls(*local.timetuple()[:6])


def main() -> None:
    """Start the real time server with :class:`FrozenDatetime` in place of its ``datetime``."""
    import mcp_server_time
    import mcp_server_time.server as server

    server.datetime = FrozenDatetime
    mcp_server_time.main()


if __name__ == "__main__":
    main()
