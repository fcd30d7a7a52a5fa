"""Token view: segments cover whole characters, and the terminal and HTML renderings show every token."""

from __future__ import annotations

import html.parser
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import BasicTokenizer, RegexTokenizer
from hf_bbpe.analysis.token_view import render_html, render_terminal, segment_tokens, tokenize_for_view, visible_text
from tests.support.cli import MIX, TAYLOR, run_cli


@pytest.fixture(scope="module")
def byte_split_tok():
    """No split pattern, trained on multilingual text: many tokens end inside a CJK character."""
    tok = BasicTokenizer()
    tok.train(MIX.read_text(encoding="utf-8")[:60000], 700, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 700})
    return tok


@pytest.fixture(scope="module")
def english_tok():
    """Trained on English only: CJK and emoji fall apart into single bytes."""
    tok = RegexTokenizer("gpt4")
    tok.train(TAYLOR.read_text(encoding="utf-8"), 300, progress=False)
    return tok


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60) | st.sampled_from([
    "你好，世界", "naïve café 🎉", "  def f(x):\n\treturn x\n", "Привет мир", "<|endoftext|> hi",
])


def test_sample_has_tokens_that_split_characters(byte_split_tok):
    """Guard: the fixture really exercises partial-UTF-8 tokens, so the grouping tests mean something."""
    ids = byte_split_tok.encode_ordinary(MIX.read_text(encoding="utf-8")[:20000])
    assert any(len(s.ids) > 1 for s in segment_tokens(byte_split_tok, ids))
    partial = [i for i in set(ids) if i >= 256 and not _is_utf8(byte_split_tok.vocab[i])]
    assert partial


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_segments_are_the_minimal_whole_character_runs(byte_split_tok, english_tok, text):
    for tok in (byte_split_tok, english_tok):
        ids = tok.encode(text, allowed_special="all")
        segments = segment_tokens(tok, ids)
        assert [i for s in segments for i in s.ids] == ids
        assert "".join(s.data.decode("utf-8") for s in segments) == text  # strict: whole characters only
        for s in segments:
            # minimal: a segment only continues with a token that starts inside a character
            assert all(0x80 <= piece[0] <= 0xBF for piece in s.pieces[1:])
            assert s.split_character == (len(s.ids) > 1)


def test_special_tokens_stand_alone(byte_split_tok):
    view = tokenize_for_view(byte_split_tok, "t", "a<|endoftext|>b")
    specials = [s for s in view.segments if s.special]
    assert [s.ids for s in specials] == [(700,)]
    view = tokenize_for_view(byte_split_tok, "t", "a<|endoftext|>b", allowed_special=set())
    assert not any(s.special for s in view.segments)
    assert 700 not in view.ids


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_plain_rendering_is_the_text_with_separators(byte_split_tok, text):
    sep = "\u2063"  # invisible separator: not in the generated text
    view = tokenize_for_view(byte_split_tok, "t", text.replace(sep, ""))
    plain = render_terminal(view, color=False, sep=sep)
    assert plain.split(sep) == [s.text for s in view.segments] if view.segments else plain == ""
    with_ids = render_terminal(view, color=False, show_ids=True, sep=sep)
    ids = [int(i) for group in re.findall(r"\[([\d ]+)\]", with_ids) for i in group.split()]
    assert ids == view.ids or "[" in view.text  # brackets in the text itself would confuse the regex


def test_colour_rendering_has_one_background_per_token_run(byte_split_tok):
    text = "Hello 你好，世界!\nnaïve <|endoftext|> ok\n"
    view = tokenize_for_view(byte_split_tok, "t", text)
    out = render_terminal(view, color=True)
    # each segment opens one style per line it spans; the text comes back without codes and markers
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out).replace("\u21b5", "")
    assert plain == text
    openings = len(re.findall(r"\x1b\[38;5;16;48;5;\d+(?:;[14])?m", out))
    assert openings == len(view.segments) + sum(s.text[:-1].count("\n") for s in view.segments)
    assert re.search(r"48;5;210;4m", out)  # a character split across tokens: underlined
    assert re.search(r"48;5;141;1m<\|endoftext\|>", out)  # the special token


def test_visible_text():
    assert visible_text("a\nb\tc\x00\r\x7f") == "a\u21b5\nb\tc\u2400\u240d\u2421"


class _Spans(html.parser.HTMLParser):
    """Collects every span.t (data-ids, data-bytes, title) per section, and any external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.external.append(tag)
        for key in ("src", "href"):
            if key in a:
                self.external.append(f"{tag} {key}={a[key]}")
        if tag == "section":
            self.sections.append({"name": a["data-name"], "tokens": int(a["data-tokens"]), "spans": []})
        if tag == "span" and "t" in a.get("class", "").split():
            self.sections[-1]["spans"].append(a)


def parse_view_html(page: str) -> _Spans:
    parser = _Spans()
    parser.feed(page)
    return parser


def test_html_is_self_contained_and_has_every_token(byte_split_tok, english_tok):
    text = "Hello 你好，世界 🎉 <|endoftext|>\n\tdef f(x): return x ** 2\n<b>&amp;</b>"
    views = [tokenize_for_view(byte_split_tok, "bytes", text), tokenize_for_view(english_tok, "english", text)]
    page = render_html(views, show_ids=True)
    parsed = parse_view_html(page)
    assert parsed.external == []
    assert "url(" not in page and "@import" not in page and "http" not in page
    assert [s["name"] for s in parsed.sections] == ["bytes", "english"]
    for section, view in zip(parsed.sections, views):
        assert section["tokens"] == len(view.ids)
        assert [int(i) for span in section["spans"] for i in span["data-ids"].split()] == view.ids
        assert b"".join(bytes.fromhex(span["data-bytes"]) for span in section["spans"]).decode() == text
        assert all(span["title"].startswith(("id ", "ids ", "special token ")) for span in section["spans"])
    assert "<b>" not in page and "&lt;" in page  # the text's markup is escaped


def test_cli_view_is_plain_when_piped_and_coloured_on_request(mix_tok_dir):
    """Through the real command: piped output has separators and no escape codes (it is not a tty);
    --color always gives the alternating backgrounds, whose text is the input again."""
    text = "Hello, world! 你好 12345\n"
    plain = run_cli("view", "-t", mix_tok_dir, "--text", text, "--ids").stdout.decode("utf-8")
    assert "\x1b[" not in plain and "|" in plain and re.search(r"\[\d+\]", plain)
    coloured = run_cli("view", "-t", mix_tok_dir, "--text", text, "--color", "always").stdout.decode("utf-8")
    backgrounds = re.findall(r"\x1b\[38;5;16;48;5;(\d+)", coloured)
    assert len(set(backgrounds)) >= 2  # alternating
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured).replace("\u21b5", "") == text
