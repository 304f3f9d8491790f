"""Saved KV-cache states of the real model, so a restarted server starts with its prompt prefix warm.

A state is the llama.cpp context state (the KV cache of the tokens read so far) plus those tokens,
written as an uncompressed .npz. `Llama.save_state()` would also copy the logits of the last batch
(about 300 MB for a 152k vocabulary) that a prefix reuse never reads, so the low-level calls are used.
Files are keyed by model file and context size (a state only fits the context it came from); only
the newest `keep` are kept.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


class StateStore:
    def __init__(self, folder: Path, key: str, keep: int = 2) -> None:
        self.folder = folder
        self.key = key
        self.keep = keep

    def files(self) -> list[Path]:
        """This key's states, newest first."""
        if not self.folder.is_dir():
            return []
        found = [path for path in self.folder.glob(f"{self.key}.*.npz") if path.is_file()]
        return sorted(found, key=lambda path: path.stat().st_mtime_ns, reverse=True)

    def save(self, llama: Any) -> Path:
        import llama_cpp

        started = time.monotonic()
        size = int(llama_cpp.llama_state_get_size(llama.ctx))
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(llama.ctx, buffer, size))
        if written > size:
            raise RuntimeError(f"llama.cpp wrote {written} state bytes into a buffer of {size}")
        tokens = np.array(llama.input_ids[: llama.n_tokens], dtype=np.int32)
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{self.key}.{time.time_ns()}.npz"
        temporary = target.with_name(f".{target.name}.partial")
        with temporary.open("wb") as sink:
            np.savez(sink, tokens=tokens, state=np.frombuffer(memoryview(buffer), dtype=np.uint8, count=written))
        os.replace(temporary, target)
        for old in self.files()[self.keep :]:
            old.unlink(missing_ok=True)
        log.info(
            "saved the prompt cache (%d tokens, %.0f MB) to %s in %.1f s",
            len(tokens),
            written / 1e6,
            target.name,
            time.monotonic() - started,
        )
        return target

    def restore(self, llama: Any) -> int:
        """Load the newest state that fits; the number of cached tokens (0 when none could be used)."""
        import llama_cpp

        for path in self.files():
            try:
                with np.load(path) as data:
                    tokens = data["tokens"]
                    state = np.ascontiguousarray(data["state"])
                if len(tokens) >= llama.n_ctx():
                    raise ValueError(f"{len(tokens)} tokens do not fit a context of {llama.n_ctx()}")
                buffer = (ctypes.c_uint8 * state.size).from_buffer(state.data)
                if int(llama_cpp.llama_state_set_data(llama.ctx, buffer, state.size)) != state.size:
                    raise ValueError("llama.cpp refused the state")
            except Exception as error:  # noqa: BLE001 - any failed restore means start with an empty cache
                log.warning("cannot restore the prompt cache from %s: %s", path.name, error)
                path.unlink(missing_ok=True)
                # A half-applied state must not be mistaken for a cache: start empty.
                llama._ctx.kv_cache_clear()
                llama.reset()
                continue
            llama.input_ids[: len(tokens)] = tokens
            llama.n_tokens = len(tokens)
            # The logits of the last token are not part of the state: the next call re-reads one token.
            llama._requires_eval = True
            log.info("restored the prompt cache (%d tokens) from %s", len(tokens), path.name)
            return len(tokens)
        return 0
