"""The ``yiemagent`` command (``main.py``), its interactive chat (``chat.py``) and the offline demo (``demo.py``)."""

from .main import build_parser, main, server_configs

__all__ = ["build_parser", "main", "server_configs"]
