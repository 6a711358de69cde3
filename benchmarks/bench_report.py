"""docs/benchmarks.md and its PNG figures from a ``run_all.py`` results JSON (no measuring here).

    .venv/bin/python benchmarks/bench_report.py [docs/benchmarks/results.json] [--doc docs/benchmarks.md] [--readme]

With no arguments it re-renders docs/benchmarks.md, its figures and README's headline block from
docs/benchmarks/results.json (what ``make bench`` wrote); other results update README only with ``--readme``.

``render(results, out_dir, doc, readme=None)`` writes ``files_read_<data set>.png``,
``duckdb_time_<data set>.png``, ``clustering_cost.png``, ``stats_time.png`` and (with the ``incremental``
figures of ``bench_incremental.py``) ``incremental_days.png`` into ``out_dir``, the
markdown ``doc`` (figures linked relative to it), and, when ``readme`` is given, replaces README's block
between ``<!-- bench:headline:start -->`` and ``<!-- bench:headline:end -->`` with the headline table
(nothing else in the README is touched; no markers, no change).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench_doc import splice_section  # noqa: E402

ORDER = ["as generated", "linear", "zorder", "hilbert", "hilbert delta", "delta-rs z_order"]
OURS = ("zorder", "hilbert", "hilbert delta")  # bold in the headline table
COLORS = {
    "as generated": "#9e9e9e",
    "linear": "#8c6d31",
    "zorder": "#1f77b4",
    "hilbert": "#2ca02c",
    "hilbert delta": "#98df8a",
    "delta-rs z_order": "#d62728",
    "baseline": "#555555",
}
LABEL = {
    "as generated": "as generated",
    "linear": "linear sort (ours)",
    "zorder": "zorder (ours)",
    "hilbert": "hilbert (ours)",
    "hilbert delta": "hilbert (ours, Delta)",
    "delta-rs z_order": "delta-rs z_order",
}
START, END = "<!-- bench:headline:start -->", "<!-- bench:headline:end -->"


def md_header(hdr: list[str]) -> list[str]:
    """A Markdown table's header and separator lines."""
    return ["| " + " | ".join(hdr) + " |", "|" + " --- |" * len(hdr)]


def _layouts(ds: dict) -> list[str]:
    return [k for k in ORDER if k in ds.get("layouts", {})]


