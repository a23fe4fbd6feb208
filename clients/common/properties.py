"""Java `.properties` syntax, as `java.util.Properties.load` reads it.

Comments start with `#` or `!` (first non-blank character of a logical line); a key ends at
the first unescaped `=`, `:` or blank; a line ending in an odd number of backslashes continues
on the next line (whose leading blanks are dropped); `\\t \\n \\r \\f \\uXXXX` are escapes and
a backslash before any other character stands for that character. The last duplicate wins.
"""

from __future__ import annotations

from pathlib import Path

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesSyntaxError(ValueError):
    """The text is not valid `.properties` syntax (only a malformed `\\uXXXX` can be), or
    the file is not UTF-8."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; return (first physical line number, logical line) pairs."""
    physical = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    result: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(physical, start=1):
        if pending:
            line = line.lstrip(_BLANKS)
        else:
            stripped = line.lstrip(_BLANKS)
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        result.append((start, "".join(pending)))
        pending = []
    if pending:
        result.append((start, "".join(pending)))
    return result


def _unescape(raw: str, line_number: int) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 >= len(raw):
            # A lone trailing backslash (end of file inside a continuation) is dropped by Java.
            if ch != "\\":
                out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesSyntaxError(f"line {line_number}: malformed \\uXXXX encoding")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _BLANKS:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Parse `.properties` text into an ordered key -> value dict."""
    props: dict[str, str] = {}
    for line_number, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        props[_unescape(raw_key, line_number)] = _unescape(raw_value, line_number)
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a `.properties` file (Kafka reads them as UTF-8; Java's ISO-8859-1 default is moot
    for ASCII). OSError when it cannot be read; PropertiesSyntaxError when it is not UTF-8
    or not valid syntax."""
    return parse_properties(decode_utf8(Path(path).read_bytes()))


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8; PropertiesSyntaxError naming the line and byte that are not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PropertiesSyntaxError(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} on line {line} (offset "
            f"{exc.start}); save the file as UTF-8") from None


def format_properties(props: dict[str, str]) -> str:
    """Render properties so `parse_properties` reads them back unchanged."""
    lines = []
    for key, value in props.items():
        lines.append(f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}")
    return "\n".join(lines) + "\n"


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!" and (is_key or index == 0):
            out.append("\\" + ch)
        elif ch == " " and (is_key or index == 0):
            out.append("\\ ")
        else:
            out.append(ch)
    return "".join(out)
