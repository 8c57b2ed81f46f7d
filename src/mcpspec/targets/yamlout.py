"""YAML documents as PyYAML's pure-Python emitter writes them, written by libyaml's C emitter
when that gives the same bytes.

The compose and k8s targets dump their files with PyYAML; its Python representer and emitter
were most of a build's time (for 1,000 servers, about 16 of 17 s of CPU for k8s). libyaml's
emitter writes the same text many times faster, but not for every input: it takes an empty
key or one of 123 to 128 characters as a simple key where the Python emitter writes
``? key``, and a carriage return as a line break. So the C emitter is used only for plain
data (dicts, lists, None, booleans, integers, floats) whose every string is printable ASCII
(no control character, no line break, nothing above U+007E), whose keys are strings of 1 to
``KEY_MAX`` characters, whose values have at most ``VALUE_MAX`` (far from ``WIDTH``, where a
line would fold) and where no dict or list appears twice (PyYAML would anchor it). Within
that class the two emitters make the same choices (plain or single-quoted, simple keys,
indentless sequences, ``[]`` and ``{}``); tests/test_yaml_output.py compares them on drawn
documents and the edges. Any other document, or a PyYAML without libyaml, goes through the
Python emitter, so the output never depends on which emitter wrote it.

The C path hands libyaml the events PyYAML's C serializer makes of SafeRepresenter's nodes
(the same tags, implicit flags and styles), without building the nodes and asking the
resolver once per distinct scalar rather than twice per scalar.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from yaml.events import Event, MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent, SequenceStartEvent
from yaml.nodes import ScalarNode

KEY_MAX = 100  # the Python emitter's simple keys stop at 122 characters (with the 5 of "!!str"), libyaml's at 128
VALUE_MAX = 4096
WIDTH = 2**16
OPTIONS: dict[str, Any] = {"sort_keys": False, "default_flow_style": False, "allow_unicode": False, "width": WIDTH}

_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_CSafeDumper: type[Any] | None = getattr(yaml, "CSafeDumper", None)
C_EMITTER = _CSafeDumper is not None
_CACHED_MAX = 1 << 16


class _Unusual(Exception):
    """A value outside the class the C emitter writes as the Python one does."""


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


class _Scalars:
    """The scalar events for ``python_dumper``, each made once and handed out again (the emitter
    only reads an event): the tag may go unwritten when the text is plain or quoted as
    ``python_dumper``'s resolver says (a pure function of tag and text, since SafeDumper registers
    no path resolver); a float's text is its representer's. A key or string value is checked
    against the plain class when its event is made: an event in ``keys`` or ``values`` is one
    that passed for the text it is filed under."""

    def __init__(self, python_dumper: type[yaml.SafeDumper]) -> None:
        self._dumper: Any = python_dumper(io.StringIO(), **OPTIONS)
        self._made: dict[tuple[str, str], ScalarEvent] = {}
        self.keys: dict[str, ScalarEvent] = {}
        self.values: dict[str, ScalarEvent] = {}

    def event(self, tag: str, text: str) -> ScalarEvent:
        made = self._made.get((tag, text))
        if made is None:
            if len(self._made) >= _CACHED_MAX:
                self._made.clear()
            resolve = self._dumper.resolve
            implicit = (resolve(ScalarNode, text, (True, False)) == tag, resolve(ScalarNode, text, (False, True)) == tag)
            made = self._made[tag, text] = ScalarEvent(None, tag, implicit, text)
        return made

    def key(self, text: Any) -> ScalarEvent:
        if not (type(text) is str and 0 < len(text) <= KEY_MAX and _plain(text)):
            raise _Unusual
        return self._filed(self.keys, text)

    def value(self, text: str) -> ScalarEvent:
        if len(text) > VALUE_MAX or not _plain(text):
            raise _Unusual
        return self._filed(self.values, text)

    def float_event(self, value: float) -> ScalarEvent:
        node = self._dumper.represent_float(value)
        return self.event(str(node.tag), str(node.value))

    def _filed(self, checked: dict[str, ScalarEvent], text: str) -> ScalarEvent:
        if len(checked) >= _CACHED_MAX:
            checked.clear()
        made = checked[text] = self.event(_STR, text)
        return made


_SCALARS: dict[type[yaml.SafeDumper], _Scalars] = {}
# Collection events carry no value: one of each serves every dict and list.
_MAPPING_START = MappingStartEvent(None, _MAP, True, flow_style=False)
_MAPPING_END = MappingEndEvent()
_SEQUENCE_START = SequenceStartEvent(None, _SEQ, True, flow_style=False)
_SEQUENCE_END = SequenceEndEvent()


def _events(document: Any, scalars: _Scalars, emit: Callable[[Event], None]) -> None:
    """The events the serializer makes of ``document`` as SafeRepresenter represents it (keys in
    order, block style); raises ``_Unusual`` at anything outside the plain class, and at a dict or
    list met twice (the serializer would anchor it)."""
    seen: set[int] = set()
    keys, values = scalars.keys, scalars.values

    def walk(value: Any) -> None:
        kind = type(value)
        if kind is str:
            emit(values.get(value) or scalars.value(value))
        elif kind is dict or kind is list:
            if id(value) in seen:
                raise _Unusual
            seen.add(id(value))
            if kind is dict:
                emit(_MAPPING_START)
                for key, item in value.items():
                    filed = keys.get(key) if type(key) is str else None  # a str subclass may equal a filed str
                    emit(filed or scalars.key(key))
                    walk(item)
                emit(_MAPPING_END)
            else:
                emit(_SEQUENCE_START)
                for item in value:
                    walk(item)
                emit(_SEQUENCE_END)
        elif kind is bool:
            emit(scalars.event(_BOOL, "true" if value else "false"))
        elif kind is int:
            emit(scalars.event(_INT, str(value)))
        elif value is None:
            emit(scalars.event(_NULL, "null"))
        elif kind is float:
            emit(scalars.float_event(value))
        else:
            raise _Unusual  # bytes, sets, dates, subclasses...: never in a build; the Python emitter writes what SafeDumper writes

    walk(document)


def dump_all(documents: Sequence[Any], python_dumper: type[yaml.SafeDumper], explicit_start: bool = False) -> str:
    """``yaml.dump_all(documents, Dumper=python_dumper, ...)`` with the targets' options (keys in
    their order, ASCII only, no folding); ``python_dumper`` is SafeDumper or a subclass whose
    representers write plain-class data as SafeDumper does (the k8s one double-quotes line breaks)
    and that registers no path resolver."""
    if _CSafeDumper is not None and not python_dumper.yaml_path_resolvers:
        scalars = _SCALARS.get(python_dumper) or _SCALARS.setdefault(python_dumper, _Scalars(python_dumper))
        stream = io.StringIO()
        emitter = _CSafeDumper(stream, explicit_start=explicit_start, **OPTIONS)
        try:
            emitter.open()
            for document in documents:
                emitter.emit(yaml.DocumentStartEvent(explicit=explicit_start))
                _events(document, scalars, emitter.emit)
                emitter.emit(yaml.DocumentEndEvent(explicit=False))
            emitter.close()
            return stream.getvalue()
        except _Unusual:
            pass
        finally:
            emitter.dispose()
    return str(yaml.dump_all(documents, Dumper=python_dumper, explicit_start=explicit_start, **OPTIONS))
