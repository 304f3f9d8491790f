from google.protobuf import struct_pb2 as _struct_pb2
from stacgis_proto.v1 import run_pb2 as _run_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentEvent(_message.Message):
    __slots__ = ("run_id", "seq", "step", "run_started", "thinking", "tool_start", "tool_result", "tool_error", "content", "approval_required", "frontend_tool", "done", "error")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    RUN_STARTED_FIELD_NUMBER: _ClassVar[int]
    THINKING_FIELD_NUMBER: _ClassVar[int]
    TOOL_START_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    TOOL_ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    FRONTEND_TOOL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    seq: int
    step: int
    run_started: RunStarted
    thinking: Thinking
    tool_start: ToolStart
    tool_result: ToolResult
    tool_error: ToolError
    content: ContentDelta
    approval_required: ApprovalRequired
    frontend_tool: FrontendTool
    done: Done
    error: Error
    def __init__(self, run_id: _Optional[str] = ..., seq: _Optional[int] = ..., step: _Optional[int] = ..., run_started: _Optional[_Union[RunStarted, _Mapping]] = ..., thinking: _Optional[_Union[Thinking, _Mapping]] = ..., tool_start: _Optional[_Union[ToolStart, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., tool_error: _Optional[_Union[ToolError, _Mapping]] = ..., content: _Optional[_Union[ContentDelta, _Mapping]] = ..., approval_required: _Optional[_Union[ApprovalRequired, _Mapping]] = ..., frontend_tool: _Optional[_Union[FrontendTool, _Mapping]] = ..., done: _Optional[_Union[Done, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class RunStarted(_message.Message):
    __slots__ = ("session_id", "model", "max_steps")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    model: str
    max_steps: int
    def __init__(self, session_id: _Optional[str] = ..., model: _Optional[str] = ..., max_steps: _Optional[int] = ...) -> None: ...

class Thinking(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ToolStart(_message.Message):
    __slots__ = ("call_id", "tool_name", "arguments", "server")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_name: str
    arguments: _struct_pb2.Struct
    server: str
    def __init__(self, call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., server: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("call_id", "tool_name", "result", "duration_ms", "truncated")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_name: str
    result: str
    duration_ms: int
    truncated: bool
    def __init__(self, call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., result: _Optional[str] = ..., duration_ms: _Optional[int] = ..., truncated: _Optional[bool] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("call_id", "tool_name", "error", "duration_ms", "kind")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_name: str
    error: str
    duration_ms: int
    kind: str
    def __init__(self, call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., error: _Optional[str] = ..., duration_ms: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class ContentDelta(_message.Message):
    __slots__ = ("text", "replace")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    text: str
    replace: bool
    def __init__(self, text: _Optional[str] = ..., replace: _Optional[bool] = ...) -> None: ...

class ApprovalRequired(_message.Message):
    __slots__ = ("approval_id", "call_id", "tool_name", "arguments", "timeout_seconds", "server", "description")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    call_id: str
    tool_name: str
    arguments: _struct_pb2.Struct
    timeout_seconds: int
    server: str
    description: str
    def __init__(self, approval_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., timeout_seconds: _Optional[int] = ..., server: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class FrontendTool(_message.Message):
    __slots__ = ("call_id", "name", "arguments")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    name: str
    arguments: _struct_pb2.Struct
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ...) -> None: ...

class Done(_message.Message):
    __slots__ = ("content", "new_messages", "usage", "steps", "tool_calls", "finish_reason", "duration_ms", "grounding")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    GROUNDING_FIELD_NUMBER: _ClassVar[int]
    content: str
    new_messages: _containers.RepeatedCompositeFieldContainer[_run_pb2.ChatMessage]
    usage: TokenUsage
    steps: int
    tool_calls: int
    finish_reason: str
    duration_ms: int
    grounding: Grounding
    def __init__(self, content: _Optional[str] = ..., new_messages: _Optional[_Iterable[_Union[_run_pb2.ChatMessage, _Mapping]]] = ..., usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., steps: _Optional[int] = ..., tool_calls: _Optional[int] = ..., finish_reason: _Optional[str] = ..., duration_ms: _Optional[int] = ..., grounding: _Optional[_Union[Grounding, _Mapping]] = ...) -> None: ...

class Grounding(_message.Message):
    __slots__ = ("numbers", "supported_count", "unsupported_count")
    NUMBERS_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNSUPPORTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    numbers: _containers.RepeatedCompositeFieldContainer[GroundedNumber]
    supported_count: int
    unsupported_count: int
    def __init__(self, numbers: _Optional[_Iterable[_Union[GroundedNumber, _Mapping]]] = ..., supported_count: _Optional[int] = ..., unsupported_count: _Optional[int] = ...) -> None: ...

class GroundedNumber(_message.Message):
    __slots__ = ("text", "value", "unit", "start", "end", "supported", "call_id", "tool_name", "source_value", "match")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_VALUE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    text: str
    value: float
    unit: str
    start: int
    end: int
    supported: bool
    call_id: str
    tool_name: str
    source_value: float
    match: str
    def __init__(self, text: _Optional[str] = ..., value: _Optional[float] = ..., unit: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., supported: _Optional[bool] = ..., call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., source_value: _Optional[float] = ..., match: _Optional[str] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...
