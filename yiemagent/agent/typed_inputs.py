"""Typed answers on an ``Agent``: the agent's ``output_type`` settings and per-input ``output_type=``.

Mixed into ``Agent`` (``yiemagent.agent``). ``Agent(output_type=T, output_mode=...,
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
    """Typed-answer settings of an ``Agent`` (mixed into it)."""

    _output_template: OutputSpec
    _wrap: Callable[[Any], Input]

    def _init_output(self, output_type: Any, mode: OutputMode, retries: int,
                     validators: Iterable[Callable[[Any], object]]) -> OutputSpec | None:
        """Check the settings (``ConfigError``); return the spec of ``output_type`` (None: text answers)."""
        self._output_template = output_spec({"type": "object"}, mode=mode, retries=retries, validators=validators)
        return None if output_type is None else self._output_template.with_type(output_type)

    def _typed(self, item: Any, output_type: Any) -> Any:
        """``item`` as an ``Input`` asking for ``output_type`` (unchanged when it is None).

        Raises:
            ConfigError: ``output_type`` has no JSON Schema.
        """
        if output_type is None:
            return item
        spec = self._output_template.with_type(output_type)
        try:
            entry = self._wrap(item)
        except FormatError:  # answered (or raised) where an untyped input would be
            return item
        entry.output = spec
        return entry
