"""Show how a tokenizer splits text: coloured tokens in a terminal, or a self-contained HTML page.

Tokens are bytes, and a token may hold only part of a character's UTF-8 encoding (GPT-2 cuts
most CJK characters in two). A view cannot colour half a character, so tokens are grouped into
*segments*: the shortest runs of consecutive tokens whose bytes start and end on character
boundaries. Nearly every segment is one token; a segment of several tokens (one character split
across tokens) is marked as such and lists every id and every token's bytes.

Any tokenizer of :mod:`hf_bbpe.analysis.foreign_tokenizers` can be viewed: a sentencepiece or
WordPiece token shows its label (``▁the``, ``##ing``), a byte-fallback token its bytes.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine.tokenizer import Tokenizer
from .foreign_tokenizers import ViewTokenizer, as_view_tokenizer


@dataclass(frozen=True)
class Segment:
    """Consecutive tokens whose bytes, together, are whole characters."""

    ids: tuple[int, ...]
    pieces: tuple[bytes, ...]  # the bytes of each token, in order
    special: bool = False
    labels: tuple[str | None, ...] = ()  # how to show each token, if not as its bytes (``▁the``)

    @property
    def data(self) -> bytes:
        return b"".join(self.pieces)

    @property
    def text(self) -> str:
        """The segment as drawn: its bytes as text, with each labelled token shown by its label."""
        if not any(label is not None for label in self.labels):
            return self.data.decode("utf-8", errors="replace")
        shown = (piece if label is None else label.encode("utf-8") for piece, label in zip(self.pieces, self.labels))
        return b"".join(shown).decode("utf-8", errors="replace")

    @property
    def split_character(self) -> bool:
        """True when this segment is several tokens that cut a character's bytes."""
        return len(self.ids) > 1


@dataclass
class TokenizedText:
    """One tokenizer's view of a text: the ids and the segments to draw."""

    name: str
    text: str
    ids: list[int]
    segments: list[Segment] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    @property
    def n_chars(self) -> int:
        return len(self.text)

    @property
    def n_bytes(self) -> int:
        return len(self.text.encode("utf-8", errors="surrogatepass"))


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def segment_tokens(tok: Tokenizer | ViewTokenizer, ids: Sequence[int]) -> list[Segment]:
    """Group ``ids`` into segments that start and end on UTF-8 character boundaries.

    A boundary falls before a token unless its first byte is a UTF-8 continuation byte; special
    tokens always stand alone. Unknown ids raise ValueError naming the id.
    """
    tok = as_view_tokenizer(tok)
    segments: list[Segment] = []
    run_ids: list[int] = []
    run_pieces: list[bytes] = []
    run_labels: list[str | None] = []

    def flush() -> None:
        if run_ids:
            labels = tuple(run_labels) if any(label is not None for label in run_labels) else ()
            segments.append(Segment(tuple(run_ids), tuple(run_pieces), labels=labels))
            run_ids.clear()
            run_pieces.clear()
            run_labels.clear()

    for idx in ids:
        piece = tok.piece(idx)
        if piece.special:
            flush()
            segments.append(Segment((idx,), (piece.data,), special=True))
            continue
        if run_ids and not (piece.data and _is_continuation(piece.data[0]) and piece.label is None):
            flush()
        run_ids.append(idx)
        run_pieces.append(piece.data)
        run_labels.append(piece.label)
    flush()
    return segments


def tokenize_for_view(tok: Tokenizer | ViewTokenizer, name: str, text: str, *,
                      allowed_special: str | set = "all") -> TokenizedText:
    """Encode ``text`` (special tokens as ids by default) and segment it for display.

    An engine Tokenizer honours ``allowed_special``; another tokenizer encodes as its library does
    (special tokens as ids when ``allowed_special`` is not empty, where the library can choose).
    """
    if isinstance(tok, Tokenizer):
        ids = tok.encode(text, allowed_special=allowed_special, disallowed_special=())
    else:
        ids = tok.encode(text, specials=bool(allowed_special))
    return TokenizedText(name=name, text=text, ids=ids, segments=segment_tokens(tok, ids))


# ------------------------------------------------------------------ display helpers

_CONTROL_PICTURES = {0x7F: "\u2421"}


