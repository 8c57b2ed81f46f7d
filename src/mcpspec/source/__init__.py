"""Reading and parsing spec files: the only code that touches the YAML parser."""

from mcpspec.source.loader import MAX_FILE_BYTES, load_file, parse_text
from mcpspec.source.sourcemap import Comment, SourceMap

__all__ = ["MAX_FILE_BYTES", "Comment", "SourceMap", "load_file", "parse_text"]
