"""JVM options the clustering job wants on every Spark JVM, shared by the jobs, the operators and the benchmarks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# HotSpot leaves methods over 8,000 bytes of bytecode interpreted unless told otherwise. The JVM key
# expressions (spark_jobs/jvm_keys.py) fit one whole-stage-codegen method that is larger than that;
# with this flag it is compiled and runs at full speed. Without it the job cuts the code into small
# stages instead (correct, ~15-25% slower on lineitem SF1).
JIT_OPTION = "-XX:-DontCompileHugeMethods"
JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def with_jit_option(java_options: str | None) -> str:
    """``java_options`` with :data:`JIT_OPTION` appended (once)."""
    opts = (java_options or "").strip()
    return opts if JIT_OPTION in opts.split() else f"{opts} {JIT_OPTION}".strip()


def with_jit_conf(conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """A Spark conf dict whose driver and executor Java options include :data:`JIT_OPTION` (user options kept)."""
    out = dict(conf or {})
    for key in JAVA_OPTION_KEYS:
        out[key] = with_jit_option(str(out.get(key) or ""))
    return out
