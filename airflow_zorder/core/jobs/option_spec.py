"""How a job option is declared, and everything derived from its one declaration.

Each field of a job's options dataclass (``core.jobs.options``) carries an :class:`Option` in its metadata: its
command-line flag, kind, help, the run kinds it applies to, whether the operator takes it (under which name, with
which default) and whether it is templated.  From that come the job's command line (:meth:`JobOptions.to_args`),
its parser and checks (:meth:`JobOptions.from_args`, :func:`check_values`), the operators' parameters
(:func:`operator_params`) and the docs' parameter tables (``core.jobs.options_doc``).
Standard library and Airflow-free core only: imported at DAG parse time and shipped to the drivers.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.policy.file_sizing import parse_size

__all__ = [
    "ALL_RUNS",
    "KINDS",
    "RUN_KINDS",
    "JobOptions",
    "Option",
    "OperatorParam",
    "check_choice",
    "job_options",
    "operator_params",
    "option",
    "parse_name_args",
]

#: What a value is: ``text``, ``int``, ``float``, ``size`` (bytes, from ``512MB``), ``names`` (a list; the flag
#: repeats), ``switch`` (a bool, the flag alone), ``mode`` (incremental: ``--incremental``/``--full``/unset),
#: ``plan`` (the job: a plan file's location; the operator: the plan document).
KINDS = ("text", "int", "float", "size", "names", "switch", "mode", "plan")
#: The kinds of clustering run an option may apply to (:func:`airflow_zorder.core.jobs.options.check_cluster_modes`).
RUN_KINDS = ("full", "job plan", "given plan", "recover", "cleanup")
ALL_RUNS = frozenset(RUN_KINDS)
_SAME = object()  # the operator's default is the job's
_UNSET_TEXT = ("", "None", "null")  # a rendered template that says "not given"


@dataclass(frozen=True)
class Option:
    """One job option, declared once (in the metadata of its options dataclass field)."""

    flag: str | None  # the job's command-line flag; None: not on the command line
    kind: str  # one of KINDS
    help: str  # what it does: the flag's --help, the operator's docstring and the docs' table
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # checked wherever the value comes from
    maximum: float | None = None
    bound_note: str = ""  # said after a refused bound, e.g. "(1 = a perfect grid)"
    runs: frozenset[str] = ALL_RUNS  # the clustering runs it applies to; given in another, it is refused
    operator: str | None = None  # the operator's parameter name ("" : same as the field; None: not a parameter)
    operator_default: Any = _SAME  # the operator's default when not the job's (None: unset, the job's applies)
    templated: bool = False  # an operator template field
    doc_default: str = ""  # the docs' default column when the default alone does not say it
    required: bool = False  # the command line must give it


def option(default: Any = MISSING, *, default_factory: Any = MISSING, **spec: Any) -> Any:
    """A dataclass field declared as a job option (``spec``: :class:`Option`'s fields)."""
    meta = {"option": Option(**spec)}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def spec_of(f: Field) -> Option | None:
    """The :class:`Option` a dataclass field declares, if any."""
    return f.metadata.get("option")


def check_choice(what: str, value: Any, choices: Sequence[str]) -> None:
    """Refuse a value outside ``choices`` (None means unset) with a message naming the parameter."""
    if value is not None and value not in choices:
        raise InvalidInputError(f"{what}={value!r} is not one of {', '.join(choices)}")


def parse_name_args(values: Sequence[str] | None, what: str = "names") -> list[str] | None:
    """Names from a repeatable command-line flag: each value parsed by :func:`parse_names`, in order."""
    if values is None:
        return None
    return [n for v in values for n in parse_names(v, what) or []]


def _named(name: str, spec: Option) -> str:
    """How a message names an option: ``name (--flag)``."""
    return f"{name} ({spec.flag})" if spec.flag else name


def _number(x: float | None) -> str:
    """A bound as written: ``1``, ``2147483648``, ``0.5``."""
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)


def check_values(opts: Any) -> None:
    """Refuse a declared option's value outside its choices or bounds, naming the option and its flag."""
    for f in fields(opts):
        spec, value = spec_of(f), getattr(opts, f.name)
        if spec is None or value is None:
            continue
        if spec.choices:
            check_choice(f.name, value, spec.choices)
        if spec.minimum is None and spec.maximum is None:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        low_ok = spec.minimum is None or (number and value >= spec.minimum)
        high_ok = spec.maximum is None or (number and value <= spec.maximum)
        if not (number and low_ok and high_ok):
            if spec.maximum is None:
                bound = f"at least {_number(spec.minimum)}"
            else:
                bound = f"between {_number(spec.minimum)} and {_number(spec.maximum)}"
            note = f" {spec.bound_note}" if spec.bound_note else ""
            raise InvalidInputError(f"{_named(spec.operator or f.name, spec)} must be {bound}{note}, got {value!r}")


