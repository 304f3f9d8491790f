"""The real chat back end: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) run by llama-cpp-python.

The prompt is rendered by the GGUF's own chat template (with `tools=`), tokens are generated one by
one and streamed as text, and tool calls the model writes (``<tool_call>`` tags or ```` ```json ````
fences) become native tool calls. No grammars on any path (chat, tools, Ollama `format`, OpenAI
`response_format`/`tool_choice`): a tool schema only ever reaches the prompt as text, so no schema can
crash the process, and a request for constrained output is refused with a 400 (capabilities.py).

One `Llama` object serves every request on one worker thread. llama-cpp-python reuses the longest
token prefix shared with the previous call, so a fixed system prompt + tool block is read once; once
such a prefix has been computed its KV state is saved under the state folder and restored at load,
so a restarted server is warm too.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib.util
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .capabilities import largest_tool_note, refuse_constraint
from .conversation import BackendError, ChatEvent, ChatInput, Finish, Message, TextDelta, ToolCalls
from .kv_state import StateStore
from .model_file import MODEL_FILE_NAME, is_verified
from .request_log import LogEntry
from .tool_call_parser import ToolCallStream

log = logging.getLogger(__name__)

END_OF_TURN = "<|im_end|>"


def real_backend_problem(gguf: Path) -> str | None:
    """Why the real back end cannot run here, or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "the Python package llama-cpp-python is not installed (pip install 'llama-cpp-python==0.3.36')"
    if not gguf.is_file():
        return f"the model file {gguf} is missing (make setup builds it: python -m stacgis_model_server.model_file)"
    if gguf.name == MODEL_FILE_NAME and not is_verified(gguf):
        return (
            f"the model file {gguf} has not been verified "
            "(python -m stacgis_model_server.model_file --verify-only checks its size and SHA-256)"
        )
    return None


@contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Load models with llama.cpp's extra buffer types (weight repacking, AMX) turned off.

    Builds for CPUs that report AMX use AMX matrix kernels for repacked weights; in these sandboxed
    VMs those kernels crash the process on the first decode.
    """
    import llama_cpp.llama_cpp as low_level

    original = low_level.llama_model_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = defaults
    try:
        yield
    finally:
        low_level.llama_model_default_params = original


def template_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Messages in the shape Hugging Face chat templates expect (arguments as objects)."""
    rendered: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {"type": "function", "id": call.id, "function": {"name": call.name, "arguments": call.arguments}}
                for call in message.tool_calls
            ]
        if message.role == "tool" and message.tool_name:
            item["name"] = message.tool_name
        rendered.append(item)
    return rendered


