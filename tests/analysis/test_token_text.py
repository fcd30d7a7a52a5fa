"""One rendering of a token's bytes for every listing (audit, inspect, the demo): each character
escaped once, a newline and the six characters \\u000a told apart, a byte that is not a whole
character as \\xNN and never confused with a character; distinct tokens never look the same (the
bytes read back from the rendering, for any bytes)."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from hf_bbpe import Tokenizer
from hf_bbpe.analysis.token_text import token_literal
from tests.support.cli import run_cli, save_model_file

_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|(.)", re.S)


def _read_back(literal: str) -> bytes:
    """The inverse of token_literal, written from its documented rules."""
    assert literal[0] == literal[-1] == "'"
    out = bytearray()
    for escape, char in _ESCAPE.findall(literal[1:-1]):
        assert char != "'", literal  # a quote inside is always escaped
        if not escape:
            assert char.isprintable(), literal
            out += char.encode("utf-8")
        elif escape[0] == "x":
            out.append(int(escape[1:], 16))
        elif escape[0] in "uU":
            out += chr(int(escape[1:], 16)).encode("utf-8")
        else:
            out += {"\\": b"\\", "'": b"'", "n": b"\n", "r": b"\r", "t": b"\t"}[escape]
    return bytes(out)


def test_each_character_escaped_once_and_told_apart():
    assert token_literal(b"\n") == r"'\n'"
    assert token_literal(b"\\u000a") == r"'\\u000a'"
    assert token_literal(b" \xd0") == r"' \xd0'"  # a space and half of a Cyrillic letter
    assert token_literal("Ð".encode()) == "'Ð'" and token_literal("\x80".encode()) == r"'\u0080'"
    assert token_literal("it's".encode()) == r"'it\'s'" and token_literal(b"\x00\x1b[0m") == r"'\u0000\u001b[0m'"
    assert token_literal("\U0001f600 \u200b".encode()) == "'\U0001f600 \\u200b'"


@given(st.binary(max_size=24) | st.text(max_size=12).map(str.encode))
@example(b"\xed\xa0\x80")  # a surrogate's UTF-8 is not valid UTF-8: three bytes, not a character
def test_the_bytes_read_back_from_the_rendering(data):
    literal = token_literal(data)
    assert "\n" not in literal and _read_back(literal) == data


def test_audit_and_inspect_write_tokens_so(tmp_path):
    """A newline pair and the literal text \\u000a as tokens: the audit lists both (never produced
    on its text), each written once escaped; inspect writes them the same way."""
    nl, bs, u, zero, a = map(ord, "\n\\u0a")
    tok = Tokenizer.from_merges({(nl, nl): 256, (bs, u): 257, (zero, zero): 258, (257, 258): 259, (zero, a): 260,
                                 (259, 260): 261, (32, 0xD0): 262})
    model = save_model_file(tok, tmp_path, "tok")
    (tmp_path / "text.txt").write_text("plain words", encoding="utf-8")
    report = run_cli("audit", model, tmp_path / "text.txt").stdout.decode("utf-8")
    rows = {line.split()[0]: line for line in report.splitlines() if line[:3].isdigit()}
    assert r"'\n\n'" in rows["256"] and r"'\\u000a'" in rows["261"] and r"' \xd0'" in rows["262"], report
    shown = run_cli("inspect", model, "--token", "261").stdout.decode("utf-8")
    assert shown.startswith(r"token 261: '\\u000a' (merge)") and r"257  '\\u'" in shown, shown
    assert r"'\n\n'" in run_cli("inspect", model, "--token", "256").stdout.decode("utf-8")