def _arg_help(spec: Option, default: Any) -> str:
    """The flag's --help: the declared help, without markdown, with the default."""
    text = re.sub(r"\[([^]]+)\]\([^)]+\)", r"\1", spec.help)  # a markdown link: its text
    text = text.replace("`", "").replace("%", "%%").replace("\\|", "|")
    if spec.doc_default:
        return f"{text} (default {spec.doc_default.replace('`', '')})"
    if default not in (MISSING, None, False, ""):
        return f"{text} (default {default})"
    return text


T = TypeVar("T", bound="JobOptions")


class JobOptions:
    """The command line of a job's options dataclass: every declared field with a flag, in declaration order."""

    PROG: ClassVar[str] = ""
    DESCRIPTION: ClassVar[str] = ""

    def to_args(self) -> list[str]:
        """The job's command line: every option whose value is not the default (``table`` always).

        Switches are the flag alone, ``incremental`` ``--incremental``/``--full``, lists of names a JSON list (a
        comma inside a name survives) except ``columns`` (``a,b``).
        """
        args: list[str] = []
        for f in fields(self):  # type: ignore[arg-type]
            spec, value = spec_of(f), getattr(self, f.name)
            if spec is None or spec.flag is None or value is None:
                continue
            if not spec.required and f.default is not MISSING and value == f.default:
                continue
            if spec.kind == "switch":
                args += [spec.flag] if value else []
            elif spec.kind == "mode":
                args += [spec.flag] if value else []  # False is the job's default (every file: --full)
            elif spec.kind == "names":
                if value:
                    args += [spec.flag, ",".join(value) if f.name == "columns" else json.dumps(value)]
            else:
                args += [spec.flag, str(value)]
        return args

    @classmethod
    def parser(cls) -> argparse.ArgumentParser:
        """The job's argument parser (``--help`` lists every flag), from the declarations."""
        p = argparse.ArgumentParser(prog=cls.PROG, description=cls.DESCRIPTION)
        for f in fields(cls):  # type: ignore[arg-type]
            spec = spec_of(f)
            if spec is None or spec.flag is None:
                continue
            default = f.default if f.default is not MISSING else None
            text = _arg_help(spec, default)
            if spec.kind == "switch":
                p.add_argument(spec.flag, dest=f.name, action="store_true", help=text)
            elif spec.kind == "mode":
                mode = p.add_mutually_exclusive_group()
                mode.add_argument(spec.flag, dest=f.name, action="store_const", const=True, default=None, help=text)
                mode.add_argument(
                    "--full",
                    dest=f.name,
                    action="store_const",
                    const=False,
                    help="rewrite every file of each unit (the default)",
                )
            elif spec.kind == "names":
                p.add_argument(spec.flag, dest=f.name, action="append", default=None, help=text)
            else:
                kind = {"int": int, "float": float}.get(spec.kind, str)
                extra: dict[str, Any] = {"choices": spec.choices} if spec.choices else {}
                if spec.required:
                    extra["required"] = True
                p.add_argument(spec.flag, dest=f.name, type=kind, default=None, help=text, **extra)
        return p

    @classmethod
    def from_args(cls: type[T], argv: Sequence[str] | None = None) -> T:
        """Parse the job's argv; a bad value exits 2 naming the flag, before any SparkSession starts."""
        p = cls.parser()
        a = vars(p.parse_args(argv))
        given: dict[str, Any] = {}
        try:
            for f in fields(cls):  # type: ignore[arg-type]
                spec, value = spec_of(f), a.get(f.name)
                if spec is None or spec.flag is None or value is None:
                    continue
                if spec.kind == "size":
                    try:
                        value = parse_size(value)
                    except ValueError as exc:
                        raise InvalidInputError(f"{spec.flag}: {exc}") from None
                elif spec.kind == "names":
                    value = parse_name_args(value, spec.flag)
                given[f.name] = value
            return cls(**given)
        except ValueError as exc:
            p.error(str(exc))
            raise  # p.error exits


def job_options(cls: type) -> list[tuple[str, Option, Any]]:
    """``(field name, declaration, the job's default)`` of every declared option of an options dataclass (the
    default is ``MISSING`` for a required one, or one made by a factory)."""
    return [(f.name, spec, f.default) for f in fields(cls) if (spec := spec_of(f)) is not None]


@dataclass(frozen=True)
class OperatorParam:
    """One operator parameter derived from a job option: its name, default and the field it fills."""

    name: str
    field: str
    spec: Option
    default: Any


def operator_params(cls: type, extra: Mapping[str, Option] | None = None) -> list[OperatorParam]:
    """The operator parameters a job's options declare (``extra``: operator-only ones, as declared there), in order."""
    out = []
    for name, spec, default in job_options(cls):
        if spec.operator is None:
            continue
        param = spec.operator or name
        out.append(
            OperatorParam(param, name, spec, default if spec.operator_default is _SAME else spec.operator_default)
        )
    for name, spec in (extra or {}).items():
        out.append(OperatorParam(name, "", spec, None if spec.operator_default is _SAME else spec.operator_default))
    return out


def is_unset_text(value: Any) -> bool:
    """None, or a rendered template that says "not given" (``""``, ``"None"``, ``"null"``)."""
    return value is None or (isinstance(value, str) and value.strip() in _UNSET_TEXT)