def visible_text(text: str) -> str:
    """Text for display: newlines get a visible ``↵`` before them, other control characters
    become their Unicode control pictures (``␀``, ``␍``...). Tabs stay tabs."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\n":
            out.append("\u21b5\n")
        elif ch == "\t":
            out.append(ch)
        elif code < 0x20:
            out.append(chr(0x2400 + code))
        elif code in _CONTROL_PICTURES:
            out.append(_CONTROL_PICTURES[code])
        elif unicodedata.category(ch) == "Cc":
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "".join(out)


def describe_segment(segment: Segment) -> str:
    """One line for a tooltip: the id(s), each token's bytes in hex, and the text."""
    label = "special token" if segment.special else ("ids" if segment.split_character else "id")
    ids = " ".join(map(str, segment.ids))
    pieces = " | ".join(piece.hex(" ") for piece in segment.pieces)
    note = f" ({len(segment.ids)} tokens for whole characters)" if segment.split_character else ""
    return f"{label} {ids} · bytes {pieces} · {segment.text!r}{note}"


# ------------------------------------------------------------------ terminal

_BACKGROUNDS = (153, 186, 151, 217, 183, 223)  # 256-colour pastel backgrounds
_SPLIT_BACKGROUND = 210
_SPECIAL_BACKGROUND = 141
_RESET = "\x1b[0m"


def _ansi(background: int, *, bold: bool = False, underline: bool = False) -> str:
    codes = ["38;5;16", f"48;5;{background}"]
    if bold:
        codes.append("1")
    if underline:
        codes.append("4")
    return "\x1b[" + ";".join(codes) + "m"


def render_terminal(view: TokenizedText, *, color: bool, show_ids: bool = False, sep: str = "|") -> str:
    """The text with token boundaries shown.

    ``color=True``: alternating ANSI background colours (a character split across tokens is
    underlined on red, special tokens bold on purple), newlines marked ``↵``; ids, if asked,
    follow each token in dim brackets. ``color=False``: plain text with ``sep`` between tokens
    and ``[id]`` after each token if asked.
    """
    out: list[str] = []
    for i, segment in enumerate(view.segments):
        ids = f"[{' '.join(map(str, segment.ids))}]" if show_ids else ""
        text = segment.text if not color else visible_text(segment.text)
        # ids go before a final newline, so they stay on the token's line
        body, newline = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        if not color:
            if i:
                out.append(sep)
            out.append(body + ids + newline)
            continue
        if segment.special:
            style = _ansi(_SPECIAL_BACKGROUND, bold=True)
        elif segment.split_character:
            style = _ansi(_SPLIT_BACKGROUND, underline=True)
        else:
            style = _ansi(_BACKGROUNDS[i % len(_BACKGROUNDS)])
        # the background stops at each line end, so a newline token does not paint the margin
        out.append("\n".join(style + line + _RESET if line else "" for line in body.split("\n")))
        if ids:
            out.append(f"\x1b[2m{ids}{_RESET}")
        out.append(newline)
    return "".join(out)


def summary_line(view: TokenizedText) -> str:
    """``name: N tokens, C chars, B bytes (x.xx chars/token)``."""
    ratio = view.n_chars / view.n_tokens if view.n_tokens else 0.0
    return f"{view.name}: {view.n_tokens} tokens, {view.n_chars} chars, {view.n_bytes} bytes ({ratio:.2f} chars/token)"


# ------------------------------------------------------------------ HTML

