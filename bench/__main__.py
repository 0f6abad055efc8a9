"""``python -m bench [--quick] [--only NAME ...]``: run the benchmarks, write results and a table.

Full runs write ``bench/results.json`` and ``bench/RESULTS.md``; ``--quick`` (the CI smoke run:
tiny sizes, every code path, no claims about speed) writes ``bench/results-quick.json`` and
``bench/RESULTS-quick.md``, so a smoke run never overwrites measured figures. ``--only`` reruns
some benchmarks and merges them into the existing results.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
import time
import traceback

from .common import BENCH_DIR, KEEP_LOGS, PROFILE, Cleanup, Result, dump_json, git_commit, load_average, log, machine_info, pg_drop
from .report import render

BENCHMARKS = {
    "memory": "bench.memory_cost",
    "overhead": "bench.overhead",
    "agent": "bench.agent",
    "throughput": "bench.throughput",
    "streaming": "bench.streaming",
    "editor": "bench.editor",
    "memory_quality": "bench.memory_quality",
    "langflow": "bench.peer_langflow",
}
PEERS = {"langflow"}  # run only when asked (``--peer``): they install another product
NEEDS_PG = {"memory", "overhead", "agent", "throughput", "streaming", "memory_quality", "langflow"}


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, a few seconds each")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(BENCHMARKS),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--peer",
        action="append",
        choices=sorted(PEERS),
        default=[],
        help="also run a peer product side by side (installs it in a venv of its own)",
    )
    parser.add_argument("--profile", action="store_true", help="run py-spy on Skein's processes (bench/profiles/)")
    parser.add_argument("--keep-logs", action="store_true", help="keep the stacks' process logs (temp directories)")
    parser.add_argument("--keep-db", action="store_true", help="keep the bench PostgreSQL database afterwards")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _terminate)
    PROFILE["enabled"] = args.profile
    KEEP_LOGS["enabled"] = args.keep_logs
    selected = (args.only or [name for name in BENCHMARKS if name not in PEERS]) + args.peer
    suffix = "-quick" if args.quick else ""
    json_path = BENCH_DIR / f"results{suffix}.json"
    md_path = BENCH_DIR / f"RESULTS{suffix}.md"

    previous = {}
    if args.only and json_path.exists():
        try:
            previous = {b["name"]: b for b in json.loads(json_path.read_text()).get("benchmarks", [])}
        except (ValueError, KeyError):
            previous = {}

    meta = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "quick": args.quick,
        "commit": git_commit(),
        "ran": [name for name in BENCHMARKS if name in selected],
        **machine_info(),
    }
    results: dict[str, dict] = dict(previous)
    failed = False
    try:
        if NEEDS_PG & set(selected):
            from .common import BENCH_DB, pg_prepare_in_process, pg_recreate

            log(f"preparing PostgreSQL database {BENCH_DB}")
            pg_recreate()
            pg_prepare_in_process()
        for name in BENCHMARKS:
            if name not in selected:
                continue
            module = importlib.import_module(BENCHMARKS[name])
            log(f"=== {name}: {module.TITLE} (load {load_average()[0]:.2f})")
            started = time.monotonic()
            # Each benchmark says when and on what it was measured: ``--only`` merges runs of other days.
            measured = {"at": time.strftime("%Y-%m-%d %H:%M"), "commit": meta["commit"], "load_average_before": load_average()}
            with Cleanup.scope():
                try:
                    result: Result = module.run(args.quick)
                except Exception as exc:
                    traceback.print_exc()
                    from .stacks import dump_logs

                    dump_logs()
                    result = Result(name, module.TITLE, status="failed", message=f"{type(exc).__name__}: {exc}")
                    failed = True
            result.details["seconds"] = round(time.monotonic() - started, 1)
            result.details["measured"] = measured
            result.details["load_average_after"] = load_average()
            results[name] = result.as_dict()
            log(f"=== {name}: {result.status} in {result.details['seconds']}s {result.message}")
            # Write as we go: a long run leaves what it measured even if interrupted later.
            _write(json_path, md_path, meta, results)
    finally:
        Cleanup.pop_all()
        if NEEDS_PG & set(selected) and not args.keep_db:
            from django.db import connections

            connections.close_all()
            pg_drop()
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    meta["load_average_at_end"] = load_average()
    _write(json_path, md_path, meta, results)
    log(f"wrote {json_path.relative_to(BENCH_DIR.parent)} and {md_path.relative_to(BENCH_DIR.parent)}")
    print(md_path.read_text())
    return 1 if failed else 0


def _write(json_path, md_path, meta, results) -> None:
    ordered = [results[n] for n in BENCHMARKS if n in results]
    payload = {"meta": meta, "benchmarks": ordered}
    dump_json(json_path, payload)
    md_path.write_text(render(payload))


if __name__ == "__main__":
    sys.exit(main())
