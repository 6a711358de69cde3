"""The engines benchmark's report (benchmarks/bench_engines.py): its rows, goals and doc section from a results dict.

No Spark: the figures are a small hand-made results dict of the shape ``bench_engines.main`` writes, so the test
checks what the report derives from them (which count a layout shows, the time ratios, the goals' verdicts, the
section replaced between its markers only), not any measured value.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_engines  # noqa: E402

COLS = ["a", "b", "c"]
FAMS = [f"point:{c}" for c in COLS] + ["range20%:a&b&c"]


def _layout(files: int, planned: list[int] | None, first: float = 10.0) -> dict:
    return {"first_run_s": first, "files": [f"/t/f{i}.parquet" for i in range(files)], "planned": planned}


def _timed(ratio: float) -> dict:
    return {
        "wall_ratio": ratio,
        "cpu_ratio": ratio,
        "wall_s": 10 * ratio,
        "cpu_s": 9.0,
        "wall_ratio_range": [round(ratio - 0.1, 2), round(ratio + 0.1, 2)],
        "cpu_ratio_range": [ratio - 0.1, ratio + 0.1],
    }


def _results(delta_reads: float, delta_ratio: float) -> dict:
    layouts = {
        "sort": _layout(64, None),
        "ours hilbert": _layout(64, None),
        "ours hilbert delta": _layout(64, [16] * 8),
        "delta": _layout(63, [20] * 8),
    }
    res = {
        "sf": 0.1,
        "files": 64,
        "rounds": 3,
        "started_utc": "2026-11-28T16:00:00Z",
        "uptime_start": "up 1 day, load average: 1.00, 2.00, 3.00",
        "uptime_end": "up 1 day, load average: 1.00, 2.00, 3.00",
        "git_head": {"head": "abc1234", "modified": []},
        "cpus": 2,
        "wall_s": 600.0,
        "versions": {"delta": "4.4.0", "iceberg": "1.11.0", "hudi": "1.2.0"},
        "datasets": {
            "lineitem": {"title": "lineitem", "columns": COLS, "input_files": 64, "input_bytes": 2**25, "rows": 10}
        },
        "queries": {"lineitem": [{"family": f, "sql": "TRUE"} for f in FAMS for _ in range(2)]},
        "lines": {
            "4.2": {
                "spark_version": "4.2.0",
                "datasets": {
                    "lineitem": {
                        "sort_runs": [{"wall_s": 10.0}],
                        "jobs": {"ours hilbert": _timed(1.1), "delta": _timed(delta_ratio)},
                        "layouts": layouts,
                    }
                },
            }
        },
    }
    reads = {"ours hilbert delta": 16.0, "ours hilbert": 16.0, "sort": 64.0, "delta": delta_reads}
    res["checks"] = {
        f"4.2/lineitem/{job}": {
            "families": {f: {"evaluator": reads[job], "with_match": 1.0, "planned": reads[job]} for f in FAMS},
            "under_floor": [],
            "evaluator_violations": 0,
        }
        for job in layouts
    }
    return res


def test_rows_show_the_engines_count_or_the_evaluators_and_first_run_ratios() -> None:
    rows = {r["job"]: r for r in bench_engines.rows_of(_results(20.0, 1.5))["lineitem"]}
    assert rows["delta"]["engine_counted"] and not rows["ours hilbert"]["engine_counted"]
    assert rows["delta"]["files"] == 63 and rows["delta"]["read"] == [20.0] * 4
    assert rows["ours hilbert"]["wall"] == (1.1, [1.0, 1.2])
    assert rows["ours hilbert delta"]["wall"] == (1.0, None)  # not timed in rounds: its first run vs the sort's


def test_goals_follow_the_figures() -> None:
    good = dict((t.split(":")[1].strip()[:10], ok) for t, ok, _ in bench_engines.goals(_results(20.0, 1.5)))
    assert all(good.values()) and len(good) == 2
    bad = [ok for _, ok, _ in bench_engines.goals(_results(12.0, 1.0))]
    assert bad == [False, False]  # the anchor reads fewer files and is faster


def test_section_is_rewritten_between_its_markers_only(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nbefore\n\n{bench_engines.START}\nstale\n{bench_engines.END}\n\nafter\n")
    bench_engines.render_doc(_results(20.0, 1.5), doc)
    text = doc.read_text()
    assert text.startswith("# B\n\nbefore\n\n") and text.endswith("\n\nafter\n") and "stale" not in text
    assert "| Delta `OPTIMIZE ZORDER BY` | 4.2.0 | 63 | 20.0 | 20.0 | 20.0 | 20.0 | 1.50x (1.40–1.60) |" in text
    assert "| **hilbert (ours)** | 4.2.0 | 64 | 16.0 † |" in text
