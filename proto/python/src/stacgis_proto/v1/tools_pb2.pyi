from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolInfo(_message.Message):
    __slots__ = ("name", "server", "description", "input_schema", "requires_approval", "read_only", "kind")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    name: str
    server: str
    description: str
    input_schema: _struct_pb2.Struct
    requires_approval: bool
    read_only: bool
    kind: str
    def __init__(self, name: _Optional[str] = ..., server: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., requires_approval: _Optional[bool] = ..., read_only: _Optional[bool] = ..., kind: _Optional[str] = ...) -> None: ...

class ToolServerStatus(_message.Message):
    __slots__ = ("name", "url", "breaker_state", "tool_count", "last_error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    BREAKER_STATE_FIELD_NUMBER: _ClassVar[int]
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    url: str
    breaker_state: str
    tool_count: int
    last_error: str
    def __init__(self, name: _Optional[str] = ..., url: _Optional[str] = ..., breaker_state: _Optional[str] = ..., tool_count: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "servers")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolInfo]
    servers: _containers.RepeatedCompositeFieldContainer[ToolServerStatus]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolInfo, _Mapping]]] = ..., servers: _Optional[_Iterable[_Union[ToolServerStatus, _Mapping]]] = ...) -> None: ...

class ScoredTool(_message.Message):
    __slots__ = ("name", "server", "score", "similarity", "keyword_score", "always_included")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_SCORE_FIELD_NUMBER: _ClassVar[int]
    ALWAYS_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    name: str
    server: str
    score: float
    similarity: float
    keyword_score: float
    always_included: bool
    def __init__(self, name: _Optional[str] = ..., server: _Optional[str] = ..., score: _Optional[float] = ..., similarity: _Optional[float] = ..., keyword_score: _Optional[float] = ..., always_included: _Optional[bool] = ...) -> None: ...

class SelectToolsResponse(_message.Message):
    __slots__ = ("query", "k", "tools")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    query: str
    k: int
    tools: _containers.RepeatedCompositeFieldContainer[ScoredTool]
    def __init__(self, query: _Optional[str] = ..., k: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ScoredTool, _Mapping]]] = ...) -> None: ...
