"""Shared by the reliability suite (issue #7): break the jobs on purpose and check that no row is lost, duplicated or
changed, and that a refused run leaves the table byte for byte as it was.

Fast part: ``bash scripts/test.sh -m reliability`` (also part of ``make test``).
Soak (more randomised kill points and seeds): ``ZORDER_SOAK=1 bash scripts/test.sh -m reliability``;
``ZORDER_SOAK_SEEDS=N`` sets the number of seeds (default 5), ``ZORDER_SOAK_SEED=S`` the first one.

Every module counts what it did in :data:`FIGURES` (cases, kills, rows checked, rows lost); the totals are
printed at the end of the run and written as JSON to ``$ZORDER_RELIABILITY_FIGURES`` when set
(docs/reliability.md quotes them).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter

from table_checks import diff_rows, row_multiset, visible_files

SOAK = os.environ.get("ZORDER_SOAK", "") not in ("", "0")
SOAK_SEEDS = int(os.environ.get("ZORDER_SOAK_SEEDS", "5"))
FIRST_SEED = int(os.environ.get("ZORDER_SOAK_SEED", "0"))
#: the seeds a randomised test runs with: one in the fast part, SOAK_SEEDS in the soak
SEEDS = list(range(FIRST_SEED, FIRST_SEED + (SOAK_SEEDS if SOAK else 1)))

FIGURES: Counter = Counter()

ROWS = 10_000
COLUMNS = ["user_id", "product_id"]


#: the same figures per test module (the table in docs/reliability.md)
BY_MODULE: dict[str, Counter] = {}


def record(**counts: int) -> None:
    """Add to the run's figures (``cases``, ``kills``, ``rows_checked``, ``rows_lost``, ``rows_extra`` ...)."""
    FIGURES.update(counts)
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[0]
    BY_MODULE.setdefault(os.path.basename(test).removesuffix(".py"), Counter()).update(counts)


def assert_same_rows(before: Counter, root: str, what: str = "") -> None:
    """The table's rows are exactly the multiset ``before``; counts the rows checked and lost."""
    after = row_multiset(root)
    lost, extra = diff_rows(before, after)
    record(rows_checked=sum(before.values()), rows_lost=lost, rows_extra=extra)
    assert (lost, extra) == (0, 0), f"{what}: {lost} row(s) lost, {extra} row(s) added or duplicated"


def assert_untouched(before_files: dict[str, str], root: str) -> None:
    """Same visible files with the same bytes, and no staged files left behind."""
    assert visible_files(root) == before_files, "the table's visible files changed"
    staging = os.path.join(root, "_zorder", "staging")
    leftovers = [os.path.join(d, f) for d, _, fs in os.walk(staging) for f in fs] if os.path.isdir(staging) else []
    assert not leftovers, f"staged files left behind: {leftovers[:3]}"


def journal_states(root: str) -> set[str]:
    """States of every clustering run's journal of a path table."""
    d = os.path.join(root, "_zorder", "journal")
    if not os.path.isdir(d):
        return set()
    return {json.load(open(os.path.join(d, f)))["state"] for f in os.listdir(d) if f.endswith(".json")}


def rng_for(*parts: object) -> random.Random:
    """A deterministic random generator per (test, seed): a failure names its seed and reproduces."""
    return random.Random("/".join(map(str, parts)))