def _fam_label(fam: str, short: bool = False) -> str:
    kind, cols = fam.split(":", 1)
    cols_l = cols.split("&")
    what = "=" if kind == "point" else kind[len("range") :]
    if len(cols_l) == 1:
        return f"{cols}\n{what}" if not short else f"{cols} {what}"
    joined = " & ".join(cols_l) if short else "\n& ".join(cols_l)
    return (
        f"{len(cols_l)} cols {what}\n{joined}" if not short else f"{joined} {what if what == '=' else what + ' each'}"
    )


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# --------------------------------------------------------------------------- figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fig_files_read(name: str, ds: dict, path: Path) -> None:
    import numpy as np

    plt = _plt()
    lays = _layouts(ds)
    fams = ds["families"]
    single = [f for f in fams if "&" not in f]
    multi = [f for f in fams if "&" in f]
    fig, axes = plt.subplots(2, 1, figsize=(15, 9), gridspec_kw={"height_ratios": [1, 1]})
    for ax, group in zip(axes, (single, multi)):
        x = np.arange(len(group))
        w = 0.8 / len(lays)
        for i, lay in enumerate(lays):
            L = ds["layouts"][lay]
            fr = [L["families"][f]["fraction_read"] for f in group]
            floor = [L["families"][f].get("files_with_match", np.nan) / L["files"] for f in group]
            xs = x - 0.4 + w * (i + 0.5)
            ax.bar(xs, fr, w, color=COLORS[lay], label=f"{LABEL[lay]} ({L['files']} files)")
            ax.scatter(
                xs,
                floor,
                marker="_",
                color="black",
                s=60,
                zorder=3,
                label="files holding a matching row (DuckDB)" if i == 0 else None,
            )
        ax.set_xticks(x, [_fam_label(f) for f in group], fontsize=8)
        ax.set_ylabel("share of files read per query (mean)")
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    d = len(ds["columns"])
    n_out = ds["layouts"].get("zorder", ds["layouts"][lays[-1]])["files"]
    ideal = n_out ** (-1 / d)
    axes[0].axhline(
        ideal,
        color="black",
        ls=":",
        lw=1,
        label=f"{n_out}^(-1/{d}) = {ideal:.2f}: ideal for a point query on one of {d} curve columns",
    )
    axes[0].set_title(
        f"{ds['title']}: share of files the pruning evaluator keeps; point (=) and range queries by share of rows",
        fontsize=11,
    )
    axes[1].set_title(
        "2- and 3-column predicates (equality from one row; ranges: share of rows per column)", fontsize=10
    )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, ncol=4, loc="lower center", frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fig_duckdb_time(name: str, ds: dict, path: Path) -> None:
    import numpy as np

    plt = _plt()
    lays = _layouts(ds)
    fams = ds["timed_families"]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    x = np.arange(len(fams))
    w = 0.8 / len(lays)
    for i, lay in enumerate(lays):
        ms = [ds["layouts"][lay]["duckdb_ms"][f]["median_ms"] for f in fams]
        ax.bar(x - 0.4 + w * (i + 0.5), ms, w, color=COLORS[lay], label=LABEL[lay])
    ax.set_xticks(x, [_fam_label(f) for f in fams], fontsize=8)
    ax.set_ylabel("ms per query (median of rounds)")
    ax.set_title(
        f"{ds['title']}: DuckDB read_parquet over each layout's files, "
        "SELECT count(*), sum(" + ds["payload"] + ") WHERE ...",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _range(xs: list[float]) -> list[float] | None:
    """[lowest, highest] of a strategy's per-round ratios; None for fewer than two rounds."""
    return [min(xs), max(xs)] if len(xs) > 1 else None


def cost_rows(ds: dict) -> list[dict[str, Any]]:
    """Per strategy: wall s, CPU s, memory, and their ratios to the reference rewrite, each the median over the
    rounds, with the range of the ratios over the rounds (``ratio_range``, ``cpu_range``) when there were several.

    Our curves: ratios to the mean of the reference runs just before and after each (``run_all`` interleaves
    them); delta-rs (run after the SparkSession stopped): to the mean of all reference runs. The reference row:
    their mean, its range the reference runs' own spread around it (memory: the median run's). Memory: peak heap of
    the driver JVM (ours, reference) and peak process RSS (the JVM's; delta-rs's own process).
    """
    c = ds.get("clustering", {})
    if not c:
        return []
    bs = c["baselines"]
    mean_s, mean_cpu = c["baseline_mean_s"], c["baseline_mean_cpu_s"]
    ref_rss = sum(b["peak_jvm_rss_mb"] for b in bs) / len(bs)
    mid = sorted(bs, key=lambda b: b["wall_s"])[(len(bs) - 1) // 2]
    rows = [
        {
            "strategy": f"reference rewrite (mean of {len(bs)} runs)" if len(bs) > 1 else "reference rewrite",
            "wall_s": mean_s,
            "ratio": 1.0,
            "ratio_range": _range([b["wall_s"] / mean_s for b in bs]),
            "cpu_s": mean_cpu,
            "cpu_ratio": 1.0 if mean_cpu else None,
            "cpu_range": _range([b["cpu_s"] / mean_cpu for b in bs]) if mean_cpu else None,
            "heap_mb": mid.get("peak_jvm_heap_mb"),
            "heap_ratio": None,
            "rss_mb": mid["peak_jvm_rss_mb"],
            "rss_ratio": mid["peak_jvm_rss_mb"] / ref_rss,
            "load1": mid["load1_end"],
            "rounds": len(bs),
            "kind": "reference",
        }
    ]
    for curve, d in c["curves"].items():
        rounds = d.get("rounds") or [d]
        rows.append(
            {
                "strategy": curve,
                "wall_s": d["wall_s"],
                "ratio": d["wall_ratio"],
                "ratio_range": _range([r["wall_ratio"] for r in rounds]),
                "cpu_s": d["cpu_s"],
                "cpu_ratio": d.get("cpu_ratio"),
                "cpu_range": _range([r["cpu_ratio"] for r in rounds if r.get("cpu_ratio") is not None]),
                "heap_mb": d.get("peak_jvm_heap_mb"),
                "heap_ratio": d.get("heap_ratio"),
                "rss_mb": d["peak_jvm_rss_mb"],
                "rss_ratio": d["peak_jvm_rss_mb"] / ref_rss,
                "load1": d["load1_end"],
                "rounds": len(rounds),
                "kind": "spark",
            }
        )
    dr = ds.get("delta_rs") or {}
    if "z_order" in dr:
        z = dr["z_order"]
        rounds = z.get("rounds") or [z]
        rss = z["peak_python_rss_mb"]
        rows.append(
            {
                "strategy": "delta-rs z_order",
                "wall_s": z["wall_s"],
                "ratio": z["wall_s"] / mean_s,
                "ratio_range": _range([r["wall_s"] / mean_s for r in rounds]),
                "cpu_s": z["cpu_s"],
                "cpu_ratio": z["cpu_s"] / mean_cpu if mean_cpu else None,
                "cpu_range": _range([r["cpu_s"] / mean_cpu for r in rounds]) if mean_cpu else None,
                "heap_mb": None,
                "heap_ratio": None,
                "rss_mb": rss,
                "rss_ratio": rss / ref_rss,
                "load1": z["load1_end"],
                "rounds": len(rounds),
                "kind": "delta",
            }
        )
    return rows


def ratio_cell(ratio: float | None, spread: list[float] | None) -> str:
    """``0.83x (0.80-0.90)``: a median ratio and its range over the rounds; ``–`` when there is none."""
    if ratio is None:
        return "–"
    return f"{ratio:.2f}x" + (f" ({spread[0]:.2f}–{spread[1]:.2f})" if spread else "")


def rounds_of(res: dict) -> int:
    """The fewest rounds any timed strategy of the run had (1 for runs before ``--rounds``)."""
    counts = [r["rounds"] for ds in res["datasets"].values() for r in cost_rows(ds) if r["kind"] != "reference"]
    return min(counts) if counts else 1


def _ours_delta(ds: dict) -> dict | None:
    """Our job's run on the data set's Delta table (``run_all``'s ``hilbert delta``), if there was one."""
    return (ds.get("clustering") or {}).get("curves", {}).get("hilbert delta")


def _versions(read: Any, new: Any) -> str:
    """'version 0 -> 1, one transaction' or, when more than one commit came in between, what there was."""
    if isinstance(read, int) and isinstance(new, int) and new == read + 1:
        return f"version {read} -> {new}, one transaction"
    return f"version {read} -> {new}"


def _n(n: Any, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def delta_notes(ds: dict) -> list[str]:
    """The sentences under a data set's cost table about our job on its Delta table, next to delta-rs."""
    ours = _ours_delta(ds)
    if not ours:
        return []
    dr = ds.get("delta_rs") or {}
    din = ds.get("delta_input") or {}
    out = []
    same = bool(dr.get("started_from")) and dr["started_from"] == din.get("table")
    if same and "z_order" in dr:
        recut = ""
        if dr.get("match_target_size"):
            final = dr.get("final_table_version")
            recut = f"; its untimed re-cuts committed {'versions up to ' + str(final) if final else 'later versions'}"
        out.append(
            f"{LABEL['hilbert delta']} and delta-rs z_order started from copies of the same Delta table "
            f"(one `write_deltalake` append per input file, untimed: {_n(din.get('written_files', '?'), 'file')}, version "
            f"{din.get('version', '?')}; the Parquet strategies read the {ds.get('input', {}).get('files', '?')} "
            f"input files) and each committed one Delta transaction: ours {_versions(**_rv(ours.get('delta')))}; "
            f"delta-rs's timed `z_order` {_versions(dr.get('read_version'), dr.get('timed_run_table_version'))}"
            + recut
            + "."
        )
    chk = ours.get("rows_check")
    if chk:
        b = chk["before"]
        others = [k for k in chk if k not in ("before", "after", "equal")]
        out.append(
            (
                f"Rows checked (count and DuckDB `sum(hash(<every column>))` over `DeltaTable.to_pyarrow_dataset()`): {b['rows']:,} rows before our "
                f"commit (version {b['version']}, by time travel) and after it (version {chk['after']['version']})"
                + "".join(f", and in the {k} table at its last version ({chk[k]['version']})" for k in others)
                + ": equal."
            )
            if chk["equal"]
            else "**Rows differ** between the Delta tables: "
            + "; ".join(
                f"{k}: {v['rows']:,} rows, checksum {v['checksum']}" for k, v in chk.items() if isinstance(v, dict)
            )
            + "."
        )
    ph = ours.get("phases") or {}
    if "python_rss_increase_mb" in ours:
        out.append(
            f"{LABEL['hilbert delta']}'s commit ran delta-rs in the driver's Python process"
            + (f" ({ph['commit_s']:.1f} s of its wall time)" if isinstance(ph.get("commit_s"), (int, float)) else "")
            + f": that process's RSS rose by {ours['python_rss_increase_mb']:.0f} MB during the job (peak "
            f"{ours['peak_python_rss_mb']:.0f} MB; the table's RSS column is the JVM's)."
        )
    return out


def _rv(d: dict | None) -> dict[str, Any]:
    d = d or {}
    return {"read": d.get("read_version"), "new": d.get("version")}


def fig_cost(res: dict, path: Path) -> None:
    import numpy as np

    plt = _plt()
    names = [n for n, ds in res["datasets"].items() if ds.get("clustering")]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    present = {r["strategy"] for n in names for r in cost_rows(res["datasets"][n])}
    strategies = [s for s in ("linear", "zorder", "hilbert", "hilbert delta", "delta-rs z_order") if s in present]
    x = np.arange(len(names))
    w = 0.8 / len(strategies)
    for i, s in enumerate(strategies):
        wall, mem = [], []
        for n in names:
            rows = {r["strategy"]: r for r in cost_rows(res["datasets"][n])}
            r = rows.get(s)
            wall.append(r["ratio"] if r else np.nan)
            mem.append(r["rss_ratio"] if r else np.nan)
        xs = x - 0.4 + w * (i + 0.5)
        axes[0].bar(xs, wall, w, color=COLORS[s], label=LABEL.get(s, s))
        axes[1].bar(xs, mem, w, color=COLORS[s], label=LABEL.get(s, s))
    for ax in axes:
        ax.axhline(1.0, color="black", ls="--", lw=1, label="reference rewrite = 1")
    axes[0].set_ylabel("wall time / reference rewrite")
    axes[0].set_title("Clustering wall time, ratio to repartitionByRange + sort (same session)", fontsize=10)
    axes[1].set_ylabel("peak RSS / reference rewrite")
    axes[1].set_title("Peak process memory (driver JVM RSS; delta-rs process RSS), ratio to the reference", fontsize=10)
    for ax in axes:
        ax.set_xticks(x, [res["datasets"][n]["title"] for n in names], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # headroom for the legend
        ax.legend(fontsize=8, ncol=3, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fig_stats(res: dict, path: Path) -> None:
    import numpy as np

    plt = _plt()
    st = res.get("stats", {})
    names = list(st)
    kinds = [
        ("duckdb_s", "DuckDB parquet_metadata()", "#ff7f0e"),
        ("footer_step_s", "collect_stats footer step (Spark executors)", "#1f77b4"),
        ("core_reader_s", "core footer_stats.read_footers_parallel (in process)", "#2ca02c"),
    ]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    x = np.arange(len(names))
    w = 0.8 / len(kinds)
    for i, (k, label, color) in enumerate(kinds):
        ax.bar(x - 0.4 + w * (i + 0.5), [_med(st[n].get(k, [])) for n in names], w, color=color, label=label)
    ax.set_xticks(x, [f"{n}\n({st[n]['files']} files, {st[n]['columns']} columns)" for n in names], fontsize=9)
    ax.set_ylabel("seconds (median of rounds)")
    ax.set_title("Reading per-file min/max/null statistics of every column", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- markdown


def _f(x: Any, fmt: str = ".2f") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return format(x, fmt)


def headline_table(res: dict, rel: str = "", first_only: bool = False) -> list[str]:
    """Per data set (``first_only``: the first) and layout: share of files a point query reads per column, a
    3-column range, time ratio."""
    out = []
    for ds in list(res["datasets"].values())[: 1 if first_only else None]:
        lays = _layouts(ds)
        cols = ds["columns"]
        multi = [f for f in ds["families"] if f.count("&") == len(cols) - 1 and f.startswith("range")]
        costs = {r["strategy"]: r for r in cost_rows(ds)}
        out.append(
            f"**{ds['title']}**, {ds['layouts'][lays[0]]['files']} input files -> "
            f"{ds['clustering']['curves'][next(iter(ds['clustering']['curves']))]['files'] if ds.get('clustering') else '?'} "
            f"files (share of files read; lower is better)"
        )
        out.append("")
        hdr = (
            ["layout", "files"]
            + [f"`{c} = v`" for c in cols]
            + (["3-col range"] if multi else [])
            + ["rewrite wall time vs sort rewrite", "CPU time vs sort rewrite"]
        )
        out += md_header(hdr)
        for lay in lays:
            L = ds["layouts"][lay]
            cells = [LABEL[lay], str(L["files"])]
            cells += [_f(L["families"][f"point:{c}"]["fraction_read"], ".3f") for c in cols]
            if multi:
                cells.append(_f(L["families"][multi[0]]["fraction_read"], ".3f"))
            r = costs.get(lay) or {}
            cells.append(ratio_cell(r.get("ratio"), r.get("ratio_range")))
            cells.append(ratio_cell(r.get("cpu_ratio"), r.get("cpu_range")))
            if lay in OURS:
                cells = [f"**{c}**" for c in cells]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out


def findings(res: dict) -> list[str]:
    """Query families where our curves read a larger share of files (by > half a file) than delta-rs or the linear sort.

    Against the linear sort only families without its leading column count as losses: a sort by
    (c1, c2, c3) is the best possible layout for c1 alone, and that is summarised in one line.
    """
    out = []
    for ds in res["datasets"].values():
        L = ds.get("layouts", {})
        lead = ds["columns"][0]
        for ours in ("zorder", "hilbert"):
            if ours not in L:
                continue
            for other in ("delta-rs z_order", "linear"):
                if other not in L:
                    continue
                lost, lead_fams = [], []
                na, nb = L[ours]["files"], L[other]["files"]
                for f in ds["families"]:
                    a = L[ours]["families"][f]["files_read"]
                    b = L[other]["families"][f]["files_read"]
                    if a / na > b / nb + 0.5 / na:  # more than half a file, as shares of each layout's files
                        if other == "linear" and lead in f.split(":", 1)[1].split("&"):
                            lead_fams.append(f)
                        else:
                            fa, fb = L[ours]["families"][f], L[other]["families"][f]
                            floor = all(
                                x.get("files_with_match") is not None and x["files_read"] - x["files_with_match"] < 0.5
                                for x in (fa, fb)
                            )
                            lost.append(
                                f"{_fam_label(f, True)} ({a:.1f} of {na} vs {b:.1f} of {nb} files"
                                + (", both at the floor" if floor else "")
                                + ")"
                            )
                if lost:
                    out.append(
                        f"- {ds['title']}: `{ours}` reads more files than {LABEL[other]} on "
                        + "; ".join(lost)
                        + "."
                        + (
                            ' "At the floor": both read only files that hold a matching row, so the '
                            "layouts differ in how many files the values occupy, not in pruning."
                            if any("at the floor" in x for x in lost)
                            else ""
                        )
                    )
                if lead_fams:
                    f = f"point:{lead}"
                    out.append(
                        f"- {ds['title']}: `{ours}` reads more files than {LABEL[other]} on {len(lead_fams)} "
                        f"families involving the sort's leading column `{lead}` (expected; e.g. `{lead} = v`: "
                        f"{L[ours]['families'][f]['files_read']:.1f} vs {L[other]['families'][f]['files_read']:.1f} files)."
                    )
    return out or ["- Neither curve of ours read more files than delta-rs or the linear sort on any query family."]


def render_doc(res: dict, out_dir: Path, doc: Path) -> str:
    rel = os.path.relpath(out_dir, doc.parent)
    repo = Path(__file__).resolve().parent.parent
    shown = os.path.relpath(out_dir, repo) if Path(out_dir).resolve().is_relative_to(repo) else str(out_dir)
    design = os.path.relpath(repo / "docs" / "design.md", Path(doc).resolve().parent)
    m = res["machine"]
    L = res["load"]
    lines: list[str] = []
    p = lines.append
    p("# Benchmarks against the field")
    p("")
    p(
        "<!-- generated by benchmarks/bench_report.py from "
        + f"{shown}/results.json"
        + "; edit the generator, not this file -->"
    )
    p("")
    p(
        "What a user chooses a clustering tool by: the files their queries skip, and what the rewrite costs. "
        "Everything below is one run of one command on one machine, compared with what one would use instead: "
        "the files as generated, a plain linear sort, and delta-rs `optimize.z_order` (the `deltalake` package)."
    )
    p("")
    p("## The run these figures come from")
    p("")
    p(
        f"- **{res['started_utc']} -> {res['finished_utc']}**, {res['wall_s'] / 60:.1f} minutes in all: `{res['command'].strip()}`"
    )
    samples = ", ".join(f"{s['load1']:.1f} ({s['at']})" for s in L.get("samples", []))
    p(
        f"- Load average (1 min) at the start {L['start'][0]:.2f}, at the end {L['end'][0]:.2f}; during the run: {samples}. "
        f"The machine has {m['cpus']} CPUs{' and was shared with other work during this run: wall times are inflated (ratios, measured in the same run, less so)' if max([L['start'][0]] + [s['load1'] for s in L.get('samples', [])]) > m['cpus'] + 0.5 else ''}."
    )
    p(
        f"- Machine: {m['cpus']} x {m['cpu_model']}, {m['memory_gb']} GB RAM, {m['os']}; Python {m['python']}, {m['java']}."
    )
    v = m["versions"]
    p(
        f"- Versions: Spark (pyspark) {v['pyspark']}, DuckDB {v['duckdb']}, deltalake (delta-rs) {v['deltalake']}, "
        f"pyarrow {v['pyarrow']}, tpchgen-cli {v['tpchgen-cli']}, matplotlib {v['matplotlib']}."
    )
    p(
        f"- Code: git `{m['git_head']}`"
        + (
            f" plus uncommitted changes in {', '.join('`' + x + '`' for x in m['git_modified'])} (a try-out, "
            "not a documented run)"
            if m.get("git_modified")
            else ", committed (no uncommitted changes in the code or the benchmarks)"
        )
        + "."
    )
    p(
        f"- Spark {res.get('spark_version', '?')} `local[2]`, 4 GB driver, 64 shuffle partitions, UI off "
        "(`benchmarks/bench_cluster.build_spark`)."
    )
    p("")
    p("## Reproduce")
    p("")
    p("```bash")
    p("make bench     # installs .venv (bench extra), then .venv/bin/python benchmarks/run_all.py")
    p("```")
    p("")
    p(
        "Generates the data into `.bench/` (reused by later runs), clusters, measures, and writes "
        f"`{shown}/results.json`, the PNGs next to it, this file and README's headline table. "
        "`.venv/bin/python benchmarks/bench_report.py` re-renders the doc and figures from the JSON alone. "
        "Quick try-out at small scale, written elsewhere: "
        "`.venv/bin/python benchmarks/run_all.py --sf 0.1 --skew-rows 400000 --stats-files 200 --out .bench/dev`."
    )
    p("")
    p("## Data and strategies")
    p("")
    for ds in res["datasets"].values():
        i = ds["input"]
        types = ", ".join(f"`{c}` {t}" for c, t in ds["types"].items())
        p(
            f"- **{ds['title']}**: {i['rows']:,} rows, {i['files']} input files, {i['bytes'] / 2**20:.0f} MB; "
            f"clustering columns {types}; reference rewrite key `{ds['key']}`."
        )
    p(
        '  - lineitem comes from `tpchgen-cli` in generation order (`l_orderkey`): files are "naturally" clustered '
        "by order key only. The skewed table (`benchmarks/skewed_data.py`) is in random order: `user_id` "
        "Zipf-distributed (exponent 1.1 over 1M users, hot users scattered over 0..10^9), `status` 0 in 90% of rows, "
        "`customer` strings `customer-000000000000-<n>` (22-character common prefix, not zero-padded)."
    )
    p(
        "- **Strategies**, all cut into the same number of files: *as generated* (input); *linear*, *zorder*, "
        "*hilbert*: `spark_jobs.cluster_table.run_cluster(spark, ClusterOptions(columns=..., curve=..., num_files=N))`; "
        + (
            "*hilbert (ours, Delta)* ("
            + ", ".join(ds["title"] for ds in res["datasets"].values() if _ours_delta(ds))
            + '): the same job with `curve="hilbert"` on the input written as a Delta table '
            "(`ClusterOptions(table=<Delta table root>, ...)`): Spark reads the files of the log's version and "
            "writes the clustered files, delta-rs commits them on the driver; its files are the log's after the "
            "commit (`DeltaTable.file_uris()`); "
            if any(_ours_delta(ds) for ds in res["datasets"].values())
            else ""
        )
        + "*delta-rs z_order*: `write_deltalake` of the input, then `DeltaTable.optimize.z_order(columns, "
        "target_size=input bytes / N)`, timed; delta-rs writes its own compression so that run makes a different "
        "number of files, and untimed `z_order` re-runs (up to 3) with the target scaled re-cut the same curve order "
        "into N +- N/32 files for the query figures (file counts are in the tables)."
        + (
            " Both Delta strategies start from copies of one Delta table (untimed: one `write_deltalake` append per input file) "
            "and each commits its rewrite as one Delta transaction."
            if any(
                _ours_delta(ds) and (ds.get("delta_rs") or {}).get("started_from") for ds in res["datasets"].values()
            )
            else ""
        )
    )
    p("")
    p("## Headline")
    p("")
    lines += headline_table(res)
    p(
        "Share of files = mean over the queries of (files the pruning evaluator keeps / files). Point queries draw "
        "values uniformly over rows; the 3-column range covers 20% of rows per column. "
        "Ideal for point queries on one of d clustering columns with N files: about N^(-1/d) "
        "(64 files, 3 columns: 0.25), but never below the files that actually hold the value."
    )
    p("")
    p("## Files read by point and range queries")
    p("")
    p(
        "Counted by the project's pruning evaluator (`airflow_zorder.core.skipping.pruning.prune`) over each layout's "
        "footer statistics (`airflow_zorder.core.stats.footer_stats.read_footers_parallel`). Each range query is `c BETWEEN lo AND hi` "
        "with `lo`, `hi` sample quantiles covering the stated share of rows at a random position; on a skewed "
        "column a range that meets a hot value covers more rows than its nominal share. Multi-column "
        "predicates AND the columns (equalities take the values of one drawn row, so a match exists)."
    )
    p("")
    tot_q = sum(ds["num_queries"] * len(ds.get("layouts", {})) for ds in res["datasets"].values())
    p(
        f"**Cross-check with DuckDB.** Every query on every layout ({tot_q:,} query x layout pairs) was also run "
        "in DuckDB on the layout's rows loaded into a native table with their file name (not through "
        "`read_parquet`'s own footer pruning), counting matching rows per file. "
        + (
            "**No file the evaluator pruned held a matching row.**"
            if res["violations"] == 0
            else f"**{res['violations']} pruned files held matching rows** (see `results.json`, `violations`)."
        )
        + " The black dashes in the figures are the files that do hold a matching row: no min/max pruning can "
        "read fewer."
    )
    p("")
    for name, ds in res["datasets"].items():
        lays = _layouts(ds)
        p(f"### {ds['title']}")
        p("")
        p(f"![files read, {name}]({rel}/files_read_{name}.png)")
        p("")
        p(
            "Mean files read per query (in parentheses: files holding a matching row, per DuckDB); "
            f"{ds['num_queries']} queries per layout."
        )
        p("")
        hdr = ["query", "matching rows (mean)"] + [f"{LABEL[k]} ({ds['layouts'][k]['files']})" for k in lays]
        lines += md_header(hdr)
        for f in ds["families"]:
            first = ds["layouts"][lays[0]]["families"][f]
            cells = [_fam_label(f, True).replace("|", "\\|"), f"{first.get('matching_rows', 0):,.0f}"]
            for k in lays:
                fr = ds["layouts"][k]["families"][f]
                cells.append(f"{fr['files_read']:.1f} ({fr.get('files_with_match', float('nan')):.1f})")
            p("| " + " | ".join(cells) + " |")
        p("")
    p("### Where our curves lose")
    p("")
    lines += findings(res)
    p("")
    p(
        "How to read these: a layout can beat the N^(1-1/d) ideal on one column only by giving up the others. "
        "A linear sort is perfect for its leading column and useless for the rest. delta-rs interleaves the raw "
        f"bytes of the values rather than their ranks ([design.md]({design}#how-the-clustering-job-rewrites-a-table)), so a column whose high bits vary (lineitem's "
        "`l_shipdate` next to small `l_partkey`/`l_suppkey` integers, the skewed table's `user_id` spread over "
        "0..10^9) takes over the curve, and strings sharing a long prefix (`customer-000000000000-...`) contribute "
        "nothing distinguishing at all. Our curves interleave range ids from sampled quantiles, so every column "
        "gets its share; on the mostly-one-value `status` no layout can do much, since 90% of the rows hold one "
        "value."
    )
    p("")
    p("## Query time in DuckDB")
    p("")
    p(
        f"`SELECT count(*), sum(<payload>) FROM read_parquet([layout's files]) WHERE <predicate>`, the first "
        f"{res['args'].get('timed_queries', 10)} queries of each family, one untimed warm-up round, then rounds of all of them; median ms per query over "
        f"{res['args']['repeat']} rounds. Files are in the OS page cache: this is CPU time of decoding what is not "
        "skipped, not disk time."
    )
    p("")
    p(
        "DuckDB skips by the min/max of each **row group**, not of the file: a file with several row groups can "
        "skip parts of itself, and a layout whose files are one row group each (as here) skips exactly as the file "
        "figures above say. Row groups per layout: "
        + "; ".join(
            f"{ds['title']}: " + ", ".join(f"{LABEL[k]} {ds['layouts'][k]['row_groups']}" for k in _layouts(ds))
            for ds in res["datasets"].values()
        )
        + ". Spark writes one row group per 128 MB (`parquet.block.size`), so a 512 MB target file holds about 4; "
        "sorting each file by the curve key keeps its row groups narrow too."
    )
    p("")
    for name, ds in res["datasets"].items():
        lays = _layouts(ds)
        p(f"![DuckDB query time, {name}]({rel}/duckdb_time_{name}.png)")
        p("")
        hdr = ["query (ms)"] + [LABEL[k] for k in lays]
        lines += md_header(hdr)
        for f in ds["timed_families"]:
            p(
                "| "
                + " | ".join(
                    [_fam_label(f, True)] + [_f(ds["layouts"][k]["duckdb_ms"][f]["median_ms"], ".1f") for k in lays]
                )
                + " |"
            )
        p("")
    p("## Clustering cost")
    p("")
    p(f"![clustering cost]({rel}/clustering_cost.png)")
    p("")
    p(
        "Wall time of each rewrite against the reference rewrite of the same data in the same SparkSession: "
        "read, `repartitionByRange(N, key).sortWithinPartitions(key)`, write (`bench_cluster.run_baseline`), "
        "run before, between and after our jobs (the _italic_ row: their mean, and in parentheses the lowest and "
        "highest run against it); each job's ratio is to the mean of the "
        "reference runs just before and after it, so load that changes during the run shifts both sides alike "
        "(delta-rs, run after the session stopped: to the mean of all reference runs). Every strategy runs "
        "`run_all.py --rounds` times: its row is the median round (wall s, CPU s, memory) and the median ratio, "
        "with the lowest and highest round's ratio in parentheses. Our jobs' wall time is the whole "
        "`run_cluster` call: counting, sampling, planning, the write, verification (row count + checksum) and the "
        "commit. An untimed warm-up (`bench_cluster.warm_up`) runs each job once on 4 input files first, so no "
        "timed job pays code generation and JIT alone. CPU s = user + system seconds of the Python driver, the JVM "
        "and its Python workers. Memory: peak RSS of the driver JVM during the job (a full GC at each job's start "
        "lets G1 return memory, so each peak is mostly that job's own), and its peak heap use (MemoryPoolMXBean "
        "peaks reset at the start; includes garbage not yet collected); delta-rs runs in its own Python process "
        "(`run_all.py --delta-child`), whose peak RSS is given. The JVM has a 4 GB heap limit, so its RSS says how "
        "much of it Spark used, not what it needed at the least."
    )
    p("")
    for name, ds in res["datasets"].items():
        rows = cost_rows(ds)
        if not rows:
            continue
        p(f"**{ds['title']}**")
        p("")
        p(
            "| strategy | wall s | vs reference | CPU s | vs reference | peak RSS MB | vs reference | peak JVM heap MB | vs reference | load1 at end |"
        )
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            name = LABEL.get(r["strategy"], r["strategy"])
            if r["kind"] == "reference":
                name = f"_{name}_"
            p(
                f"| {name} | {r['wall_s']:.1f} | {ratio_cell(r['ratio'], r['ratio_range'])} | {r['cpu_s']:.0f} | "
                f"{ratio_cell(r['cpu_ratio'], r['cpu_range'])} | "
                f"{r['rss_mb']:.0f}{' (process)' if r['kind'] == 'delta' else ''} | {r['rss_ratio']:.2f}x | "
                f"{_f(r['heap_mb'], '.0f')} | {_f(r['heap_ratio']) + 'x' if r['heap_ratio'] else '–'} | {r['load1']:.1f} |"
            )
        dr = ds.get("delta_rs") or {}
        if "write" in dr:
            p("")
            note = (
                f"delta-rs: `write_deltalake` of the input first, {dr['write']['wall_s']:.1f} s (not in the ratio); "
                f"the timed `z_order` made {dr.get('timed_run_files')} files"
            )
            if dr.get("match_target_size"):
                note += (
                    f"; re-cut (untimed) with target {dr['match_target_size']:,} bytes into "
                    f"{len(dr['live_files'])} files for the query figures"
                )
            p(note + ".")
        elif "error" in dr:
            p(f"(delta-rs failed: {dr['error']})")
        for line in delta_notes(ds):
            p("")
            p(line)
        p("")
        phases = {c: d.get("phases", {}) for c, d in ds["clustering"]["curves"].items()}
        if any(phases.values()):
            p(
                "Phases of our jobs (s, from the job's result): "
                + "; ".join(
                    f"{LABEL.get(c, c)}: "
                    + ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in ph.items() if isinstance(v, (int, float)))
                    for c, ph in phases.items()
                )
            )
            p("")
    p("## Statistics collection vs DuckDB `parquet_metadata()`")
    p("")
    p(f"![stats time]({rel}/stats_time.png)")
    p("")
    p(
        "Per-file min/max/null count/value count of every column of the same files: DuckDB's "
        "`parquet_metadata()` fetched as Arrow; the statistics job's footer step "
        "(`spark_jobs.stats_collection.footers.read_footers_distributed`: file list parallelised, footers read on the Spark executors, "
        "collected; `bench_stats.footer_vs_duckdb`); the core's in-process reader "
        "(`airflow_zorder.core.stats.footer_stats.read_footers_parallel`, threads). Interleaved, 3 rounds, median; the first footer-step "
        "call (which starts Python workers) apart."
    )
    p("")
    p(
        "| files | columns | DuckDB s | footer step s | vs DuckDB | core reader s | vs DuckDB | footer step, first call s |"
    )
    p("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, s in res.get("stats", {}).items():
        d, f, c = _med(s["duckdb_s"]), _med(s["footer_step_s"]), _med(s.get("core_reader_s", []))
        p(
            f"| {n} ({s['files']}) | {s['columns']} | {d:.3f} | {f:.3f} | {f / d:.2f}x | {_f(c, '.3f')} | "
            f"{_f(c / d)}x | {s['footer_step_cold_s']:.2f} |"
        )
    p("")
    ds_ = res.get("delta_sensor")
    if ds_:
        p("## The sensor's decision on a Delta table's log")
        p("")
        if "error" in ds_:
            p(f"Not measured in this run: {ds_['error']}")
        else:
            t = ds_["table"]
            p(
                f'`FileOverlapSensor`\'s decision (`FileStatsHook(table).evaluate(columns=["a", "b", "c"])`) on a local '
                f"Delta table of {t['files']:,} files written by delta-rs in {t['version'] + 1} commits, read through its "
                f"`_delta_log/` with no Spark and no stats job (`benchmarks/bench_delta_sensor.py`, in its own process). "
                f"*cold*: a new hook (the whole log read, the stats rows built, the metrics computed); *warm*: the same "
                f"hook again (no new commit); *signal*: the trigger's change check. Medians of {ds_.get('repeat', 5)}; "
                f"the process's first call (Airflow's imports included) apart. Goal: a cold decision under "
                f"{ds_.get('goal_s', 1.0):g} s."
                + (f" Measured at {ds_['measured_utc'].replace('T', ' ')[:16]} UTC." if ds_.get("measured_utc") else "")
            )
            p("")
            p(
                "| log | decision | cold s | log read s | stats rows s | warm s | signal ms | first call s | peak RSS MB |"
            )
            p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for name, label in (("no_checkpoint", "JSON commits only"), ("checkpoint", "with a checkpoint")):
                r = ds_.get(name)
                if r:
                    p(
                        f"| {label} | {r['decision']} | {r['cold_s']:.3f} | {r['log_read_s']:.3f} | {r['rows_s']:.3f} | "
                        f"{r['warm_s']:.3f} | {r['signal_s'] * 1000:.1f} | {r['first_call_s']:.2f} | {r['peak_rss_mb']:.0f} |"
                    )
            p("")
    if res.get("s3", {}).get("jobs"):
        lines += s3_section(res["s3"]) + ([""] if _has_incremental(res) else [])
    if res.get("engines", {}).get("lines"):  # issue #51's section (bench_engines.py), kept when the doc is re-rendered
        from bench_engines import section as engines_section

        lines += engines_section(res["engines"], rel) + ([""] if _has_incremental(res) else [])
    if res.get("scale", {}).get("scales"):  # bench_scale.py's section (issue #51)
        from bench_scale import section as scale_section

        lines += scale_section(res["scale"], rel).splitlines() + ([""] if _has_incremental(res) else [])
    if _has_incremental(res):
        lines += incremental_section(res["incremental"], rel)
    if res.get("fleet", {}).get("sim"):  # issue 52's section, rendered by its own script (benchmarks/sim_fleet.py)
        from sim_fleet import fleet_section

        lines += [""] + fleet_section(res["fleet"])
    if res.get("advisor", {}).get("tables"):  # bench_advisor.py's own section (issue #53)
        from bench_advisor import advisor_section

        lines += ["", *advisor_section(res["advisor"])]
    if res.get("hudi", {}).get("layouts"):  # issue #50: its own script renders its section
        import bench_hudi

        lines += ["", *bench_hudi.render(res["hudi"]).splitlines()]
    if res.get("hudi_sensor", {}).get("measured"):  # issue #50: watching 10,000 file groups (its own script)
        from bench_hudi_sensor import hudi_sensor_section

        lines += ["", *hudi_sensor_section(res["hudi_sensor"])]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- incremental re-clustering (issues #25, #37)

INC_START, INC_END = "<!-- bench:incremental:start -->", "<!-- bench:incremental:end -->"
INC_FIGURE = "incremental_days.png"
INC_COLORS = {
    "never": "#9e9e9e",
    "full": "#1f77b4",
    "incremental": "#2ca02c",
    "liquid": "#ff7f0e",
    "hudi": "#9467bd",
    "delta-rs": "#d62728",
    "delta": "#8c564b",
    "hudi-inline": "#e377c2",
    "optimum": "#000000",
}
INC_LABEL = {
    "never": "never",
    "full": "full (ours, today's job)",
    "incremental": "incremental (ours)",
    "liquid": "liquid (Delta Liquid-like)",
    "hudi": "hudi (Hudi size-based)",
    "delta-rs": "delta-rs z_order",
    "delta": "Delta Lake OPTIMIZE ZORDER BY",
    "hudi-inline": "Hudi inline clustering",
    "optimum": "simulator's optimum, run by the job",
}
INC_SCENARIO_TITLE = {
    "uniform": "uniform appends",
    "date": "appends in a fresh date slab",
    "partitioned": "date-partitioned table with late files",
}
INC_TOP = ("started_utc", "finished_utc", "wall_s", "load_start", "load_end", "machine", "spark_version", "command")


def _has_incremental(res: dict) -> bool:
    """The results hold figures of the incremental benchmark (``bench_incremental.py``)."""
    inc = res.get("incremental")
    return isinstance(inc, dict) and ("scenarios" in inc or "policies" in inc)


def inc_scenarios(inc: dict) -> dict[str, dict]:
    """The per-scenario results; a result of the one-scenario benchmark (before issue #37) as ``uniform``."""
    if "scenarios" in inc:
        return inc["scenarios"]
    return {"uniform": {k: v for k, v in inc.items() if k not in INC_TOP}}


def _cumulative(xs: list[float]) -> list[float]:
    out, s = [], 0.0
    for x in xs:
        s += x
        out.append(s)
    return out


def fig_incremental(inc: dict, path: Path) -> None:
    """Per scenario (columns): the worst column's ratio to ideal after each day per policy (top, log scale) and the
    cumulative bytes each policy rewrote (bottom), with the simulator's optimum at the last day."""
    import numpy as np

    plt = _plt()
    scs = inc_scenarios(inc)
    n = max(len(scs), 1)
    fig, axes = plt.subplots(2, n, figsize=(6 * n, 8), squeeze=False)
    thr = inc["health_policy"]["max_ratio_to_ideal"]
    for j, (name, sc) in enumerate(scs.items()):
        ax0, ax1 = axes[0][j], axes[1][j]
        pols = sc["policies"]
        days = np.arange(1, len(next(iter(pols.values()))["days"]) + 1) if pols else np.arange(1, 2)
        for pol, p in pols.items():
            ax0.plot(
                days,
                [d["worst"] for d in p["days"]],
                marker="o",
                ms=3,
                color=INC_COLORS.get(pol),
                label=INC_LABEL.get(pol, pol),
            )
            mb = _cumulative([d["bytes_rewritten"] / 2**20 for d in p["days"]])
            ax1.plot(days, mb, marker="o", ms=3, color=INC_COLORS.get(pol), label=INC_LABEL.get(pol, pol))
        ax0.axhline(thr, color="black", ls="--", lw=1, label=f"sensor threshold {thr:g}")
        ax0.set_yscale("log")
        top = max([thr] + [d["worst"] for p in pols.values() for d in p["days"]])
        ticks = [t for t in (1, 1.25, 1.5, 2, 3, 5, 8) if t <= top * 1.05]
        ax0.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax0.minorticks_off()
        ax0.set_title(f"{INC_SCENARIO_TITLE.get(name, name)}: worst ratio after the day (log)", fontsize=10)
        ax0.grid(alpha=0.3)
        full = (pols.get("full") or {}).get("totals", {}).get("bytes_rewritten")
        opt = (sc.get("simulator") or {}).get("optimum_vs_full")
        if full and opt is not None:
            ax1.plot(
                [days[-1]],
                [opt * full / 2**20],
                marker="*",
                ms=14,
                color="black",
                ls="none",
                label=f"simulator's optimum ({opt:.3f} of full's bytes)",
            )
        ax1.set_title(f"{INC_SCENARIO_TITLE.get(name, name)}: cumulative MB rewritten", fontsize=10)
        ax1.set_xlabel("day")
        ax1.grid(alpha=0.3)
        if j == 0:
            ax0.set_ylabel("worst column: expected files read / ideal")
            ax1.set_ylabel("MB rewritten (cumulative)")
        ax0.legend(fontsize=7)
        ax1.legend(fontsize=7)
    fig.suptitle(f"lineitem SF{inc['sf']:g}, {inc['days']} days", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mb(b: float) -> str:
    return f"{b / 2**20:,.1f}"


def _scenario_setup(name: str, sc: dict, inc: dict) -> str:
    """One paragraph on the scenario's data."""
    b, ap = sc["base"], sc["appends"]
    cols = ", ".join("`" + c + "`" for c in inc["columns"])
    if name == "partitioned":
        return (
            f"**Setup.** A date-partitioned Parquet table (Hive directories `ingest_day=NNN`): {b.get('partitions')} "
            f"base partitions of {ap['rows_per_day']:,} rows, each clustered by our job into "
            f"{b.get('files_per_partition')} files on {cols} ({b['files']} files, {_mb(b['bytes'])} MB, mean file "
            f"{_mb(b['mean_file_bytes'])} MB). Each day a new partition of the same size arrives clustered into "
            f"{ap['part_files']} files ({ap.get('ingest', 'by the ingest')}), and {ap['late_files']} late files of "
            f"{ap['late_rows']:,} unsorted rows land in older partitions (1 to {ap['late_days']} days back). "
            "Full rewrites the degraded partitions the sensor lists, whole."
        )
    date = ""
    if name == "date" and ap.get("date_slabs"):
        ds = ap["date_slabs"]
        date = (
            f" Day t's `l_shipdate` is moved into a fresh slab after the base's: `d1 + 1 + (t - 1) w + ((l_shipdate - "
            f"d0) mod w)` with the base's span [d0, d1] = [{ds['d0']}, {ds['d1']}] (days since 1970) and w = "
            f"{ds['width_days']} days, as an ingestion-date column grows."
        )
    return (
        f"**Setup.** TPC-H lineitem SF{inc['sf']:g} ({b['rows']:,} rows) clustered by our job (`run_cluster`, curve "
        f"{inc['curve']}) into {b['files']} files on {cols} ({_mb(b['bytes'])} MB, mean file "
        f"{_mb(b['mean_file_bytes'])} MB): an unpartitioned Parquet table. Then {inc['days']} appends of "
        f"{ap['rows_per_day']:,} fresh rows each in {ap['files_per_day']} unsorted Parquet files with plain names: "
        f"`l_orderkey` slices of the same generated lineitem, `l_orderkey` shifted by {ap['orderkey_shift']:,}." + date
    )


def _opt_cells(sim: dict | None, name: str, n: int) -> list[str] | None:
    """The simulator's optimum as a row of the scenario's table (``n`` cells)."""
    if not sim or sim.get("optimum_vs_full") is None:
        return None
    kind = "optimum" if sim.get("exact") else "best schedule found"
    cells = [
        f"*simulator's {kind} (`sim_incremental.py`, its own scale)*",
        "",
        "",
        _f(sim["optimum_vs_full"], ".3f"),
        _f(sim.get("optimum_wa"), ".3f"),
    ]
    return cells + [""] * (n - len(cells))


def _replayed_line(rep: dict) -> str:
    """Which schedule the optimum policy ran, when not the simulator's default optimum (``--replay``)."""
    flags = rep.get("flags") or {}
    on = [f"--{k.replace('_', '-')}" for k, v in flags.items() if v is True] + [
        f"--dp-merges {v}" for k, v in flags.items() if k == "dp_merges" and v != 1
    ]
    return (
        "The optimum policy ran the schedule of another run of the simulator (`--replay`): seed "
        f"{rep.get('seed')}, raw weight {rep.get('raw_weight')}" + (f", {' '.join(on)}" if on else "") + "."
    )


def _simulator_line(name: str, sim: dict | None) -> str | None:
    """The simulator's figures for the scenario, to set the Spark ones against (a model, at its own scale)."""
    if not sim or not sim.get("policies"):
        return None
    pols = sim["policies"]
    parts = [
        f"{INC_LABEL.get(k, k)} {_f(pols[k].get('vs_full'), '.3f')}"
        for k in ("incremental", "liquid", "hudi")
        if k in pols and pols[k].get("vs_full") is not None
    ]
    kind = "optimum" if sim.get("exact") else "best schedule found by its DP (beam search)"
    text = (
        f"The simulator (`{sim.get('command', 'sim_incremental.py')}`): {kind} {_f(sim.get('optimum_vs_full'), '.3f')} "
        "of its full policy's bytes" + (f"; its {', '.join(parts)}" if parts else "")
    )
    if name == "partitioned" and sim.get("full_wa_over_optimum"):
        text += f"; its full policy's write amplification is {sim['full_wa_over_optimum']:.0f}x the optimum's"
    return text + "."


def _scenario_table(name: str, sc: dict) -> list[str]:
    hdr = [
        "policy",
        "runs",
        "MB rewritten",
        "bytes vs full's",
        "write amplification",
        "clustering s",
        "mean worst ratio",
        "max worst ratio",
        "mean bytes ratio",
        "max bytes ratio",
        "largest file written / target",
        "mean file / target (end)",
        "files at the end",
        "rows",
    ]
    lines = md_header(hdr)
    rc = sc.get("rows_check", {})
    for pol, p in sc["policies"].items():
        t = p["totals"]
        ok = (rc.get(pol) or {}).get("equal")
        cells = [
            INC_LABEL.get(pol, pol),
            str(t["runs"]),
            _mb(t["bytes_rewritten"]),
            _f(t.get("vs_full"), ".3f"),
            _f(t["write_amplification"], ".3f"),
            _f(t["clustering_s"], ".1f"),
            _f(t["mean_worst_ratio"], ".3f"),
            _f(t["max_worst_ratio"], ".3f"),
            _f(t.get("mean_worst_bytes_ratio"), ".3f"),
            _f(t.get("max_worst_bytes_ratio"), ".3f"),
            _f(t.get("largest_written_over_target"), ".2f"),
            _f(t.get("final_mean_file_over_target"), ".2f"),
            str(t["final_files"]),
            "equal" if ok else "**differ**",
        ]
        if pol == "incremental":
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    opt = _opt_cells(sc.get("simulator"), name, len(hdr))
    if opt:
        lines.append("| " + " | ".join(opt) + " |")
    return lines


def _scenario_days(sc: dict, columns: list[str]) -> list[str]:
    per_hdr = ["day", "policy", "decision", "action", "MB rewritten", "files rewritten", "files"]
    per_hdr += [f"`{c}` ratio" for c in columns] + ["worst bytes ratio", "job s", "stats s"]
    lines = md_header(per_hdr)
    pols = sc["policies"]
    n = len(next(iter(pols.values()))["days"]) if pols else 0
    for i in range(n):
        for name, pol in pols.items():
            d = pol["days"][i]
            lines.append(
                "| "
                + " | ".join(
                    [str(d["day"]), INC_LABEL.get(name, name), d["decision"], d["action"], _mb(d["bytes_rewritten"])]
                    + [str(d["files_rewritten"]), str(d["files"])]
                    + [_f(d["ratios"].get(c), ".3f") for c in columns]
                    + [_f(d.get("worst_bytes"), ".3f"), f"{d['job_s']:.1f}"]
                    + [f"{d['stats_s'] + d.get('stats_after_s', 0.0):.1f}"]
                )
                + " |"
            )
    return lines


def incremental_section(inc: dict, rel: str) -> list[str]:
    """The doc's section on issues #25/#37's benchmark (between its markers), from ``results["incremental"]``."""
    lines = [INC_START]
    p = lines.append
    hp = inc["health_policy"]
    scs = inc_scenarios(inc)
    p(f"## Incremental re-clustering: {inc['days']} daily appends")
    p("")
    p(f"![worst ratio and cumulative bytes rewritten per day]({rel}/{INC_FIGURE})")
    p("")
    p(
        f"`benchmarks/bench_incremental.py` ({inc['started_utc']} -> {inc['finished_utc']}, {inc['wall_s'] / 60:.1f} "
        f"minutes, load average {inc['load_start']:.1f} at the start and {inc['load_end']:.1f} at the end, "
        f"{inc['machine']['cpus']} CPUs; Spark {inc.get('spark_version', '?')} `local[2]`, deltalake "
        f"{inc['machine']['deltalake']}): `{inc['command'].strip()}`. Scenarios: "
        + ", ".join(f"{INC_SCENARIO_TITLE.get(n, n)} ({s.get('wall_s', 0) / 60:.1f} min)" for n, s in scs.items())
        + "."
    )
    p("")
    p(
        "**Loop, every day, per policy:** append; the stats job (`run_collect`, the 3 columns); the sensor's decision "
        f"(`recluster_policy.evaluate`, `HealthPolicy(max_ratio_to_ideal={hp['max_ratio_to_ideal']:g}, "
        "min_interval_since_cluster=None, max_stats_age=None, min_files=1, target_file_size=<the target>)`, d = 3; "
        "the same for every policy; it scores a column by the larger of its files ratio and its sized ratio, files over 1.25x the target counted as several); the "
        "policy's run; stats again after a run; per column the expected files a point query reads over its ideal "
        "(`ratio_to_ideal`) and the expected bytes it reads over its ideal (`bytes_ratio_to_ideal`, files sized by the "
        "target), both from `metrics.table_clustering` (the sensor's measure), worst over partitions."
    )
    p("")
    first = next(iter(scs.values()), {})
    ip, anc = first.get("incremental_params") or {}, first.get("anchor_params") or {}
    p(
        "- *never*: appends only;\n"
        "- *full*: on `recluster`, `run_cluster(..., incremental=False)`, today's job: every file of the table (of "
        "each degraded partition the sensor lists, when partitioned), `target_file_size` = the base's mean file size;\n"
        "- *incremental*: on `recluster`, `run_cluster(..., incremental=True, plan=<the sensor's plan, as JSON>)`, the "
        f"same target size; `IncrementalParams(target_ratio={_opt_g(ip.get('target_ratio'))}, min_new_files="
        f"{ip.get('min_new_files')}, ...)` with the defaults' sizes in units of the target file size (target_ratio "
        "None: the sensor passes its threshold as `trigger_ratio`, the goal is 0.05 below it and plans are amortised; "
        "[docs/incremental.md](incremental.md#the-rule));\n"
        + (
            f"- *liquid* (Delta Liquid-like, daily, ignores the sensor): once a unit's never-clustered files reach "
            f"{anc.get('liquid_min_target_files', 4):g} target files of bytes, they and the unit's unsealed cubes (one "
            f"previous liquid run's files, below {anc.get('liquid_seal_target_files', 8):g} target files) are clustered "
            "into one new cube; sealed cubes are never merged again;\n"
            f"- *hudi* (Hudi size-based, every {anc.get('hudi_every_days', 4)} days, ignores the sensor): each unit's "
            f"files below {anc.get('hudi_small_target', 0.3):g} x target, binned up to "
            f"{anc.get('hudi_group_target', 2):g} target sizes, each bin of 2 files or more clustered among itself;\n"
            if anc
            else ""
        )
        + "- *delta-rs* (when run): a Delta copy of the base, `DeltaTable.optimize.z_order(columns, target_size=<the "
        "Delta base's mean file size>)` in a child process whenever the sensor says `recluster`;\n"
        "- *Delta Lake OPTIMIZE ZORDER BY* (when run): the same Delta copy and appends, Delta Lake's own `OPTIMIZE "
        "delta.`<table>` ZORDER BY (<columns>)` (Spark, Delta's jars) whenever the sensor says `recluster`, files "
        "sized to the Delta base's mean file size (`spark.databricks.delta.optimize.maxFileSize`);\n"
        "- *Hudi inline clustering* (when run; uniform appends; `benchmarks/hudi_inline_policy.py`, Hudi 1.2.0 on "
        "Spark 3.5.8): the base written as a copy-on-write Hudi table, each day's files inserted (small-file packing "
        "off), Hudi's inline clustering on its own schedule at its defaults (every 4 commits, every file under its "
        "300 MB small-file limit), sorted along the same curve on the 3 columns with Hudi's default curve build "
        "(`direct`: raw values on the curve; ours on a Hudi table sets `sample`, ranges of sampled values) and cut at "
        "the Hudi base's mean file size (Hudi's files carry its meta columns and a bloom filter, so its bytes are "
        "larger than the Parquet base's for the same rows); bytes from the table's files, ratios from their footers "
        "as the sensor reads a Hudi table;\n"
        "- *simulator's optimum, run by the job* (when run; uniform appends): the schedule of the simulator's "
        "optimum below (it knows every future append), each of its merges run by the same job as a plan document "
        "with the optimum's file count and column order, whatever the sensor says: what the optimum's schedule "
        "costs in Spark's bytes.\n\n"
        "liquid's and hudi's runs are plan documents in the sensor's format, run by the same job through its "
        "given-plan path (every file into `round(bytes / target)` files). Job time: the wall time of the clustering "
        "call; stats collection apart. Write amplification = bytes rewritten / bytes appended. The simulator's "
        "optimum is `benchmarks/sim_incremental.py`'s (the least bytes any whole-group schedule spends under the "
        "same daily cap, by dynamic programming; a model at its own scale, not a Spark run; see "
        "[incremental.md](incremental.md#the-optimum-method-and-bound)), as a fraction of its full policy's bytes."
    )
    p("")
    for name, sc in scs.items():
        p(f"### {INC_SCENARIO_TITLE.get(name, name).capitalize()}")
        p("")
        p(_scenario_setup(name, sc, inc))
        p("")
        lines.extend(_scenario_table(name, sc))
        p("")
        sim_line = _simulator_line(name, sc.get("simulator"))
        if sim_line:
            p(sim_line)
            p("")
        if sc.get("replayed"):
            p(_replayed_line(sc["replayed"]))
            p("")
        for line in _added_runs_lines(sc):
            p(line)
            p("")
        rc = sc.get("rows_check", {})
        exp = rc.get("expected") or {}
        p(
            f"Rows after the last day: count and DuckDB `sum(hash(l_orderkey, l_linenumber))` of every table against "
            f"the base plus the appends ({exp.get('rows', 0):,} rows): "
            + ("all equal." if rc.get("ok") else "**a table differs** (see `results.json`, `incremental`).")
        )
        p("")
        cmp_ = sc.get("comparison")
        if cmp_:
            wa = cmp_.get("wa_ratio_full_over_incremental")
            if cmp_.get("wa_incremental_zero"):
                wa_text = ", full's write amplification over incremental's: incremental rewrote nothing"
            else:
                wa_text = f", full's write amplification over incremental's {wa:.1f}x" if wa is not None else ""
            issue = "#37" if "wa_ratio_full_over_incremental" in cmp_ else "#25"  # results before #37: #25's goals
            p(
                f"**Incremental against full:** {_f(cmp_['bytes_ratio'], '.3f')} of the bytes rewritten, "
                f"{_f(cmp_['time_ratio'], '.3f')} of the clustering time{wa_text}, mean worst ratio "
                f"{cmp_['mean_worst_delta']:+.3f}. Issue {issue}'s goals:"
            )
            p("")
            for g in cmp_["goals"]:
                word = "N/A (full rewrote nothing)" if g["pass"] is None else "PASS" if g["pass"] else "FAIL"
                p(f"- {word}: {g['goal']}")
            p("")
        p(f"<details><summary>Per day and policy ({INC_SCENARIO_TITLE.get(name, name)})</summary>")
        p("")
        lines.extend(_scenario_days(sc, inc["columns"]))
        p("")
        p("</details>")
        p("")
    p(
        "Reproduce: `.venv/bin/python benchmarks/bench_incremental.py --sf 1 --merge-into "
        "docs/benchmarks/results.json --doc docs/benchmarks.md` reruns this benchmark alone and rewrites only this "
        "section and its figure. `make bench` runs it at a smaller scale (`run_all.py --incremental-sf`, "
        "`--incremental-days`) and keeps the figures here when they are of a larger scale."
    )
    lines += ["", INC_END]
    return lines


def _opt_g(x: float | None) -> str:
    """A number in ``:g`` form, or None."""
    return "None" if x is None else f"{x:g}"


def _added_runs_lines(sc: dict) -> list[str]:
    """The policies measured in later runs beside a scenario's others (``--add-policies``, ``hudi_inline_policy``):
    when and how each ran, and a Hudi policy's bytes in the Parquet base's terms."""
    out = []
    for name, run in sorted(sc.get("added_runs", {}).items(), key=lambda kv: kv[1]["started_utc"]):
        pol = sc["policies"].get(name, {})
        line = (
            f"*{INC_LABEL.get(name, name)}* ran later, beside these figures: {run['started_utc']}, `{run['command']}`"
        )
        if pol.get("spark"):
            line += f" (Spark {pol['spark']})"
        scale = pol.get("base_bytes_over_parquet")
        t = pol.get("totals", {})
        if scale and t.get("vs_full") is not None:
            line += (
                f". Its base holds {scale:.2f}x the Parquet base's bytes for the same rows, so its "
                f"{t['vs_full']:.3f} of full's bytes is {t['vs_full'] / scale:.3f} in the Parquet base's "
                "terms"
            )
        out.append(line + ".")
    return out


def render_incremental(inc: dict, out_dir: Path, doc: Path | None = None) -> None:
    """Only the incremental benchmark's figure (into ``out_dir``) and, with ``doc``, its section of ``doc``.

    The section replaces the one between :data:`INC_START` and :data:`INC_END`, or is appended when the doc has
    none; nothing else in the doc changes.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig_incremental(inc, out_dir / INC_FIGURE)
    if doc is None:
        return
    doc = Path(doc)
    rel = os.path.relpath(out_dir, doc.parent)
    splice_section(doc, INC_START, INC_END, "\n".join(incremental_section(inc, rel)))


# --------------------------------------------------------------------------- the jobs on S3 and on local disk (issue #48)

S3_START, S3_END = "<!-- bench:s3:start -->", "<!-- bench:s3:end -->"
S3_JOBS = {"stats": "stats run", "cluster": "re-cluster (full)"}


def _s3_time(d: dict) -> str:
    return f"{d['median_s']:.2f} ({d['min_s']:.2f}–{d['max_s']:.2f})"


def _s3_requests(req: dict) -> str:
    kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(req["kinds"].items(), key=lambda kv: -kv[1]) if n)
    areas = ", ".join(f"{k} {n:,}" for k, n in sorted(req["areas"].items(), key=lambda kv: -kv[1]) if n)
    return f"{req['total']:,} ({kinds}; {req['not_found']:,} of them answered 404); by area: {areas}"


def s3_section(s3: dict) -> list[str]:
    """The doc's section on the jobs on S3 (moto) beside local disk (between its markers), from ``results["s3"]``."""
    lines = [S3_START]
    p = lines.append
    t, m, jobs = s3["table"], s3["machine"], s3["jobs"]
    runs = 2 * s3["rounds"]
    p("## The jobs on S3 (moto) and on local disk")
    p("")
    dirty = m.get("git_modified") or []
    p(
        f"`benchmarks/bench_s3.py` at git `{m['git_head']}`"
        + (f" (uncommitted changes to {', '.join(f'`{x}`' for x in dirty)})" if dirty else "")
        + f" ({s3['started_utc'][:16].replace('T', ' ')} UTC, {s3['wall_s'] / 60:.1f} minutes, {m['cpus']} CPUs, "
        f"load average {s3['load_start']:.1f} at the start and {s3['load_end']:.1f} at the end): {t['title']} "
        f"({t['rows']:,} rows, {t['files']} files, {t['bytes'] / 2**20:.1f} MB), the same files on local disk and in "
        "a bucket. For each store, on a fresh copy of the files: a stats run (no previous stats: every footer is read), "
        f"then a full re-cluster ({t['curve']} on {', '.join(f'`{c}`' for c in t['columns'])}) into {t['files']} files. "
        f"{_n(s3['rounds'], 'round')} after an untimed warm-up, both stores back to back in each (which goes first "
        "alternates), in one SparkSession (`local[2]`). Times: the median round, the lowest and highest in "
        "parentheses; S3 / local: the median of the rounds' ratios, their range in parentheses. Rows: counted by "
        "Spark after every run."
    )
    p("")
    p("| job | local s | S3 (moto) s | S3 / local | rows |")
    p("| --- | --- | --- | --- | --- |")
    for name, label in S3_JOBS.items():
        j = jobs.get(name)
        if not j:
            continue
        ok = j["local"]["rows_ok"] and j["s3"]["rows_ok"]
        p(
            f"| {label} | {_s3_time(j['local'])} | {_s3_time(j['s3'])} | {j['ratio']:.2f}x "
            f"({j['range'][0]:.2f}–{j['range'][1]:.2f}) | {t['rows']:,}, "
            + (f"equal after each of {runs} runs |" if ok else "**differ** |")
        )
    p("")
    c = s3.get("connector", {})
    p(
        f"S3 here is a moto {m['versions'].get('moto', '?')} server on loopback: a Python server on the same "
        f"{m['cpus']} CPUs, reached through S3A (Spark {s3.get('spark_version', '?')}, "
        + " + ".join(f"`{x}`" for x in c.get("artifacts", []))
        + "). So the ratios bound the S3 protocol's request overhead (listings, HEADs, a copy and a delete for every "
        "rename), not real S3's latency or bandwidth."
    )
    p("")
    p("Where the time goes (the jobs' own phases, medians over the rounds):")
    p("")
    p("| job: phase | local s | S3 (moto) s | S3 − local s |")
    p("| --- | --- | --- | --- |")
    for name, label in S3_JOBS.items():
        j = jobs.get(name)
        if not j:
            continue
        lb, sb = j["local"]["breakdown"], j["s3"]["breakdown"]
        for k in dict.fromkeys([*lb, *sb]):
            a, b = lb.get(k, 0.0), sb.get(k, 0.0)
            if max(a, b) >= 0.01:
                p(f"| {label.split(' ')[0]}: {k} | {a:.2f} | {b:.2f} | {b - a:+.2f} |")
    p("")
    p("S3 requests per run (moto's request log, median round):")
    p("")
    for name, label in S3_JOBS.items():
        req = jobs.get(name, {}).get("s3", {}).get("requests")
        if req:
            p(f"- {label}: {_s3_requests(req)}.")
    p("")
    p(
        "Reproduce: `make bench-s3` (`.venv/bin/python benchmarks/bench_s3.py --merge-into docs/benchmarks/results.json "
        "--doc docs/benchmarks.md`) reruns this benchmark alone and rewrites only this section; it needs the connector "
        "jars (`make jars`). `make bench` runs it too (`run_all.py`, `--no-s3` skips it)."
    )
    lines += ["", S3_END]
    return lines


def render_s3(s3: dict, doc: Path) -> None:
    """Only the S3 section of ``doc``: replaces the one between :data:`S3_START` and :data:`S3_END`, else goes
    before the incremental section (where :func:`render_doc` puts it), else at the end; nothing else changes."""
    splice_section(Path(doc), S3_START, S3_END, "\n".join(s3_section(s3)), before=INC_START)


def update_readme(readme: Path, res: dict, doc: Path) -> bool:
    text = readme.read_text()
    if START not in text or END not in text:
        return False
    rel = os.path.relpath(doc, readme.parent)
    body = [START, ""]
    engines = res.get("engines", {}).get("lines")
    body += headline_table(res, first_only=bool(engines))  # the other data sets' tables: in the doc
    n = rounds_of(res)
    body.append(
        f"`make bench` at git `{res['machine']['git_head']}` ({res['started_utc'][:16].replace('T', ' ')} UTC, "
        f"{res['machine']['cpus']} CPUs, load average {res['load']['start'][0]:.1f} at the start). Files read are "
        "exact; each time ratio is "
        + (f"the median of {n} rounds, with the lowest and highest round in parentheses" if n > 1 else "from one run")
        + f". DuckDB cross-check, query times, memory and statistics timings: [{rel}]({rel})."
    )
    if engines:  # issue #51's table (bench_engines.py)
        from bench_engines import headline as engines_headline

        body += ["", *engines_headline(res["engines"], rel)]
    body += ["", END]
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + "\n".join(body) + tail
    if new != text:
        readme.write_text(new)
    return True


def render(res: dict, out_dir: Path, doc: Path, readme: Path | None = None) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, ds in res["datasets"].items():
        if ds.get("layouts"):
            fig_files_read(name, ds, out_dir / f"files_read_{name}.png")
            fig_duckdb_time(name, ds, out_dir / f"duckdb_time_{name}.png")
    fig_cost(res, out_dir / "clustering_cost.png")
    if res.get("stats"):
        fig_stats(res, out_dir / "stats_time.png")
    if _has_incremental(res):
        fig_incremental(res["incremental"], out_dir / INC_FIGURE)
    if res.get("engines", {}).get("lines"):
        import bench_engines

        for name in res["engines"]["datasets"]:
            bench_engines.figure(res["engines"], name, out_dir / bench_engines.FIGURE.format(name))
    if res.get("scale", {}).get("scales"):
        import bench_scale

        bench_scale.figure(res["scale"], out_dir / bench_scale.FIGURE)
    doc = Path(doc)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render_doc(res, out_dir, doc))
    if readme is not None:
        update_readme(Path(readme), res, doc)


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default=str(repo / "docs" / "benchmarks" / "results.json"))
    ap.add_argument(
        "--doc",
        default=None,
        help="default: docs/benchmarks.md for docs/benchmarks/results.json, else benchmarks.md next to the JSON",
    )
    ap.add_argument(
        "--readme",
        action="store_true",
        help="also update README's headline block (the default for docs/benchmarks/results.json)",
    )
    a = ap.parse_args(argv)
    results = Path(a.results).resolve()
    res = json.loads(results.read_text())
    default = results.parent == (repo / "docs" / "benchmarks").resolve()
    doc = Path(a.doc) if a.doc else (repo / "docs" / "benchmarks.md" if default else results.parent / "benchmarks.md")
    readme = repo / "README.md" if a.readme or (default and not a.doc) else None
    render(res, results.parent, doc, readme)
    print(f"wrote {doc}{' and README.md' if readme else ''} and the figures in {results.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
