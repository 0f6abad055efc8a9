"""Token counting with the consuming model's own tokenizer, offline (docs/memory.md#token-counting).

- OpenAI models: tiktoken's encoding for the model (o200k for the 4o family, cl100k for gpt-4...);
  tiktoken reads litellm's bundled copies of its encodings, so nothing is downloaded;
- the bundled local model: the GGUF's own vocabulary (llama.cpp tokenizes without generating);
- otherwise litellm's counter: its bundled tokenizers (Anthropic, DeepSeek), else cl100k, as
  litellm itself would (it is never asked for tokenizers it would download).

Counts are taken once per message and tokenizer, when the message is written or first read by a
model with that tokenizer, and stored with the message (``HistoryMessage.token_counts``).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# Per-message framing tokens of chat formats (role, separators), as in OpenAI's counting guide.
MESSAGE_OVERHEAD = 4
LOCAL_PROVIDER_KIND = "local"
LOCAL_MODEL_PREFIX = "skein-local/"


@dataclass(frozen=True)
class Tokenizer:
    """A named way of counting; the name keys the counts stored with each message."""

    name: str
    count_text: Callable[[str], int]

    def count_message(self, role: str, content: str) -> int:
        return self.count_text(content) + MESSAGE_OVERHEAD


def _point_tiktoken_at_bundled_encodings() -> None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)


@lru_cache(maxsize=8)
def _tiktoken(encoding_name: str) -> Tokenizer:
    _point_tiktoken_at_bundled_encodings()
    import tiktoken

    encoding = tiktoken.get_encoding(encoding_name)
    return Tokenizer(name=encoding_name.removesuffix("_base"), count_text=lambda text: len(encoding.encode(text, disallowed_special=())))


def default_tokenizer() -> Tokenizer:
    """cl100k: for a history no model has read yet, and models whose tokenizer nobody ships."""
    return _tiktoken("cl100k_base")


@lru_cache(maxsize=1)
def _gguf() -> Tokenizer:
    """The bundled local model's vocabulary (the GGUF file's), loaded without its weights."""
    from llama_cpp import Llama

    from providers.local_model import model_path

    path = model_path()
    vocab = Llama(model_path=str(path), vocab_only=True, n_ctx=64, verbose=False)
    atexit.register(vocab.close)  # freed before interpreter teardown, not by __del__ during it
    lock = threading.Lock()  # llama.cpp objects are not documented as thread-safe

    def count(text: str) -> int:
        with lock:
            return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    return Tokenizer(name=f"gguf:{path.stem}"[:60], count_text=count)


@lru_cache(maxsize=64)
def _litellm(model: str) -> Tokenizer | None:
    """litellm's own bundled tokenizer for ``model``, if it has one it would not download."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm
    from litellm.utils import huggingface_tokenizer_kind

    kind = huggingface_tokenizer_kind(model)
    if kind not in ("anthropic", "deepseek"):
        return None
    return Tokenizer(name=kind, count_text=lambda text: litellm.token_counter(model=model, text=text, count_response_tokens=True))


@lru_cache(maxsize=256)
def tokenizer_for(model: str | None, provider_kind: str | None = None) -> Tokenizer:
    """The tokenizer of ``model`` (a litellm model string, or a name on a provider of that kind)."""
    if not model:
        return default_tokenizer()
    if provider_kind == LOCAL_PROVIDER_KIND or model.startswith(LOCAL_MODEL_PREFIX):
        try:
            return _gguf()
        except Exception:  # the local model is not installed: count as litellm would
            return default_tokenizer()
    bare = model.split("/", 1)[1] if "/" in model else model
    _point_tiktoken_at_bundled_encodings()
    from tiktoken.model import encoding_name_for_model

    for name in (model, bare):
        try:
            return _tiktoken(encoding_name_for_model(name))
        except KeyError:
            continue
    return _litellm(model) or _litellm(bare) or default_tokenizer()


def count_text(text: str) -> int:
    """cl100k tokens (the default tokenizer), for callers that have no model."""
    return default_tokenizer().count_text(text)


def count_message(role: str, content: str) -> int:
    return default_tokenizer().count_message(role, content)


def cut_text(tokenizer: Tokenizer, text: str, max_tokens: int) -> tuple[str, bool]:
    """The longest beginning of ``text`` within ``max_tokens`` of ``tokenizer``, and whether it was
    cut. Counts a bounded number of prefixes (a binary search), whatever the tokenizer."""
    if tokenizer.count_text(text) <= max_tokens:
        return text, False
    # No token is longer than this many characters in practice: the search starts from a prefix
    # that surely holds more than ``max_tokens`` tokens, so a huge text costs little more to cut.
    low, high = 0, min(len(text), max_tokens * 32)
    while tokenizer.count_text(text[:high]) <= max_tokens and high < len(text):
        low, high = high, min(len(text), high * 2)
    while low < high:
        middle = (low + high + 1) // 2
        if tokenizer.count_text(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low], True
