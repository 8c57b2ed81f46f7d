"""Parse a spec file once with libyaml and keep every position.

Why not ruamel.yaml's round-trip loader: on a 1,000-server file it takes about
2 s where libyaml's C composer takes 0.1 s, and the performance targets allow
lint at most 4x the composer. A plain file is read from libyaml's events
(:mod:`mcpspec.source.events`); any other is composed, and the node graph
gives the errors. Both keep the start and end marks of every key and value
(:mod:`mcpspec.source.positions`), which is all a SourceMap needs; comments are
recovered from the text with scalar spans masked (see SourceMap.comments).
Nothing here constructs Python objects from tags: only plain YAML scalars,
mappings and sequences become data, so ``!!python/...`` is never executed.
"""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Any, cast

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mcpspec.diagnostics import FILE_START, Diagnostic, Span, SpecError
from mcpspec.perf import gc_paused
from mcpspec.source.events import build_from_events
from mcpspec.source.positions import Positions
from mcpspec.source.sourcemap import SourceMap, node_span

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
# Aliases may repeat a node; past this many data nodes the file is a bomb.
MAX_EXPANDED_NODES = 1_000_000

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = f"{_TAG}map", f"{_TAG}seq"
_SCALAR_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL, f"{_TAG}timestamp"}
# A plain (unquoted, untagged) scalar, typed by YAML's implicit rules in _Builder.
_PLAIN = "tag:mcpspec,2026:plain"
_IMPLICIT: Any = yaml.resolver.Resolver()
_IMPLICIT_FIRST = frozenset(key for key in _IMPLICIT.yaml_implicit_resolvers if key)
_plain_tags: dict[str, str] = {}

