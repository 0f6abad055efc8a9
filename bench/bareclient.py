"""The throughput baseline's load generator: ``--threads`` threads in this process calling
``litellm.completion(stream=True)`` against the fake server in a loop for the window, as a Celery
worker's thread pool would, without Skein around the call. Prints one JSON line of results."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def bare_stream(base_url: str, messages: list[dict], **extra):
    """What Skein's llm node asks litellm for (providers/llm.py), without Skein around it: the
    baseline of every benchmark that compares with a bare call. ``extra``: more of litellm's
    arguments (``tools``)."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm.completion(
        model="openai/agent-model",
        api_base=base_url,
        api_key="k",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        timeout=60,
        max_retries=0,
        **extra,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--warmup", type=float, required=True)
    parser.add_argument("--window", type=float, required=True)
    parser.add_argument("--offset", type=int, default=0)
    args = parser.parse_args()
    import litellm  # noqa: F401  (imported before the start, not inside the window)

    records = []
    lock = threading.Lock()
    print("ready", flush=True)
    start_at = float(input())  # time.time() to start at: all processes together, after their imports
    while time.time() < start_at:
        time.sleep(0.005)
    started = time.monotonic()
    window_end = started + args.warmup + args.window

    def loop(index: int) -> None:
        turn = 0
        while time.monotonic() < window_end:
            message = f"c{args.offset + index} t{turn}"
            t0 = time.monotonic()
            ok = False
            try:
                response = bare_stream(
                    args.base_url, [{"role": "system", "content": "You are a test bot."}, {"role": "user", "content": message}]
                )
                text = "".join(c.choices[0].delta.content or "" for c in response if c.choices and c.choices[0].delta)
                ok = text == f"echo: {message}"
            except Exception:  # noqa: BLE001
                ok = False
            t1 = time.monotonic()
            with lock:
                records.append((t0 - started, t1 - started, ok))
            turn += 1

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"warmup": args.warmup, "window": args.window, "records": records}), flush=True)


if __name__ == "__main__":
    main()
