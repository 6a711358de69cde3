"""An operator's typed parameters from its job's option declarations (``core.jobs.options``): its signature,
template fields and docstring lines, so that the operators restate none of them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING

from airflow_zorder.core.jobs.option_spec import OperatorParam, Option, operator_params

__all__ = ["declared_init", "declared_params", "params_doc", "templated"]


def declared_params(options_class: type, operator_only: Mapping[str, Option]) -> list[OperatorParam]:
    """An operator's typed parameters: its job's declared options (``core.jobs.options``) and its own ones."""
    return operator_params(options_class, operator_only)


def templated(declared: Sequence[OperatorParam]) -> tuple[str, ...]:
    """The declared parameters that are template fields (``columns`` is the base class's)."""
    return tuple(p.name for p in declared if p.spec.templated and p.name != "columns")


def params_doc(declared: Sequence[OperatorParam]) -> str:
    """The ``:param:`` lines of an operator's docstring for its declared parameters."""
    lines = ["", "    Its declared parameters (``core.jobs.options``):", ""]
    for p in declared:
        flag = f" (``{p.spec.flag}``)" if p.spec.flag else ""
        text = p.spec.help.replace("`", "``") + flag + ("; templated" if p.spec.templated else "")
        lines.append(f"    :param {p.name}: {text}.")
    return "\n".join(lines) + "\n"


def declared_init(declared: Sequence[OperatorParam]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give an operator's ``__init__(self, **kwargs)`` the declared parameters as its signature: Airflow applies
    ``default_args``, refuses a missing required one and checks ``partial()`` by it; ``help()`` shows it."""

    def wrap(init: Callable[..., None]) -> Callable[..., None]:
        sig = inspect.signature(init)
        own = [q for q in sig.parameters.values() if q.kind is not q.VAR_KEYWORD]
        rest = [q for q in sig.parameters.values() if q.kind is q.VAR_KEYWORD]
        empty = inspect.Parameter.empty
        added = [
            inspect.Parameter(
                p.name, inspect.Parameter.KEYWORD_ONLY, default=empty if p.default is MISSING else p.default
            )
            for p in declared
        ]
        init.__signature__ = sig.replace(parameters=[*own, *added, *rest])  # type: ignore[attr-defined]
        return init

    return wrap
