"""A small MCP server for the demo, built on the official ``mcp`` SDK.

Tools: ``get_weather(city)`` (a fixed table of demo data, so the demo runs
offline) and ``get_time(city)`` (the real clock in that city's time zone; the
environment variable ``YIEMAGENT_EXAMPLE_NOW``, an ISO 8601 time with its
offset, fixes the clock for reproducible runs and tests).

Run it::

    python -m yiemagent.examples.weather_server --port 8765            # Streamable HTTP on /mcp
    python -m yiemagent.examples.weather_server --transport stdio
"""

from __future__ import annotations

import argparse
import datetime
import os
import zoneinfo
from typing import Literal

from mcp.server.mcpserver import MCPServer

City = Literal["Paris", "London", "Tokyo", "New York", "Lima", "Kyiv", "Sydney", "Cairo", "Berlin", "Toronto"]
"""The cities the demo knows: an ``enum`` in the schemas, so a model constrained by them names one exactly."""

WEATHER = {
    "Paris": "Sunny, 21 °C, light wind from the west",
    "London": "Cloudy, 15 °C, drizzle in the evening",
    "Tokyo": "Clear, 24 °C, humid",
    "New York": "Rain, 12 °C, strong wind",
    "Lima": "Overcast, 18 °C",
    "Kyiv": "Snow, -3 °C",
    "Sydney": "Sunny, 27 °C, sea breeze",
    "Cairo": "Hot and dry, 33 °C",
    "Berlin": "Fog, 8 °C",
    "Toronto": "Light snow, -1 °C",
}
ZONES = {
    "Paris": "Europe/Paris", "London": "Europe/London", "Tokyo": "Asia/Tokyo", "New York": "America/New_York",
    "Lima": "America/Lima", "Kyiv": "Europe/Kyiv", "Sydney": "Australia/Sydney", "Cairo": "Africa/Cairo",
    "Berlin": "Europe/Berlin", "Toronto": "America/Toronto",
}

server = MCPServer("yiemagent-demo-weather", version="1.0")


def _known(city: str) -> str | None:
    return next((name for name in WEATHER if name.lower() == city.strip().lower()), None)


@server.tool()
def get_weather(city: City) -> str:
    """Get the current weather for a city."""
    found = _known(city)
    if found is None:
        return f"No weather data for {city!r}. Known cities: {', '.join(WEATHER)}."
    return f"Weather in {found}: {WEATHER[found]} (demo data)."


@server.tool()
def get_time(city: City) -> str:
    """Get the current local time in a city."""
    found = _known(city)
    if found is None:
        return f"No time zone known for {city!r}. Known cities: {', '.join(ZONES)}."
    fixed = os.environ.get("YIEMAGENT_EXAMPLE_NOW")
    zone = zoneinfo.ZoneInfo(ZONES[found])
    now = datetime.datetime.fromisoformat(fixed).astimezone(zone) if fixed else datetime.datetime.now(zone)
    return f"Time in {found}: {now.strftime('%H:%M')} ({ZONES[found]}, {now.strftime('%Y-%m-%d')})."


def main(argv: list[str] | None = None) -> None:
    """Serve the demo tools over Streamable HTTP or stdio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--transport", choices=["streamable-http", "stdio"], default="streamable-http")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