def common_prefix(left: Any, right: list[int]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count


@dataclass(frozen=True)
class LlamaConfig:
    gguf: Path
    threads: int
    threads_batch: int
    context: int
    max_predict: int
    default_predict: int
    state_dir: Path | None
    state_min_tokens: int
    state_keep: int


@dataclass
class _Failure:
    error: BaseException


_END_OF_STREAM = object()


class LlamaBackend:
    name = "llama"

    def __init__(self, config: LlamaConfig) -> None:
        self.config = config
        self.gguf = config.gguf
        self.context = config.context
        self._llama: Any = None
        self._formatter: Any = None
        self._end_of_turn: int | None = None
        self._load_lock = threading.Lock()
        self.load_seconds = 0.0
        self.restored_tokens = 0
        self.states = (
            StateStore(config.state_dir, f"{config.gguf.stem}-{config.gguf.stat().st_size}-ctx{config.context}")
            if config.state_dir is not None and config.gguf.is_file()
            else None
        )
        # One worker thread: llama.cpp contexts are not thread-safe, and queued requests run in order.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> Any:
        with self._load_lock:
            if self._llama is None:
                from llama_cpp import Llama
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                started = time.monotonic()
                with _without_weight_repacking():
                    llama = Llama(
                        model_path=str(self.gguf),
                        n_ctx=self.context,
                        n_threads=self.config.threads,
                        n_threads_batch=self.config.threads_batch,
                        verbose=False,
                    )
                template = llama.metadata.get("tokenizer.chat_template")
                if not template:
                    raise BackendError(500, f"the model file {self.gguf} has no tokenizer.chat_template")
                eos = llama.token_eos()
                bos = llama.token_bos()
                self._formatter = Jinja2ChatFormatter(
                    template=template,
                    eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                    bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                )
                marker = llama.tokenize(END_OF_TURN.encode(), add_bos=False, special=True)
                self._end_of_turn = marker[0] if len(marker) == 1 else None
                if self.states is not None:
                    self.restored_tokens = self.states.restore(llama)
                self._llama = llama
                self.load_seconds = time.monotonic() - started
                log.info(
                    "loaded %s in %.2f s (%d cached prompt tokens restored)",
                    self.gguf.name,
                    self.load_seconds,
                    self.restored_tokens,
                )
            return self._llama

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def generate(self, chat: ChatInput, entry: LogEntry) -> AsyncIterator[ChatEvent]:
        if chat.wants_thinking:
            # What Ollama answers for a model without a thinking capability.
            raise BackendError(400, f'"{chat.model}" does not support thinking')
        if chat.constraints:
            raise refuse_constraint(chat.constraints[0], self.name)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                if not cancelled.is_set():
                    self._run(chat, entry, emit, cancelled)
            except BaseException as error:  # noqa: BLE001 - handed to the stream's reader, which raises it
                emit(_Failure(error))
            finally:
                emit(_END_OF_STREAM)

        loop.run_in_executor(self._executor, work)
        try:
            while True:
                item = await queue.get()
                if item is _END_OF_STREAM:
                    return
                if isinstance(item, _Failure):
                    if isinstance(item.error, BackendError):
                        raise item.error
                    log.error("llama.cpp failed", exc_info=item.error)
                    raise BackendError(500, f"llama.cpp failed: {type(item.error).__name__}: {item.error}")
                yield cast(ChatEvent, item)
        finally:
            # Stops the worker at its next token when the client went away.
            cancelled.set()

    # Everything below runs on the worker thread.

    def render(self, chat: ChatInput) -> str:
        try:
            result = self._formatter(messages=template_messages(chat.messages), tools=list(chat.tools) or None)
        except Exception as error:  # noqa: BLE001 - the template is the model's Jinja: anything can fail
            raise BackendError(400, f"the chat template cannot render this request: {error}") from None
        return str(result.prompt)

    def _budget(self, requested: int | None, room: int) -> int:
        # Ollama's -1 (no limit) and -2 (fill the window) become the cap.
        if requested is None:
            wanted = min(self.config.default_predict, self.config.max_predict)
        elif requested < 0:
            wanted = self.config.max_predict
        else:
            wanted = max(1, min(requested, self.config.max_predict))
        return max(1, min(wanted, room))

    def _run(
        self, chat: ChatInput, entry: LogEntry, emit: Callable[[object], None], cancelled: threading.Event
    ) -> None:
        load_started = time.monotonic()
        was_loaded = self.loaded
        llama = self.load()
        load_ns = 0 if was_loaded else int((time.monotonic() - load_started) * 1e9)

        prompt = self.render(chat)
        tokens: list[int] = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        window = min(chat.options.num_ctx or self.context, self.context)
        if len(tokens) >= window:
            raise BackendError(
                400,
                f"the prompt is {len(tokens)} tokens, more than the context window of {window} (options.num_ctx)"
                + largest_tool_note(chat.tools),
            )
        budget = self._budget(chat.options.num_predict, window - len(tokens))
        reused = common_prefix(llama.input_ids[: llama.n_tokens], tokens)
        prefix = self._prefix_length(tokens)

        temperature = 0.8 if chat.options.temperature is None else max(0.0, chat.options.temperature)
        if chat.options.seed is not None:
            llama.set_seed(chat.options.seed)
        parser = ToolCallStream(set(chat.tool_names) if chat.tools else None)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = [stop for stop in chat.options.stop if stop]
        text = ""
        count = 0
        reason = "stop"
        started = time.monotonic_ns()
        prompt_ns = 0
        generator = llama.generate(
            tokens,
            temp=temperature,
            top_k=chat.options.top_k if chat.options.top_k is not None else 40,
            top_p=chat.options.top_p if chat.options.top_p is not None else 0.95,
            repeat_penalty=1.0,
        )
        try:
            for token in generator:
                if count == 0:
                    prompt_ns = time.monotonic_ns() - started
                if self._is_eog(token):
                    break
                count += 1
                entry.generated = count
                piece = decoder.decode(llama.detokenize([token], special=True))
                text += piece
                stop_at = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
                if stop_at >= 0:
                    # Show what came before the stop string, nothing after.
                    piece = piece[: max(0, len(piece) - (len(text) - stop_at))]
                shown = parser.feed(piece)
                if shown:
                    emit(TextDelta(content=shown))
                if stop_at >= 0 or cancelled.is_set():
                    break
                if count >= budget:
                    reason = "length"
                    break
        finally:
            generator.close()
        shown = parser.feed(decoder.decode(b"", final=True)) + parser.finish()
        if shown:
            emit(TextDelta(content=shown))
        if parser.calls:
            emit(ToolCalls(tuple(parser.calls)))
        emit(
            Finish(
                done_reason=reason,
                prompt_tokens=len(tokens),
                completion_tokens=count,
                load_duration_ns=load_ns,
                prompt_duration_ns=prompt_ns,
            )
        )
        if self.states is not None and prefix >= self.config.state_min_tokens and reused < prefix:
            # The long shared prefix was just computed: keep it on disk, after this answer went out.
            self._executor.submit(self._save_state, tokens[:prefix])

    def _is_eog(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._llama._model.vocab, token))

    def _prefix_length(self, tokens: list[int]) -> int:
        """Tokens up to the end of the first message (the system prompt with the tool block)."""
        if self._end_of_turn is None or self._end_of_turn not in tokens:
            return 0
        return tokens.index(self._end_of_turn) + 1

    def _save_state(self, prefix: list[int]) -> None:
        llama = self._llama
        if self.states is None or common_prefix(llama.input_ids[: llama.n_tokens], prefix) < len(prefix):
            return
        try:
            self.states.save(llama)
        except Exception:
            log.exception("saving the prompt cache state failed")


__all__ = ["LlamaBackend", "LlamaConfig", "common_prefix", "real_backend_problem", "template_messages"]
