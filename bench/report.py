"""RESULTS.md from results.json: one table of every figure, then each benchmark's notes."""

from __future__ import annotations

from .common import fmt_num


def _met(value) -> str:
    return {True: "✅ yes", False: "❌ no", None: ""}[value]


def _ratio(row: dict) -> str:
    if row.get("ratio") is None:
        return "—"
    return f"{row['ratio']:.1f}× ({row['ratio_label']})" if row.get("ratio_label") else f"{row['ratio']:.1f}×"


def _merged(meta: dict, payload: dict) -> str:
    """For a run of some benchmarks (``--only``) merged into earlier results: which rows it measured."""
    ran = meta.get("ran")
    earlier = [b["name"] for b in payload["benchmarks"] if ran is not None and b["name"] not in ran]
    if not earlier:
        return ""
    return (
        f" This run measured {', '.join(f'`{n}`' for n in ran)}; the other rows come from earlier runs "
        "(each section says when, where it was recorded)."
    )


def render(payload: dict) -> str:
    meta = payload["meta"]
    lines = [
        "# Skein benchmarks" + (" (quick smoke run: sizes too small to mean anything)" if meta.get("quick") else ""),
        "",
        f"Run {meta.get('started')} → {meta.get('finished', '…')}, commit `{meta.get('commit')}`, "
        f"{meta.get('cpus')} CPUs, Python {meta.get('python')}; load average at start "
        f"{', '.join(f'{x:.2f}' for x in meta.get('load_average_at_start', []))}"
        + (f", at end {', '.join(f'{x:.2f}' for x in meta['load_average_at_end'])}" if meta.get("load_average_at_end") else "")
        + ". Produced by `python -m bench`"
        + (" --quick" if meta.get("quick") else "")
        + "; details in `results.json`."
        + _merged(meta, payload),
        "",
        "| benchmark | Skein | baseline | ratio | goal | met? |",
        "|---|---|---|---|---|---|",
    ]
    for bench in payload["benchmarks"]:
        if bench["status"] != "ok" and not bench["rows"]:
            lines.append(f"| **{bench['title']}** | {bench['status']}: {bench['message']} | | | | |")
            continue
        for row in bench["rows"]:
            lines.append(
                f"| {row['benchmark']} | {fmt_num(row['skein'], row['unit'])} | {fmt_num(row['baseline'], row['unit'])} | "
                f"{_ratio(row)} | {row.get('goal', '')} | {_met(row.get('met'))} |"
            )
    lines.append("")
    for bench in payload["benchmarks"]:
        lines.append(f"## {bench['title']} (`{bench['name']}`): {bench['status']}")
        lines.append("")
        measured = bench.get("details", {}).get("measured")
        if measured:
            lines.append(
                f"Measured {measured['at']}, commit `{measured['commit']}`, load average before "
                f"{', '.join(f'{x:.2f}' for x in measured['load_average_before'])}."
            )
            lines.append("")
        if bench.get("message"):
            lines.append(bench["message"])
            lines.append("")
        if bench.get("details", {}).get("markdown"):
            lines.append(bench["details"]["markdown"])
            lines.append("")
        notes = bench.get("details", {}).get("notes") or []
        for note in notes:
            lines.append(f"- {note}")
        for row in bench["rows"]:
            if row.get("note"):
                lines.append(f"- {row['benchmark']}: {row['note']}")
        if notes or any(r.get("note") for r in bench["rows"]):
            lines.append("")
    return "\n".join(lines) + "\n"
