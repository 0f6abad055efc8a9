"""Token counting with tiktoken, offline: encodings come from litellm's bundled copies (DESIGN.md §8).

Counts are taken once, when a message is written, and stored with it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# Per-message framing tokens of chat formats (role, separators), as in OpenAI's counting guide.
MESSAGE_OVERHEAD = 4


def _point_tiktoken_at_bundled_encodings() -> None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)


@lru_cache(maxsize=1)
def _encoding():
    _point_tiktoken_at_bundled_encodings()
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_text(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_message(role: str, content: str) -> int:
    return count_text(content) + MESSAGE_OVERHEAD
