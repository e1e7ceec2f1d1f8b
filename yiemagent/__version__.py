"""The single version string of yiemagent (setup.cfg reads it)."""

__version__ = "0.1.0"
