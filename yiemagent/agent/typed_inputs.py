"""Typed answers on an ``Agent``: the agent's ``output_type`` settings and per-input ``output_type=``.

A part of ``Agent`` (``yiemagent.agent``). ``Agent(output_type=T, output_mode=...,
output_retries=..., output_validators=[...])`` sets the typed answer of every
input; ``ask``/``submit``/``stream(..., output_type=T)`` override the type for one
input, with the agent's mode, retries and validators. See ``yiemagent.output.typed_output``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..exceptions import FormatError
from ..loop.conversation import Input
from ..output.typed_output import OutputMode, OutputSpec, output_spec

__all__ = ["TypedInputs"]


class TypedInputs:
    """Typed-answer settings of an ``Agent`` and per-input ``output_type=`` (a part of ``Agent``).

    Args:
        wrap: makes an ``Input`` of an input (``Runs.wrap``).
        output_type, mode, retries, validators: ``Agent``'s ``output_type``, ``output_mode``,
            ``output_retries`` and ``output_validators`` (``yiemagent.output.typed_output``).

    Raises:
        ConfigError: a setting is not valid, or ``output_type`` has no JSON Schema.
    """

    def __init__(self, wrap: Callable[[Any], Input], output_type: Any, mode: OutputMode, retries: int,
                 validators: Iterable[Callable[[Any], object]]) -> None:
        self._wrap = wrap
        self._template = output_spec({"type": "object"}, mode=mode, retries=retries, validators=validators)
        self.spec: OutputSpec | None = None if output_type is None else self._template.with_type(output_type)
        """The spec of the agent's ``output_type`` (None: text answers), for ``LoopConfig.output``."""

    def typed(self, item: Any, output_type: Any) -> Any:
        """``item`` as an ``Input`` asking for ``output_type`` (unchanged when it is None).

        Raises:
            ConfigError: ``output_type`` has no JSON Schema.
        """
        if output_type is None:
            return item
        spec = self._template.with_type(output_type)
        try:
            entry = self._wrap(item)
        except FormatError:  # answered (or raised) where an untyped input would be
            return item
        entry.output = spec
        return entry
