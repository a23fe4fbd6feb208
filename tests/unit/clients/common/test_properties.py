"""Java .properties syntax."""

from __future__ import annotations

import pytest

from clients.common.properties import format_properties, parse_properties
from clients.common.properties import PropertiesSyntaxError


def test_separators_comments_and_blanks() -> None:
    text = "# comment\n! also a comment\n\n  a=1\nb: 2\nc 3\nd\t=\t4 \ne=\nf\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4 ", "e": "",
                                      "f": ""}


def test_continuation_lines_drop_leading_blanks() -> None:
    text = "servers = a,\\\n    b,\\\n    c\nnext=1\n"
    assert parse_properties(text) == {"servers": "a,b,c", "next": "1"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_escapes_in_keys_and_values() -> None:
    text = "key\\ with\\=odd\\:chars = tab\\there\\nnl \\u00e9\\q\n"
    assert parse_properties(text) == {"key with=odd:chars": "tab\there\nnl \u00e9q"}


def test_comment_marker_inside_a_value_is_kept() -> None:
    assert parse_properties("a=b#c\n  #not=a key\n") == {"a": "b#c"}


def test_crlf_and_cr_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_last_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_malformed_unicode_escape_is_an_error() -> None:
    with pytest.raises(PropertiesSyntaxError, match="line 2"):
        parse_properties("ok=1\nbad=\\u12G4\n")


def test_format_round_trips() -> None:
    props = {"a key": "=starts odd", "b": "line\nbreak\\slash", "#c": " lead", "d": "x:y=z"}
    assert parse_properties(format_properties(props)) == props