# libyaml's C parser and composer when PyYAML has them (it does on every common platform).
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[misc]
    """libyaml's loader with tag resolution moved out of its per-node callback.

    The stock resolver runs a Python method with regexes for every node; here
    the callback only marks plain scalars, and the builder types the few that
    could be something other than a string.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is SequenceNode else _MAP


class UsageError(Exception):
    """The file cannot be read at all (missing, a directory, no permission): exit status 2."""


def load_file(path: str | os.PathLike[str], display_name: str | None = None) -> tuple[Any, SourceMap]:
    """Read and parse one spec file, returning plain data and its SourceMap.

    Raises UsageError when the path is not a readable file and SpecError with
    one positioned diagnostic when its content is not an acceptable YAML file.
    """
    name = display_name if display_name is not None else str(path)
    file_path = Path(path)
    try:
        if file_path.is_dir():
            raise UsageError(f"{name}: is a directory, not a spec file")
        size = file_path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SpecError([_diag(name, FILE_START, "YM010", f"file is {size} bytes; the limit is {MAX_FILE_BYTES} (16 MiB)")])
        raw = file_path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except PermissionError:
        raise UsageError(f"{name}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return parse_text(_decode(raw, name), name)


def load_bytes(raw: bytes, name: str) -> tuple[Any, SourceMap]:
    """Parse a spec's bytes read elsewhere (``git show``), as :func:`load_file` parses a file's;
    diagnostics name ``name``."""
    return parse_text(_decode(raw, name), name)


def _decode(raw: bytes, name: str) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError([_diag(name, FILE_START, "YM010", f"file is larger than the limit of {MAX_FILE_BYTES} bytes (16 MiB)")])
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise SpecError([_diag(name, FILE_START, "YM009", "file starts with a byte-order mark; save it as UTF-8 without BOM")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        col = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
        span = Span(line, col, line, col + 1)
        raise SpecError([_diag(name, span, "YM009", f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})")]) from None


def parse_text(text: str, name: str = "<string>") -> tuple[Any, SourceMap]:
    """Parse YAML text into plain data (dict/list/str/int/float/bool/None/date) and its SourceMap."""
    if not text.strip() or all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        raise SpecError([_diag(name, FILE_START, "YM008", "file is empty; a spec needs at least 'version' and 'servers'")])
    with gc_paused():
        return _parse(text, name)


def _parse(text: str, name: str) -> tuple[Any, SourceMap]:
    builder = _Builder(name, text)
    fast = build_from_events(text, _Loader, builder.event_scalar, _IMPLICIT_FIRST, MAX_DEPTH, MAX_EXPANDED_NODES)
    if fast is not None:
        data, positions, hash_scalars = fast
        return data, SourceMap(file=name, text=text, positions=positions, hash_scalars=hash_scalars)
    try:
        documents = yaml.compose_all(text, Loader=cast(Any, _Loader))
        root = next(documents, None)
        extra = next(documents, None)
    except yaml.MarkedYAMLError as exc:
        raise SpecError([_syntax_diag(exc, text, name)]) from None
    except yaml.YAMLError as exc:  # pragma: no cover - libyaml always marks its errors
        raise SpecError([_diag(name, FILE_START, "YM001", f"YAML syntax error: {exc}")]) from None
    except RecursionError:
        raise SpecError([_diag(name, FILE_START, "YM006", f"nesting is deeper than {MAX_DEPTH} levels")]) from None
    if extra is not None:
        raise SpecError([_diag(name, _document_start(text, extra), "YM007", "file holds several YAML documents; a spec is one document")])
    if root is None:
        raise SpecError([_diag(name, FILE_START, "YM008", "file is empty; a spec needs at least 'version' and 'servers'")])
    if "&" in text:  # only anchors make aliases, and only aliases can expand
        _check_expansion(root, name)
    data = builder.build(root, 0)
    # Only the positions are kept: the node graph goes now (see mcpspec.source.positions).
    return data, SourceMap(file=name, text=text, positions=builder.positions, hash_scalars=builder.hash_scalars)


class _Builder:
    """Turns a composed node graph into plain data, refusing what a spec must not hold.

    It numbers the nodes and keeps their positions as it goes (see :mod:`mcpspec.source.positions`).
    """

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.expanded = 0
        self.constructor = SafeConstructor()
        # The spans of scalars holding a '#', which the comment finder must not mistake for comments.
        self.hash_scalars: list[Span] = []
        self.positions = Positions(text)

    def fail(self, node: Node, code: str, message: str) -> SpecError:
        return SpecError([_diag(self.name, node_span(node), code, message)])

    def build(self, node: Node, depth: int) -> Any:
        self.expanded += 1
        if self.expanded > MAX_EXPANDED_NODES:
            raise self.fail(node, "YM005", f"aliases expand to more than {MAX_EXPANDED_NODES} nodes; the file looks like an alias bomb")
        if depth > MAX_DEPTH:
            raise self.fail(node, "YM006", f"nesting is deeper than {MAX_DEPTH} levels")
        if isinstance(node, ScalarNode):
            self.positions.add(node)
            return self.scalar(node)
        if isinstance(node, MappingNode):
            return self.mapping(node, depth)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                raise self.fail(node, "YM004", f"unsupported tag {_short_tag(node.tag)}; specs use plain YAML lists")
            return self.sequence(node, depth)
        raise self.fail(node, "YM001", "unsupported YAML node")  # pragma: no cover

    def sequence(self, node: SequenceNode, depth: int) -> list[Any]:
        numbers: list[int] = []
        positions = self.positions
        positions.add(node, numbers)
        result = []
        for item in node.value:
            numbers.append(len(positions))
            result.append(self.build(item, depth + 1))
        return result

    def mapping(self, node: MappingNode, depth: int) -> dict[str, Any]:
        if node.tag != _MAP:
            raise self.fail(node, "YM004", f"unsupported tag {_short_tag(node.tag)}; specs use plain YAML mappings")
        result: dict[str, Any] = {}
        numbers: dict[str, int] = {}
        positions = self.positions
        positions.add(node, numbers)
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise self.fail(key_node, "YM001", "mapping keys must be plain strings")
            key = key_node.value
            if "#" in key:
                self.hash_scalars.append(node_span(key_node))
            if key_node.tag == _PLAIN and key == "<<":
                raise self.fail(key_node, "YM004", "merge keys ('<<') are not supported; put shared settings under 'defaults'")
            if key_node.tag != _PLAIN and key_node.tag not in _SCALAR_TAGS:
                raise self.fail(key_node, "YM004", f"unsupported tag {_short_tag(key_node.tag)} on a key")
            if key in result:
                first = positions.span(numbers[key] - 1).line
                raise self.fail(key_node, "YM002", f"duplicate key {key!r} (first defined at line {first})")
            numbers[key] = positions.add(key_node) + 1  # the value is numbered next
            result[key] = self.build(value_node, depth + 1)
        return result

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if "#" in node.value:
            self.hash_scalars.append(node_span(node))
        if tag == _PLAIN:
            tag = _plain_tag(node.value)
        if tag == _STR:
            return node.value
        if tag not in _SCALAR_TAGS:
            raise self.fail(node, "YM004", f"unsupported tag {_short_tag(tag)}; mcpspec never constructs objects from tags")
        return self._typed(node, tag)

    def event_scalar(self, value: str, start: Any, end: Any) -> Any:
        """A plain scalar of the event path (mcpspec.source.events), typed as :meth:`scalar` types it;
        raises ValueError where that reports an error."""
        tag = _plain_tag(value)
        if tag == _STR:
            return value
        return self._construct(ScalarNode(tag, value, start, end), tag)

    def _typed(self, node: ScalarNode, tag: str) -> Any:
        try:
            return self._construct(node, tag)
        except (ValueError, TypeError, yaml.YAMLError):
            raise self.fail(node, "YM001", f"cannot read {node.value!r} as {_short_tag(tag)}") from None

    def _construct(self, node: ScalarNode, tag: str) -> Any:
        # YAML 1.1 reads 1:30 as the base-60 integer 90; nobody writing a spec means that.
        if tag in (_INT, _FLOAT) and ":" in node.value:
            return node.value
        try:
            if tag == _INT:
                return self.constructor.construct_yaml_int(node)
            if tag == _FLOAT:
                return self.constructor.construct_yaml_float(node)
            if tag == _BOOL:
                return self.constructor.construct_yaml_bool(node)
            if tag == _NULL:
                return None
            stamp: datetime.date = self.constructor.construct_yaml_timestamp(node)
            return stamp
        except TypeError as exc:
            raise ValueError(str(exc)) from None


def _plain_tag(value: str) -> str:
    """The tag YAML 1.1 gives a plain scalar (int, float, bool, null, timestamp or str).

    YAML 1.1 also resolves a plain ``=`` to its "value" type and ``<<`` to "merge": neither
    means anything in a value (``<<`` as a key is refused apart), so both stay text."""
    if value and value[0] not in _IMPLICIT_FIRST:
        return _STR
    tag = _plain_tags.get(value)
    if tag is None:
        tag = _IMPLICIT.resolve(ScalarNode, value, (True, False))
        if tag not in _SCALAR_TAGS:
            tag = _STR
        if len(_plain_tags) < 100_000:
            _plain_tags[value] = tag
    return tag


def _document_start(text: str, node: Node) -> Span:
    """The ``---`` line that opened the document holding ``node``."""
    lines = text.splitlines()
    for index in range(min(node.start_mark.line, len(lines) - 1), -1, -1):
        if lines[index].startswith("---"):
            return Span(index + 1, 1, index + 1, 4)
    return _mark_span(node.start_mark)


def _check_expansion(root: Node, name: str) -> None:
    """Refuse alias cycles and alias bombs before building anything from them."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] > MAX_EXPANDED_NODES:
                raise SpecError([_diag(name, node_span(node), "YM005", f"aliases expand to more than {MAX_EXPANDED_NODES} nodes; the file looks like an alias bomb")])
            continue
        if key in sizes:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise SpecError([_diag(name, node_span(child), "YM005", "an alias refers to the node that contains it")])
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _syntax_diag(exc: yaml.MarkedYAMLError, text: str, name: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    lines = text.splitlines()
    at_opening = exc.context_mark is not None and mark is not None and _past_content(mark, lines)
    if at_opening:
        # "found end of stream": the unclosed bracket or quote is the useful place.
        mark = exc.context_mark
    span = _mark_span(mark) if mark is not None else FILE_START
    problem = exc.problem or "YAML syntax error"
    if "maximum nesting depth" in problem:
        return _diag(name, span, "YM006", f"nesting is deeper than {MAX_DEPTH} levels")
    line_text = text.splitlines()[span.line - 1] if 0 < span.line <= len(text.splitlines()) else ""
    indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
    if "\t" in indent or (span.col <= len(line_text) and line_text[span.col - 1 : span.col] == "\t"):
        tab_col = line_text.index("\t") + 1
        return _diag(name, Span(span.line, tab_col, span.line, tab_col + 1), "YM003", "tab character used for indentation; YAML indents with spaces")
    message = f"YAML syntax error: {problem}"
    if line_text[span.col - 1 : span.col] in ("@", "`"):
        # '@' and '`' are reserved in YAML: an egress preset must be quoted.
        word = re.match(r"[@`][\w.-]*", line_text[span.col - 1 :])
        shown = word.group() if word else line_text[span.col - 1]
        return _diag(name, span, "YM001", f"YAML syntax error: a plain value cannot start with {shown[0]!r}; quote it, as in \"{shown}\"")
    if exc.context:
        message += f" ({exc.context} that starts here)" if at_opening else f" ({exc.context})"
    return _diag(name, span, "YM001", message.replace("\n", " "))


def _past_content(mark: Any, lines: list[str]) -> bool:
    return bool(mark.line >= len(lines) or not "".join(lines[mark.line :]).strip())


def _mark_span(mark: Any) -> Span:
    return Span(mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 2)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


def _diag(name: str, span: Span, code: str, message: str) -> Diagnostic:
    return Diagnostic(file=name, span=span, code=code, message=message)
