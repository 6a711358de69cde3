"""One statement's filters on one table: parsed by sqlglot in its engine's dialect, the table found through
aliases, CTEs, subqueries and joins, and each condition on its columns read by the project's one predicate
translator (:func:`~airflow_zorder.core.skipping.predicate_sql.translate`).

Every scan of the table in a statement (a ``FROM``/``JOIN`` of it in any query block) is one :class:`Scan`:
the conjuncts of that block's ``WHERE`` and ``JOIN ... ON`` that name only the table's columns (a column
qualified by the table's alias, or unqualified and one of the table's columns, or a CTE's / subquery's column
that passes one of them through unchanged). Conjuncts on one column are its filter; partition columns are kept
apart (they prune partitions, not files); conjuncts on several of the table's columns, or that the translator
cannot read, are counted and left out. A statement that does not parse is ``unparsed``, one whose scopes sqlglot
cannot build ``unresolved``, one without the table ``other_table``: counted, never raised.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.optimizer.simplify import simplify
from sqlglot.tokens import TokenType

from airflow_zorder.core.advisor.workload import Statement, dialect_of
from airflow_zorder.core.errors import ParseError
from airflow_zorder.core.skipping import predicate_sql
from airflow_zorder.core.skipping.predicates import And, Compare, Expr, In, IsNull, Like, Not, Opaque, Or

__all__ = ["Extraction", "Extractor", "Scan", "TableName", "extract", "predicate_columns"]


@dataclass(frozen=True)
class TableName:
    """The table the advisor looks for: ``name`` or ``db.name`` or ``catalog.db.name`` (case-insensitive); a
    statement's table matches when its last parts agree with the parts both give. A location (``/data/t``,
    ``s3://b/t``) matches a table named by its path (Spark's ``parquet.`/data/t``` and the scans of its event
    logs), with or without ``file:`` and a trailing slash."""

    parts: tuple[str, ...]
    location: str = ""

    @classmethod
    def of(cls, text: str) -> TableName:
        if "/" in text:
            return cls((), _location(text))
        parts = tuple(p.strip().strip('`"').lower() for p in text.split(".") if p.strip())
        return cls(parts or ("",))

    def matches(self, table: exp.Table) -> bool:
        if self.location:
            return _location(table.name) == self.location
        theirs = [p.lower() for p in (table.catalog, table.db, table.name) if p]
        n = min(len(theirs), len(self.parts))
        return bool(theirs) and theirs[-n:] == list(self.parts[-n:])


def _location(path: str) -> str:
    path = path.strip()
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    return path.rstrip("/")


@dataclass(frozen=True)
class Scan:
    """One scan of the table: its filter per column (the AND of that column's conjuncts) and on partitions."""

    filters: dict[str, Expr]
    partition_filters: dict[str, Expr]
    skipped: int = 0  # conjuncts on the table left out (several of its columns, or not translatable)


@dataclass
class Extraction:
    """What one statement gave: its scans of the table, or why none (``status``)."""

    status: str  # "ok" | "other_table" | "unparsed" | "unresolved"
    scans: list[Scan] = field(default_factory=list)
    error: str = ""


def predicate_columns(e: Expr) -> set[str]:
    """The columns a predicate names."""
    if isinstance(e, (And, Or)):
        return set().union(*(predicate_columns(c) for c in e.children))
    if isinstance(e, Not):
        return predicate_columns(e.child)
    if isinstance(e, (Compare, In, IsNull, Like)):
        return {e.column}
    return set()


def extract(
    stmt: Statement,
    table: TableName,
    columns: Collection[str],
    partition_columns: Collection[str] = (),
) -> Extraction:
    """The scans of ``table`` in ``stmt`` and their filters on ``columns`` (the table's columns from its
    statistics) and ``partition_columns``; never raises on the statement's content."""
    return Extractor(table, columns, partition_columns).extract(stmt)


_LITERALS = {TokenType.STRING, TokenType.NUMBER, TokenType.HEX_STRING}


@dataclass
class _Recipe:
    """A statement's shape, resolved once: per scan, each filtering condition (its columns already renamed to
    the table's column) and whether it needs constant folding; the literals to rebind, by token index."""

    status: str
    scans: list[tuple[list[tuple[str, exp.Expression, bool]], int]]
    literals: dict[int, list[exp.Literal]]
    error: str = ""


class Extractor:
    """:func:`extract` for many statements: statements that differ only in their literals (the same query run
    with other values, as dashboards and jobs do) share one parse and one resolution; each is tokenised, its
    literals bound into the shared conditions, and the conditions translated again (about 20x faster)."""

    def __init__(self, table: TableName, columns: Collection[str], partition_columns: Collection[str] = ()) -> None:
        self.table = table
        self.known = {c.lower(): c for c in (*columns, *partition_columns)}
        self.partitions = {c.lower() for c in partition_columns}
        self.cache: dict[tuple[str, tuple[tuple[object, str], ...]], _Recipe] = {}

    def extract(self, stmt: Statement) -> Extraction:
        dialect = dialect_of(stmt.engine)
        try:
            tokens = dialect.tokenize(stmt.sql)
        except SqlglotError as exc:
            return Extraction("unparsed", error=str(exc).splitlines()[0][:200])
        key = (stmt.engine, tuple((t.token_type, "" if t.token_type in _LITERALS else t.text) for t in tokens))
        recipe = self.cache.get(key)
        if recipe is None:
            recipe = self.resolve(stmt, tokens)
            if len(self.cache) < 100_000:
                self.cache[key] = recipe
        else:
            for i, nodes in recipe.literals.items():
                for node in nodes:
                    node.set("this", tokens[i].text)
        return self.translate(recipe, stmt.sql)

    def resolve(self, stmt: Statement, tokens: list) -> _Recipe:
        try:
            trees = [t for t in dialect_of(stmt.engine).parser().parse(tokens, stmt.sql) if t is not None]
        except SqlglotError as exc:
            return _Recipe("unparsed", [], {}, str(exc).splitlines()[0][:200])
        if any(isinstance(t, exp.Command) for t in trees):  # sqlglot's fallback for what it could not parse
            return _Recipe("unparsed", [], {}, f"not parsed as a statement: {stmt.sql[:80]!r}")
        scans: list[tuple[list[tuple[str, exp.Expression, bool]], int]] = []
        try:
            for tree in trees:
                scans.extend(_Resolver(self.table, self.known).scans(tree))
        except Exception as exc:  # noqa: BLE001 - sqlglot's scopes on any SQL: a statement never stops the advice
            return _Recipe("unresolved", [], {}, f"{type(exc).__name__}: {exc}"[:200])
        starts = {t.start: i for i, t in enumerate(tokens) if t.token_type in _LITERALS}
        literals: dict[int, list[exp.Literal]] = {}
        for conds, _ in scans:
            for _, cond, _ in conds:
                for lit in cond.find_all(exp.Literal):
                    i = starts.get(lit.meta.get("start", -1))
                    if i is None:  # a literal the parser made up: this shape is not shared
                        return _Recipe("ok" if scans else "other_table", scans, {}, "uncached")
                    literals.setdefault(i, []).append(lit)
        return _Recipe("ok" if scans else "other_table", scans, literals)

    def translate(self, recipe: _Recipe, text: str) -> Extraction:
        out = []
        for conds, skipped in recipe.scans:
            filters: dict[str, list[Expr]] = {}
            for name, cond, _ in conds:
                pred = _translate(cond, text)
                if pred is None or isinstance(pred, Opaque):
                    skipped += 1
                else:
                    filters.setdefault(name, []).append(pred)
            out.append(self.scan(filters, skipped))
        return Extraction(recipe.status, out, "" if recipe.error == "uncached" else recipe.error)

    def scan(self, per_column: dict[str, list[Expr]], skipped: int) -> Scan:
        filters: dict[str, Expr] = {}
        partition_filters: dict[str, Expr] = {}
        for name, preds in per_column.items():
            e = preds[0] if len(preds) == 1 else And(tuple(preds))
            (partition_filters if name.lower() in self.partitions else filters)[name] = e
        return Scan(filters, partition_filters, skipped)


def _translate(cond: exp.Expression, text: str) -> Expr | None:
    """A condition (its column renamed to the table's) read by the project's translator; constant arithmetic
    (``DATE '1994-01-01' + INTERVAL '1' YEAR``, ``0.06 - 0.01``) folded by sqlglot first when it must be."""
    try:
        return predicate_sql.translate(cond, text)
    except ParseError:
        pass
    try:
        return predicate_sql.translate(_fold(cond), text)
    except (ParseError, SqlglotError, ValueError, TypeError, ArithmeticError):  # what folding may raise
        return None


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)


