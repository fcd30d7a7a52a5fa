"""Compare tokenizers on texts: tokens, bytes per token and characters per token.

The measure behind statements like "non-English text costs more tokens", "GPT-4 packs code
better than GPT-2" or "JSON costs more than YAML", computed on the user's own files. More bytes
(or characters) per token means a more compact encoding.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..engine.progress import progress_bar
from ..engine.tokenizer import Tokenizer
from .foreign_tokenizers import ViewTokenizer
from .text_table import format_table

TOTAL = "(total)"


@dataclass(frozen=True)
class CompareRow:
    """One tokenizer on one text (or on all texts, when ``file`` is ``(total)``)."""

    tokenizer: str
    file: str
    tokens: int
    bytes: int
    chars: int
    tokens_vs_first: float  # tokens / tokens of the first tokenizer on the same text

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0

    def as_dict(self) -> dict:
        out = asdict(self)
        out["bytes_per_token"] = round(self.bytes_per_token, 4)
        out["chars_per_token"] = round(self.chars_per_token, 4)
        out["tokens_vs_first"] = round(self.tokens_vs_first, 4)
        return out


def count_tokens(tok: Tokenizer | ViewTokenizer, text: str, *, specials: bool = False) -> int:
    """Tokens for ``text``; special-token strings count as ordinary text unless ``specials`` (for
    a foreign tokenizer, as far as its library can: see ViewTokenizer.encode)."""
    if not isinstance(tok, Tokenizer):
        return len(tok.encode(text, specials=specials))
    if specials:
        return len(tok.encode(text, allowed_special="all", disallowed_special=()))
    return len(tok.encode_ordinary(text))


def compare_tokenizers(
    tokenizers: Sequence[tuple[str, Tokenizer | ViewTokenizer]],
    texts: Sequence[tuple[str, str]],
    *,
    specials: bool = False,
    progress: bool | None = None,
) -> list[CompareRow]:
    """Rows for every (tokenizer, text) pair, text by text, plus a total per tokenizer when there
    are several texts. ``tokenizers`` and ``texts`` are ``(name, value)`` pairs. A progress bar
    counts encoded characters (on a terminal, or as ``progress`` says)."""
    total = sum(len(text) for _, text in texts) * len(tokenizers)
    counts: list[list[int]] = []
    with progress_bar(desc="encoding", total=total, unit="char", scale=True, enabled=progress) as bar:
        for _, text in texts:
            row = []
            for _, tok in tokenizers:
                row.append(count_tokens(tok, text, specials=specials))
                bar.update(len(text))
            counts.append(row)
    sizes = [(len(text.encode("utf-8", errors="surrogatepass")), len(text)) for _, text in texts]
    rows: list[CompareRow] = []
    for t, (file_name, _) in enumerate(texts):
        first = counts[t][0] if tokenizers else 0
        for k, (tok_name, _) in enumerate(tokenizers):
            n = counts[t][k]
            rows.append(CompareRow(tok_name, file_name, n, sizes[t][0], sizes[t][1], n / first if first else 0.0))
    if len(texts) > 1:
        total_bytes = sum(b for b, _ in sizes)
        total_chars = sum(c for _, c in sizes)
        first_total = sum(row[0] for row in counts) if tokenizers else 0
        for k, (tok_name, _) in enumerate(tokenizers):
            n = sum(row[k] for row in counts)
            rows.append(CompareRow(tok_name, TOTAL, n, total_bytes, total_chars, n / first_total if first_total else 0.0))
    return rows


_COLUMNS = ("file", "tokenizer", "tokens", "bytes", "chars", "bytes/token", "chars/token", "tokens vs first")


def _values(row: CompareRow) -> list:
    return [row.file, row.tokenizer, row.tokens, row.bytes, row.chars, row.bytes_per_token, row.chars_per_token,
            row.tokens_vs_first]


def rows_to_table(rows: Sequence[CompareRow]) -> str:
    """An aligned text table, one line per (text, tokenizer)."""
    return format_table(_COLUMNS, [_values(row) for row in rows])


def rows_to_csv(rows: Sequence[CompareRow]) -> str:
    """CSV with a header line; ratios with 4 decimals."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["file", "tokenizer", "tokens", "bytes", "chars", "bytes_per_token", "chars_per_token",
                     "tokens_vs_first"])
    for row in rows:
        d = row.as_dict()
        writer.writerow([d["file"], d["tokenizer"], d["tokens"], d["bytes"], d["chars"], d["bytes_per_token"],
                         d["chars_per_token"], d["tokens_vs_first"]])
    return buffer.getvalue()


def rows_to_json(rows: Sequence[CompareRow]) -> str:
    """A JSON list of objects, one per row."""
    return json.dumps([row.as_dict() for row in rows], ensure_ascii=False, indent=2) + "\n"
