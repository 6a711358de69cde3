"""Print (and save) the point-query layout report of a table; with --before, print a before/after table."""

from __future__ import annotations

import argparse
import json

from airflow_zorder.evaluation.layout_report import point_query_report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("table")
    p.add_argument("columns")
    p.add_argument("--json", required=True, help="where to save this report")
    p.add_argument("--before", help="an earlier report to compare with")
    p.add_argument("--result", help="the clustering job's JSON result")
    a = p.parse_args()
    cols = a.columns.split(",")
    before = json.load(open(a.before)) if a.before else None
    report = point_query_report(a.table, cols, n_values=1000, seed=1)
    json.dump(report, open(a.json, "w"))
    if not before:
        print(f"sample table {a.table}: {report['files']} files")
        return
    res = json.load(open(a.result)) if a.result else {}
    print(
        f"\nre-clustered {a.table} with {res.get('curve')} on {', '.join(cols)} "
        f"in {res.get('duration_s')} s (run {res.get('run_id')}, status {res.get('status')})"
    )
    print(
        f"rows {res.get('before', {}).get('rows')} -> {res.get('after', {}).get('rows')} (verified by count + checksum)"
    )
    print(f"files {before['files']} -> {report['files']}\n")
    print(f"{'column':<14}{'files read before':>20}{'after':>10}")
    for c in cols:
        print(f"{c:<14}{before['fractions'][c]:>19.1%}{report['fractions'][c]:>10.1%}")
    print("\n(mean fraction of files whose min/max contains a value drawn from the data)")


if __name__ == "__main__":
    main()
