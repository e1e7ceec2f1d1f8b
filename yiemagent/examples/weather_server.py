"""A small MCP server for the demo, built on the official ``mcp`` SDK.

Tools: ``get_weather(city)`` (a fixed table of demo data, so the demo runs
offline) and ``get_time(timezone)`` (the real clock).

Run it::

    python -m yiemagent.examples.weather_server --port 8765            # Streamable HTTP on /mcp
    python -m yiemagent.examples.weather_server --transport stdio
"""

from __future__ import annotations

import argparse
import datetime
import zoneinfo

from mcp.server.mcpserver import MCPServer

WEATHER = {
    "paris": "Sunny, 21 °C, light wind from the west",
    "london": "Cloudy, 15 °C, drizzle in the evening",
    "tokyo": "Clear, 24 °C, humid",
    "new york": "Rain, 12 °C, strong wind",
    "lima": "Overcast, 18 °C",
    "kyiv": "Snow, -3 °C",
}

server = MCPServer("yiemagent-demo-weather", version="1.0")


@server.tool()
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    found = WEATHER.get(city.strip().lower())
    if found is None:
        return f"No weather data for {city!r}. Known cities: {', '.join(sorted(WEATHER))}."
    return f"Weather in {city}: {found} (demo data)."


@server.tool()
def get_time(timezone: str = "UTC") -> str:
    """Get the current time in an IANA timezone such as Europe/Paris."""
    try:
        zone = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"Unknown timezone {timezone!r}; use an IANA name such as Europe/Paris."
    return datetime.datetime.now(zone).strftime("%Y-%m-%d %H:%M:%S %Z")


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
