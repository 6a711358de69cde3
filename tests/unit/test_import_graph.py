"""No import circle in the package: every import (lazy ones inside functions included) points one way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    out = {}
    for base in ("airflow_zorder", "spark_jobs"):
        for path in (ROOT / base).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package
                    for _ in range(node.level - 1):
                        parent = parent.rpartition(".")[0]
                    base = f"{parent}.{base}" if base else parent
                targets = [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                found = resolve(t)
                if found and found != m:
                    edges[m].add(found)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle():
    mods = _modules()
    assert len(mods) > 100
    assert _cycles(_graph(mods)) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_core_imports_neither_airflow_code_nor_the_jobs():
    edges = _graph(_modules())
    core = [m for m in edges if m.startswith("airflow_zorder.core")]
    bad = {
        (m, t)
        for m in core
        for t in edges[m]
        if t.startswith("spark_jobs") or not t.startswith(("airflow_zorder.core", "airflow_zorder.version"))
    }
    assert not bad, sorted(bad)


def _package(module: str) -> str:
    """The package a module belongs to for the tie check: ``airflow_zorder.core.<pkg>``, ``airflow_zorder.<pkg>``
    (a top-level module is its own), ``spark_jobs.<pkg>``."""
    parts = module.split(".")
    depth = 3 if parts[:2] == ["airflow_zorder", "core"] else 2
    return ".".join(parts[:depth])


def _ties(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """Pairs of packages that import each other (lazy imports included), with one module edge each way."""
    between: dict[tuple[str, str], list[str]] = {}
    for m, targets in edges.items():
        for t in targets:
            a, b = _package(m), _package(t)
            if a != b:
                between.setdefault((a, b), []).append(f"{m} -> {t}")
    return {
        (a, b): sorted(between[(a, b)])[:1] + sorted(between[(b, a)])[:1]
        for (a, b) in between
        if a < b and (b, a) in between
    }


def test_every_dependency_between_packages_points_one_way():
    ties = _ties(_graph(_modules()))
    assert not ties, "packages that import each other (make one of them not):\n" + "\n".join(
        f"{a} <-> {b}: {', '.join(why)}" for (a, b), why in sorted(ties.items())
    )


def test_the_tie_finder_finds_one():
    edges = {
        "airflow_zorder.core.jobs.params": {"airflow_zorder.core.policy.plan"},
        "airflow_zorder.core.policy.plan": {"airflow_zorder.core.jobs.sizes"},
        "airflow_zorder.core.jobs.sizes": set(),
        "airflow_zorder.operators.x": {"airflow_zorder.core.jobs.params"},
    }
    assert list(_ties(edges)) == [("airflow_zorder.core.jobs", "airflow_zorder.core.policy")]


def test_operators_sensors_hooks_and_triggers_do_not_import_the_ui():
    edges = _graph(_modules())
    airflow_side = ("operators", "sensors", "hooks", "triggers", "links")
    bad = {
        (m, t)
        for m, targets in edges.items()
        if _package(m).removeprefix("airflow_zorder.") in airflow_side
        for t in targets
        if t.startswith("airflow_zorder.plugins")
    }
    assert not bad, sorted(bad)
