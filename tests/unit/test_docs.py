"""The README and docs/ stay a user guide whose figures are generated and whose references resolve.

README: at most about 200 lines, its headline block exactly what ``benchmarks/bench_report.py`` writes
from ``docs/benchmarks/results.json``, and no hand-written ratio or percentage outside that block.
README and docs/*.md: every relative link (and its ``#anchor``) resolves, and every module, file or
dotted name of the project they quote in backticks exists (docs must follow renames).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_report  # noqa: E402

README = REPO / "README.md"
RESULTS = REPO / "docs" / "benchmarks" / "results.json"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MAX_LINES = 200


def _ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in pages]


def _outside_headline(text: str) -> str:
    head, rest = text.split(bench_report.START, 1)
    return head + rest.split(bench_report.END, 1)[1]


def test_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_readme_headline_is_the_generated_one(tmp_path: Path) -> None:
    """Re-rendering the block from results.json changes nothing: the README carries no hand-edited figure there."""
    text = README.read_text(encoding="utf-8")
    assert text.count(bench_report.START) == 1 and text.count(bench_report.END) == 1
    copy = tmp_path / "README.md"
    shutil.copy(README, copy)
    res = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert bench_report.update_readme(copy, res, tmp_path / "docs" / "benchmarks.md")
    assert copy.read_text(encoding="utf-8") == text


def test_update_readme_replaces_only_the_block(tmp_path: Path) -> None:
    res = json.loads(RESULTS.read_text(encoding="utf-8"))
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# t\n\nbefore\n{bench_report.START}\nstale 9.99x\n{bench_report.END}\nafter\n", encoding="utf-8"
    )
    assert bench_report.update_readme(readme, res, tmp_path / "docs" / "benchmarks.md")
    text = readme.read_text(encoding="utf-8")
    assert "stale" not in text and text.startswith("# t\n\nbefore\n") and text.endswith("\nafter\n")
    assert "| **zorder (ours)** |" in text and "[docs/benchmarks.md](docs/benchmarks.md)" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n", encoding="utf-8")
    assert not bench_report.update_readme(plain, res, tmp_path / "docs" / "benchmarks.md")
    assert plain.read_text(encoding="utf-8") == "no markers\n"


def test_readme_has_no_hand_written_figures() -> None:
    """Ratios and percentages belong to the generated block only (a second copy would go stale)."""
    rest = _outside_headline(README.read_text(encoding="utf-8"))
    assert not re.findall(r"\b\d+(?:\.\d+)?x\b|\d+(?:\.\d+)?\s?%", rest)
    assert not re.search(r"\b[0-9a-f]{7,40}\b", re.sub(r"`[^`]*`", "", rest)), "a commit hash in the README"


def test_generated_doc_renders_from_the_json_alone(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    res = json.loads(RESULTS.read_text(encoding="utf-8"))
    out, doc = tmp_path / "figures", tmp_path / "benchmarks.md"
    bench_report.render(res, out, doc)
    text = doc.read_text(encoding="utf-8")
    for png in sorted(set(re.findall(r"\]\(([^)]+\.png)\)", text))):
        assert (doc.parent / png).is_file(), png
    assert "## Headline" in text and "earlier" not in text.lower()
    assert "\n".join(bench_report.headline_table(res)) in text


def test_connections_doc_has_the_generated_connector_table() -> None:
    """docs/connections.md's table of connector coordinates per Spark line is what ``SPARK_LINES`` renders."""
    from airflow_zorder import spark_jars

    text = (REPO / "docs" / "connections.md").read_text(encoding="utf-8")
    assert text.count(spark_jars.DOC_START) == 1 and text.count(spark_jars.DOC_END) == 1
    block = spark_jars.DOC_START + text.split(spark_jars.DOC_START, 1)[1].split(spark_jars.DOC_END, 1)[0]
    assert block + spark_jars.DOC_END == spark_jars.docs_table(), (
        "stale: python -m airflow_zorder.spark_jars table --write docs/connections.md"
    )
    for line, spec in spark_jars.SPARK_LINES.items():  # every store of every line has a row, with its verdict
        for store in spec.stores:
            assert spec.verified.get(store), (line, store)


