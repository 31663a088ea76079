"""The commands that read results: export the report, compare two result folders."""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from ..report.compare import compare_results, identical_line, shift_line, skipped_lines, to_text, verdict_counts
from ..report.export import ExportError, build_report
from ..results.store import record_files
from ..stats.judge import Judge
from . import EXIT_OK, EXIT_RUN_ERROR


def report(args: argparse.Namespace) -> int:
    if not record_files(args.results_dir):
        raise ConfigError(f"no results in {args.results_dir}: run `make sweep` (or `python -m bench sweep`) first")
    try:
        outputs = build_report(args.results_dir, args.out, pdf=not args.no_pdf)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_ERROR
    for path in outputs:
        print(f"wrote {path}")
    return EXIT_OK


def compare(args: argparse.Namespace) -> int:
    table = compare_results(args.a, args.b, Judge())  # the default margin: +-5%
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(to_text(table))
    if same := identical_line(table):
        print(same)
    print(verdict_counts(table))
    print(shift_line(table))
    for line in skipped_lines(table):  # never silently: a newer checkout's records are not in the table
        print(line)
    if args.csv:
        print(f"wrote {args.csv}")
    return EXIT_OK