def _fold(cond: exp.Expression) -> exp.Expression:
    """``cond`` with each outermost arithmetic on constants replaced by its value (sqlglot's simplifier, once
    per distinct arithmetic: it costs ~0.2 ms, and a workload repeats its date arithmetic)."""
    node = cond.copy()
    chosen: set[int] = set()
    for a in list(node.find_all(*_ARITHMETIC)):
        if a.find(exp.Column) is not None or any(id(p) in chosen for p in _ancestors(a)):
            continue
        chosen.add(id(a))
        a.replace(_folded(a.sql()).copy())
    return node


def _ancestors(node: exp.Expression) -> Iterator[exp.Expression]:
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


@functools.lru_cache(maxsize=8192)
def _folded(sql: str) -> exp.Expression:
    return simplify(sqlglot.parse_one(sql))


_Origin = tuple[tuple[int, str], str]  # ((scope id, alias) of a scan, the table's column)


class _Resolver:
    """Walks a statement's scopes children first, so each derived table's (CTE's, subquery's) columns are
    known as the scan columns they pass through before the blocks that filter on them are read."""

    def __init__(self, table: TableName, known: dict[str, str]) -> None:
        self.table, self.known = table, known
        self.outputs: dict[int, dict[str, _Origin]] = {}

    def scans(self, tree: exp.Expression) -> list[tuple[list[tuple[str, exp.Expression, bool]], int]]:
        """Per scan of the table: its conditions on one of its columns (renamed to it), and how many
        conditions on several of its columns were left out."""
        found: dict[tuple[int, str], list[tuple[str, exp.Expression, bool]]] = {}
        skipped: dict[tuple[int, str], int] = {}
        for scope in traverse_scope(tree):
            for alias, s in scope.sources.items():
                if isinstance(s, exp.Table) and self.table.matches(s):
                    found[(id(scope), alias)] = []
                    skipped[(id(scope), alias)] = 0
            for cond in _conditions(scope.expression):
                origins = {self.resolve(scope, c) for c in cond.find_all(exp.Column)}
                if not origins or None in origins:
                    continue  # no column, or another table's (a join condition, a filter on another table)
                keys = {o[0] for o in origins if o is not None}
                names = {o[1] for o in origins if o is not None}
                if len(keys) > 1:
                    continue  # a condition between two scans of the table (a self-join)
                (key,) = keys
                if len(names) > 1:
                    skipped[key] += 1
                    continue
                (name,) = names
                node = cond.copy()
                for c in list(node.find_all(exp.Column)):
                    c.replace(exp.column(name, quoted=True))
                found[key].append((name, node, False))
            self.outputs[id(scope)] = self.projected(scope)
        return [(conds, skipped[key]) for key, conds in found.items()]

    def source_columns(self, scope: Scope, alias: str, source: object) -> dict[str, _Origin] | None:
        """The columns a source of ``scope`` gives that are the table's: all of them for a scan of it, the
        passed-through ones for a derived table, None for another table (its columns are unknown)."""
        if isinstance(source, exp.Table):
            if not self.table.matches(source):
                return None
            return {low: ((id(scope), alias), name) for low, name in self.known.items()}
        if isinstance(source, Scope):
            return self.outputs.get(id(source), {})
        return None

    def resolve(self, scope: Scope, column: exp.Column) -> _Origin | None:
        name = column.name.lower()
        if column.table:
            source = scope.sources.get(column.table)
            cols = self.source_columns(scope, column.table, source) if source is not None else None
            return cols.get(name) if cols is not None else None
        hits = []
        for alias, source in scope.sources.items():
            cols = self.source_columns(scope, alias, source)
            if cols is None:
                continue
            if name in cols:
                hits.append(cols[name])
            elif isinstance(source, Scope) and name in _projected(source):
                return None  # a derived table's own column (computed, or another table's)
        return hits[0] if len(hits) == 1 else None

    def projected(self, scope: Scope) -> dict[str, _Origin]:
        """What a query block passes on: each output column that is one of a scan's columns unchanged."""
        select = scope.expression
        out: dict[str, _Origin] = {}
        if not isinstance(select, exp.Select):
            return out
        for proj in select.selects:
            if isinstance(proj, exp.Star):
                for alias, source in scope.sources.items():
                    out.update(self.source_columns(scope, alias, source) or {})
                continue
            inner = proj.unalias() if isinstance(proj, exp.Alias) else proj
            if isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star):
                source = scope.sources.get(inner.table)
                out.update((self.source_columns(scope, inner.table, source) or {}) if source is not None else {})
            elif isinstance(inner, exp.Column):
                origin = self.resolve(scope, inner)
                if origin is not None:
                    out[proj.alias_or_name.lower()] = origin
        return out


def _conditions(select: exp.Expression) -> list[exp.Expression]:
    """The conjuncts of a query block's WHERE and of its joins' ON."""
    roots = []
    where = select.args.get("where")
    if where is not None:
        roots.append(where.this)
    for join in select.args.get("joins") or ():
        on = join.args.get("on")
        if on is not None:
            roots.append(on)
    out: list[exp.Expression] = []
    for r in roots:
        r = r.unnest()
        out.extend(c.unnest() for c in r.flatten()) if isinstance(r, exp.And) else out.append(r)
    return out


def _projected(scope: Scope) -> set[str]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return set()
    return {s.alias_or_name.lower() for s in select.selects}
