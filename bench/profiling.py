"""``--profile``: py-spy on Skein's processes while a benchmark measures them.

Each profiled process gets ``bench/profiles/<name>.txt`` (py-spy's collapsed stacks) and a summary
``<name>.top.txt``: the functions with the most samples, inclusive and self, Skein's own frames
marked. py-spy must be installed in the venv (``pip install py-spy``); it is not a dependency.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from .common import BENCH_DIR, ROOT, log

PROFILE_DIR = BENCH_DIR / "profiles"
# Skein's own packages (pyproject.toml's [tool.setuptools.packages.find]).
OWN = tuple(
    f"{package}/"
    for package in (
        "config",
        "engine",
        "core",
        "observability",
        "providers",
        "tools",
        "accounts",
        "memory",
        "workflows",
        "runs",
        "participants",
        "chat",
        "triggers",
        "widget",
        "openai_api",
        "conversation_tests",
        "demo",
    )
)


def py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


class PySpy:
    """Samples some processes between start() and stop(): by default only the thread holding the GIL
    (where Python CPU goes); with ``idle=True`` every thread, waiting ones included (where wall time goes)."""

    def __init__(self, targets: dict[str, int], *, rate: int = 250, idle: bool = False):
        self.targets = targets
        self.rate = rate
        self.idle = idle
        self.procs: list[tuple[str, subprocess.Popen, Path]] = []

    def start(self) -> None:
        binary = py_spy()
        if binary is None:
            log("profile: py-spy is not installed (pip install py-spy); not profiling")
            return
        PROFILE_DIR.mkdir(exist_ok=True)
        for name, pid in self.targets.items():
            out = PROFILE_DIR / f"{name}.txt"
            proc = subprocess.Popen(
                [
                    binary,
                    "record",
                    "--pid",
                    str(pid),
                    "--rate",
                    str(self.rate),
                    "--format",
                    "raw",
                    "--output",
                    str(out),
                    "--nonblocking",
                    "--threads",
                ]
                + (["--idle"] if self.idle else ["--gil"]),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            self.procs.append((name, proc, out))
        time.sleep(0.5)

    def stop(self) -> list[Path]:
        written = []
        for name, proc, out in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                _, err = proc.communicate()
            if out.exists():
                summary = out.with_suffix(".top.txt")
                summary.write_text(summarize_collapsed(out))
                written.append(summary)
                log(f"profile: {out.relative_to(ROOT)} and {summary.relative_to(ROOT)}")
            else:
                log(f"profile: py-spy wrote nothing for {name}: {(err or '')[-500:]}")
        self.procs = []
        return written


def _frame_name(frame: str) -> str:
    # py-spy raw frames: "function (path/to/file.py:line)"
    frame = frame.strip()
    for marker in ("/site-packages/", str(ROOT) + "/"):
        frame = frame.replace(marker, "/" if marker != str(ROOT) + "/" else "")
    return frame


def summarize_collapsed(path: Path, top: int = 45) -> str:
    inclusive: Counter = Counter()
    own_self: Counter = Counter()
    leaf: Counter = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_frame_name(f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith("thread (") and not f.startswith("process ")]
        total += n
        for frame in set(frames):
            inclusive[frame] += n
        if frames:
            leaf[frames[-1]] += n
        own = [f for f in frames if any(f"({p}" in f for p in OWN)]
        if own:
            own_self[own[-1]] += n
    if not total:
        return "no samples\n"
    lines = [f"{total} samples (active threads only)", "", "inclusive (any frame):"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    lines += ["", "Skein's innermost frame on the stack (where Skein code spends, including what it calls):"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in own_self.most_common(top)]
    lines += ["", "self (leaf frames):"]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in leaf.most_common(25)]
    return "\n".join(lines) + "\n"
