"""The command line every benchmark shares: ``--json`` for the report as JSON, ``--quick`` for a smoke run."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

Report = dict[str, Any]


def run_benchmark(
    doc: str | None,
    benchmark: Callable[[float], Coroutine[Any, Any, Report]],
    print_report: Callable[[Report], None],
    argv: Sequence[str] | None = None,
    exit_code: Callable[[Report], int] = lambda _report: 0,
) -> int:
    """Parse ``argv``, run ``benchmark(scale)`` (a tenth of the repetitions with ``--quick``), print it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quick", action="store_true", help="a tenth of the repetitions (smoke test)")
    args = parser.parse_args(argv)
    report = asyncio.run(benchmark(0.1 if args.quick else 1.0))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return exit_code(report)