def test_operators_doc_has_the_generated_parameter_tables(tmp_path: Path) -> None:
    """docs/operators.md's parameter tables are what the options' declarations render, between their markers only."""
    from airflow_zorder.core.jobs import options_doc

    text = (REPO / "docs" / "operators.md").read_text(encoding="utf-8")
    for operator in options_doc.TABLES:
        start, end = options_doc.doc_markers(operator)
        assert text.count(start) == 1 and text.count(end) == 1, operator
        block = start + text.split(start, 1)[1].split(end, 1)[0] + end
        assert block == options_doc.docs_table(operator), (
            "stale: python -m airflow_zorder.core.jobs.options_doc table --write docs/operators.md"
        )
    doc = tmp_path / "operators.md"
    markers = [m for op in options_doc.TABLES for m in options_doc.doc_markers(op)]
    doc.write_text("# t\n{}\nstale\n{}\nmiddle\n{}\nstale\n{}\nafter\n".format(*markers), encoding="utf-8")
    assert options_doc.main(["table", "--write", str(doc)]) == 0
    tables = [options_doc.docs_table(op) for op in options_doc.TABLES]
    assert doc.read_text(encoding="utf-8") == f"# t\n{tables[0]}\nmiddle\n{tables[1]}\nafter\n"
    assert "| `max_rewrite_bytes` | no limit | `--max-rewrite-bytes` |" in tables[0]


def test_code_layout_names_every_module() -> None:
    """docs/code-layout.md is what scripts/code_layout.py renders, so no module is missing from it."""
    sys.path.insert(0, str(REPO / "scripts"))
    import code_layout

    assert (REPO / "docs" / "code-layout.md").read_text(encoding="utf-8") == code_layout.render(), (
        "stale: python scripts/code_layout.py --write"
    )
    modules = [p for root in code_layout.ROOTS for p in (REPO / root).rglob("*.py") if p.name != "__init__.py"]
    text = code_layout.render()
    assert all(f"`{p.name}`:" in text for p in modules)


def test_the_connector_table_is_rewritten_between_its_markers_only(tmp_path: Path) -> None:
    from airflow_zorder import spark_jars

    doc = tmp_path / "connections.md"
    doc.write_text(f"# t\n\nbefore\n{spark_jars.DOC_START}\nstale\n{spark_jars.DOC_END}\nafter\n", encoding="utf-8")
    assert spark_jars.main(["table", "--write", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text == f"# t\n\nbefore\n{spark_jars.docs_table()}\nafter\n"
    assert "| 4.1.x (3.4.2) | `gs://` | `com.google.cloud.bigdataoss:gcs-connector:3.1.18:shaded` |" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n", encoding="utf-8")
    assert spark_jars.main(["table", "--write", str(plain)]) == 1 and plain.read_text() == "no markers\n"


# --------------------------------------------------------------------------- links and names


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.+)$", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading #{anchor}")
    assert not bad, bad


@cache
def _top_level_names(module_file: Path) -> frozenset[str]:
    tree = ast.parse(module_file.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            if isinstance(node.value, (ast.List, ast.Tuple)) and any(
                isinstance(t, ast.Name) and t.id == "__all__"
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            ):  # names a module exports lazily (``__getattr__``), e.g. airflow_zorder.spark_job_spec
                names.update(
                    e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                )
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return base.with_suffix(".py") if base.with_suffix(".py").is_file() else None


def _dotted_name_exists(name: str) -> bool:
    """``pkg.mod[.attr[.attr]]``: the longest module prefix exists and defines the next name."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = _module_file(parts[:i])
        if module is None:
            continue
        if i == len(parts):
            return True
        attr = parts[i]
        if attr in _top_level_names(module):
            return True
        sub = module.parent / attr
        return sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
    return False


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_project_names_in_backticks_exist(page: Path) -> None:
    """Modules, files and dotted names of the project quoted in the docs exist under their current names."""
    bad = []
    for code in re.findall(r"`([^`\n]+)`", page.read_text(encoding="utf-8")):
        for token in re.findall(r"(?:airflow_zorder|spark_jobs)(?!\w)[\w./]*", code):
            token = token.rstrip(".")
            if "/" in token:
                if not any(ch in token for ch in "*<") and not (REPO / token).exists():
                    bad.append(token)
            elif not _dotted_name_exists(token):
                bad.append(token)
        for token in re.findall(r"(?<![\w/])core/[\w/]+\.py", code):
            if not (REPO / "airflow_zorder" / token).exists():
                bad.append(token)
    assert not bad, sorted(set(bad))
