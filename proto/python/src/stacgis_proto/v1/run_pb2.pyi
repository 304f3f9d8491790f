from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "tool_calls", "tool_call_id", "name")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    name: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class LatLon(_message.Message):
    __slots__ = ("lat", "lon")
    LAT_FIELD_NUMBER: _ClassVar[int]
    LON_FIELD_NUMBER: _ClassVar[int]
    lat: float
    lon: float
    def __init__(self, lat: _Optional[float] = ..., lon: _Optional[float] = ...) -> None: ...

class SpatialContext(_message.Message):
    __slots__ = ("map_center", "zoom", "selected_feature", "drawn_geometry")
    MAP_CENTER_FIELD_NUMBER: _ClassVar[int]
    ZOOM_FIELD_NUMBER: _ClassVar[int]
    SELECTED_FEATURE_FIELD_NUMBER: _ClassVar[int]
    DRAWN_GEOMETRY_FIELD_NUMBER: _ClassVar[int]
    map_center: LatLon
    zoom: float
    selected_feature: _struct_pb2.Struct
    drawn_geometry: _struct_pb2.Struct
    def __init__(self, map_center: _Optional[_Union[LatLon, _Mapping]] = ..., zoom: _Optional[float] = ..., selected_feature: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., drawn_geometry: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RunOptions(_message.Message):
    __slots__ = ("max_steps", "model")
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    max_steps: int
    model: str
    def __init__(self, max_steps: _Optional[int] = ..., model: _Optional[str] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("session_id", "message", "history", "spatial_context", "options", "run_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    SPATIAL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    message: str
    history: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    spatial_context: SpatialContext
    options: RunOptions
    run_id: str
    def __init__(self, session_id: _Optional[str] = ..., message: _Optional[str] = ..., history: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., spatial_context: _Optional[_Union[SpatialContext, _Mapping]] = ..., options: _Optional[_Union[RunOptions, _Mapping]] = ..., run_id: _Optional[str] = ...) -> None: ...

class ApprovalDecision(_message.Message):
    __slots__ = ("approved", "reason")
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    approved: bool
    reason: str
    def __init__(self, approved: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...
