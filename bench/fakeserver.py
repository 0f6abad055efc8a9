"""The fake model server (tests/fakellm.py) in a process of its own: prints its base URL, then
answers every request with ``--text`` after ``--delay`` seconds until it is terminated."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--token-delay", type=float, default=0.0)
    parser.add_argument("--text", default="")
    args = parser.parse_args()

    from bench.common import start_fake_llm
    from tests.fakellm import Reply

    fake = start_fake_llm(record=False)

    def respond(request):
        # An echo of the last user message keeps every reply checkable against its transcript.
        return Reply(text=args.text or f"echo: {request.last_user}", delay=args.delay, token_delay=args.token_delay)

    fake.responder = respond
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(fake.base_url, flush=True)
    stop.wait()
    fake.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