VIEW_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; background: #fff; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
p.meta { margin: 0 0 1rem; color: #555; }
.grid { display: grid; gap: 1rem; }
section.tokenizer { border: 1px solid #ccc; border-radius: 6px; padding: .6rem .8rem; min-width: 0; }
section.tokenizer h2 { font-size: 1rem; margin: 0 0 .2rem; overflow-wrap: anywhere; }
p.counts { margin: 0 0 .6rem; font-size: .9rem; color: #333; }
p.counts b { font-size: 1.1rem; }
.text { font-family: ui-monospace, monospace; font-size: 14px; line-height: 1.7;
        white-space: pre-wrap; overflow-wrap: anywhere; }
.t { border-radius: 3px; }
.t:hover { outline: 2px solid #222; }
.c0 { background: #bfdbfe; } .c1 { background: #fde68a; } .c2 { background: #bbf7d0; }
.c3 { background: #fecaca; } .c4 { background: #ddd6fe; } .c5 { background: #fed7aa; }
.split { background: #fda4af; text-decoration: underline dashed; }
.special { background: #c4b5fd; font-weight: bold; outline: 1px solid #7c3aed; }
.t sub { font-size: 9px; color: #444; margin-left: 1px; }
details { margin-top: .6rem; font-size: .85rem; }
details pre { white-space: pre-wrap; overflow-wrap: anywhere; }
"""


def _span(segment: Segment, index: int, show_ids: bool) -> str:
    if segment.special:
        cls = "t special"
    elif segment.split_character:
        cls = "t split"
    else:
        cls = f"t c{index % 6}"
    ids = " ".join(map(str, segment.ids))
    label = html.escape(visible_text(segment.text), quote=False)
    if show_ids:
        # the id goes before a final newline, so it stays on the token's line
        body, newline = (label[:-1], "\n") if label.endswith("\n") else (label, "")
        label = f"{body}<sub>{ids}</sub>{newline}"
    return (
        f'<span class="{cls}" data-ids="{ids}" data-bytes="{segment.data.hex()}" '
        f'title="{html.escape(describe_segment(segment))}">{label}</span>'
    )


def shown_segments(view: TokenizedText, max_chars: int | None) -> list[Segment]:
    """The segments that cover the first ``max_chars`` characters (all of them for None or 0).

    Whole segments only, so the shown text may run a few characters past ``max_chars``.
    """
    if not max_chars:
        return view.segments
    shown, n_chars = [], 0
    for segment in view.segments:
        if n_chars >= max_chars:
            break
        shown.append(segment)
        n_chars += len(segment.text)
    return shown


def render_section(view: TokenizedText, *, show_ids: bool = False, max_chars: int | None = None) -> str:
    """One tokenizer's ``<section>`` of the page (also what the live app draws): its counts, its
    tokens as ``span.t`` and its ids in a ``<details>`` block; style from :data:`VIEW_CSS`."""
    ratio = view.n_chars / view.n_tokens if view.n_tokens else 0.0
    segments = shown_segments(view, max_chars)
    spans = "".join(_span(segment, i, show_ids) for i, segment in enumerate(segments))
    shown_ids = view.ids[: sum(len(segment.ids) for segment in segments)]
    more = len(view.ids) - len(shown_ids)
    cut = (f'<p class="truncated">Showing the tokens of the first {sum(len(s.text) for s in segments)} of '
           f"{view.n_chars} characters.</p>") if more else ""
    return (
        f'<section class="tokenizer" data-name="{html.escape(view.name)}" data-tokens="{view.n_tokens}" '
        f'data-chars="{view.n_chars}">'
        f"<h2>{html.escape(view.name)}</h2>"
        f'<p class="counts"><b class="n-tokens">{view.n_tokens}</b> tokens · '
        f'<span class="n-chars">{view.n_chars}</span> characters · {ratio:.2f} characters/token</p>'
        f'{cut}<div class="text">{spans}</div>'
        f"<details><summary>token ids</summary><pre>{' '.join(map(str, shown_ids))}"
        f"{f' … ({more} more)' if more else ''}</pre></details>"
        "</section>"
    )


def render_html(views: Sequence[TokenizedText], *, title: str = "hf-bbpe token view", show_ids: bool = False,
                max_chars: int | None = None) -> str:
    """One self-contained HTML page: the views side by side, no scripts, fonts or links.

    Each token segment is a ``span.t`` with ``data-ids`` (its ids) and ``data-bytes`` (hex),
    and a ``title`` with ids, bytes and text shown on hover. Each view shows its token,
    character and byte counts; the id list is in a ``<details>`` block. ``max_chars`` (None or 0:
    no limit) draws only the tokens of the first ``max_chars`` characters, since a page grows by
    about 60 bytes per character and tokenizer; the counts are still the whole text's.
    """
    columns = max(1, len(views))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{VIEW_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if views:
        first = views[0]
        parts.append(f'<p class="meta">{first.n_chars} characters, {first.n_bytes} bytes of UTF-8. '
                     "Hover a token for its id and bytes.</p>")
    parts.append(f'<div class="grid" style="grid-template-columns: repeat({columns}, minmax(0, 1fr))">')
    for view in views:
        parts.append(render_section(view, show_ids=show_ids, max_chars=max_chars))
    parts.append("</div></body></html>")
    return "\n".join(parts) + "\n"
