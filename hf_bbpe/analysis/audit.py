"""Audit a tokenizer against a reference corpus: glitch-token candidates, unreachable tokens,
tokens that are not UTF-8 on their own, and special tokens that plain text can spell.

Criteria (each is exact unless it says otherwise):

* **Glitch candidates**: merged tokens that encoding the corpus never produces, that encoding
  *can* produce (not unreachable, below), and whose bytes are UTF-8 alone (whole characters).
  Tokens like "SolidGoldMagikarp" are merges the
  tokenizer's training data made early (so with a low merge rank) that a model's training data
  then hardly ever showed; they are listed in merge order, earliest first, with the number of
  later merges that use each as a part (a token that is mostly a step towards longer tokens,
  like GPT-2's ``" wh"``, is seldom produced itself; a "leaf" token, used by no merge, like
  ``" SolidGoldMagikarp"``, is produced only when its exact text appears). **Rare tokens** are
  merged tokens produced between 1 and ``rare`` times.
* **Unreachable**: tokens that ``encode`` can never produce, whatever the text. Two exact reasons:

  - *merge order*: encoding the token's own bytes as one chunk does not give the token itself.
    Encoding applies the lowest merge present anywhere in a chunk; while no merge crosses the
    edges of a stretch of bytes, the merges inside it happen in the same order as when the
    stretch is encoded alone, and once one crosses an edge the stretch can never become one
    token. So a token appears inside a longer chunk only if its bytes alone encode to it: the
    test is necessary. It is also sufficient for the merges: a chunk equal to those bytes gives
    the token. (Example: merges ``b c``, ``a b``, ``ab c``: "abc" becomes ``a`` ``bc``, so
    ``abc`` is unreachable.) Whether the split pattern ever cuts a chunk containing those bytes
    is not checked: regexes are not analysed, so tokens the pattern never lets form are not
    reported.
  - *not UTF-8 text*: the bytes cannot occur inside the UTF-8 encoding of any text (bytes
    C0, C1, F5-FF, more than three continuation bytes in a row, a lead byte followed by a
    non-continuation byte...). ``encode`` takes text (lone surrogates become U+FFFD first), so
    such tokens are only reachable through ``decode``.
* **Not valid UTF-8 alone**: merged tokens whose bytes do not decode on their own (part of a
  character), with the number of times the corpus produced each. They are normal for byte-level
  BPE, but a text view must group them. The 128 single bytes 0x80-0xFF are always in this class
  and are left out of the list. They are not glitch candidates: such a token is a step of the
  merges towards the whole characters it is part of, and most are never produced, however common
  those characters are. ``encode`` takes text (valid UTF-8), so it produces one only beside other
  tokens that hold the rest of its characters, where no merge finishes the character from it:
  after the merge E4 B8 (the start of many CJK characters), ``"丂"`` (E4 B8 82) gives the tokens
  E4B8 and 82 unless E4B8 82 is a merge too. So "never produced" says which characters the corpus
  lacks, not that a token is undertrained; such a token never makes text alone, and a model that
  generates one gives text only with the tokens that follow. Whether some character makes one
  appear is not checked (it depends on every character that can complete it).
* **Special tokens**: for each, whether plain text can spell it (all its characters are
  printable, so it can appear in user input or scraped text: encoding untrusted text with
  ``allowed_special="all"`` would then inject it), how often the corpus contains it, and
  whether an ordinary token has the same bytes.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from ..engine.chunking.byte_unicode import render_token
from ..engine.progress import progress_bar
from ..engine.tokenizer import Tokenizer
from .text_table import format_table
from .token_text import token_literal

REASON_MERGE_ORDER = "merge order"
REASON_NOT_UTF8_TEXT = "not UTF-8 text"


def is_utf8(data: bytes) -> bool:
    """True if ``data`` decodes as UTF-8 on its own."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _second_byte_range(lead: int) -> tuple[int, int, int] | None:
    """(low, high, continuation bytes) that may follow ``lead`` (RFC 3629's table), None if invalid."""
    if lead <= 0x7F:
        return (0, 0, 0)
    if 0xC2 <= lead <= 0xDF:
        return (0x80, 0xBF, 1)
    if lead == 0xE0:
        return (0xA0, 0xBF, 2)
    if lead == 0xED:  # no surrogates
        return (0x80, 0x9F, 2)
    if 0xE1 <= lead <= 0xEF:
        return (0x80, 0xBF, 2)
    if lead == 0xF0:
        return (0x90, 0xBF, 3)
    if 0xF1 <= lead <= 0xF3:
        return (0x80, 0xBF, 3)
    if lead == 0xF4:
        return (0x80, 0x8F, 3)
    return None


def occurs_in_utf8(data: bytes) -> bool:
    """True if ``data`` can occur inside the UTF-8 encoding of some text.

    Up to three leading continuation bytes can finish a character begun before (a lead byte
    such as C2, E1 or F1 accepts any of them); after that, every character must be well formed
    by RFC 3629 (no overlong forms, no surrogates, nothing above U+10FFFF), except that the
    last one may be cut short.
    """
    n = len(data)
    i = 0
    while i < n and 0x80 <= data[i] <= 0xBF:
        i += 1
    if i > 3:
        return False
    while i < n:
        rule = _second_byte_range(data[i])
        if rule is None:
            return False
        low, high, continuations = rule
        if continuations:
            if i + 1 < n and not low <= data[i + 1] <= high:
                return False
            for j in range(i + 2, min(i + 1 + continuations, n)):
                if not 0x80 <= data[j] <= 0xBF:
                    return False
        i += 1 + continuations
    return True


@dataclass(frozen=True)
class UnreachableToken:
    id: int
    data: bytes
    reasons: tuple[str, ...]
    encodes_as: tuple[int, ...]  # what the token's bytes encode to as one chunk


def unreachable_tokens(tok: Tokenizer) -> list[UnreachableToken]:
    """Ordinary tokens that ``encode`` can never produce, in id order (criteria in the module doc)."""
    out = []
    specials = set(tok.special_tokens.values())
    # not mergeable_ranks(): two merges may spell the same bytes, and both must be checked
    for idx, data in sorted(tok.vocab.items()):
        if idx in specials:
            continue
        found = check_reachable(tok.encode_single_piece, idx, data)
        if found.reasons:
            out.append(found)
    return out


def check_reachable(encode_piece: Callable[[bytes], list[int]], idx: int, data: bytes) -> UnreachableToken:
    """Token ``idx`` with bytes ``data`` and the reasons (none if reachable) encode cannot produce it;
    ``encode_piece`` is the tokenizer's ``encode_single_piece`` (its mode decides)."""
    encoded = tuple(encode_piece(data))
    reasons = []
    if encoded != (idx,):
        reasons.append(REASON_MERGE_ORDER)
    if not occurs_in_utf8(data):
        reasons.append(REASON_NOT_UTF8_TEXT)
    return UnreachableToken(idx, data, tuple(reasons), encoded)


def partial_utf8_tokens(tok: Tokenizer) -> list[int]:
    """Ids of merged tokens (not single bytes, not special) whose bytes are not UTF-8 alone."""
    return sorted(new for new in tok.merges.values() if not is_utf8(tok.vocab[new]))


def is_typeable(text: str) -> bool:
    """True if every character is one that ordinary text contains (no control, format,
    private-use, surrogate or unassigned characters)."""
    return all(unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs", "Cn") or ch in "\t\n\r" for ch in text)


@dataclass(frozen=True)
class SpecialTokenRisk:
    token: str
    id: int
    typeable: bool
    corpus_occurrences: int
    ordinary_token_id: int | None  # an ordinary token with the same bytes, if any
    ordinary_encoding: tuple[int, ...]  # the ids the string gets as ordinary text

    @property
    def at_risk(self) -> bool:
        return self.typeable or self.corpus_occurrences > 0


def special_token_risks(tok: Tokenizer, texts: Sequence[str]) -> list[SpecialTokenRisk]:
    """One entry per special token, in id order."""
    ranks = tok.mergeable_ranks()
    out = []
    for token, idx in sorted(tok.special_tokens.items(), key=lambda item: item[1]):
        occurrences = sum(text.count(token) for text in texts)
        out.append(SpecialTokenRisk(
            token=token,
            id=idx,
            typeable=is_typeable(token),
            corpus_occurrences=occurrences,
            ordinary_token_id=ranks.get(token.encode("utf-8")),
            ordinary_encoding=tuple(tok.encode_ordinary(token)),
        ))
    return out


@dataclass
class TokenCount:
    id: int
    data: bytes
    count: int
    merge_rank: int | None  # position in merge order (0 = first merge); None for single bytes
    used_by_merges: int = 0  # later merges that take this token as a part (0: a "leaf" token)


@dataclass
class AuditReport:
    tokenizer: str
    n_vocab: int
    n_merges: int
    corpus_files: list[str]
    corpus_chars: int
    corpus_tokens: int
    rare_threshold: int
    tokens_used: int
    glitch_candidates: list[TokenCount] = field(default_factory=list)
    rare_tokens: list[TokenCount] = field(default_factory=list)
    unreachable: list[UnreachableToken] = field(default_factory=list)
    not_utf8: list[int] = field(default_factory=list)
    not_utf8_counts: dict[int, int] = field(default_factory=dict)  # times the corpus produced each
    special_tokens: list[SpecialTokenRisk] = field(default_factory=list)
    vocab: dict[int, bytes] = field(default_factory=dict, repr=False)

    def to_json_dict(self) -> dict:
        """Plain JSON-ready data: token bytes as hex, text rendered for people."""
        def token(idx: int, data: bytes) -> dict:
            return {"id": idx, "text": render_token(data), "bytes": data.hex()}

        return {
            "tokenizer": self.tokenizer,
            "n_vocab": self.n_vocab,
            "merges": self.n_merges,
            "corpus": {"files": self.corpus_files, "chars": self.corpus_chars, "tokens": self.corpus_tokens},
            "rare_threshold": self.rare_threshold,
            "tokens_used": self.tokens_used,
            "glitch_candidates": [dict(token(t.id, t.data), merge_rank=t.merge_rank, used_by_merges=t.used_by_merges)
                                  for t in self.glitch_candidates],
            "rare_tokens": [dict(token(t.id, t.data), count=t.count, merge_rank=t.merge_rank,
                                 used_by_merges=t.used_by_merges) for t in self.rare_tokens],
            "unreachable": [dict(token(u.id, u.data), reasons=list(u.reasons), encodes_as=list(u.encodes_as))
                            for u in self.unreachable],
            "not_utf8": [dict(token(i, self.vocab[i]), count=self.not_utf8_counts.get(i, 0)) for i in self.not_utf8],
            "special_tokens": [dict(asdict(s), ordinary_encoding=list(s.ordinary_encoding), at_risk=s.at_risk)
                               for s in self.special_tokens],
        }


def audit_tokenizer(tok: Tokenizer, corpus: Sequence[tuple[str, str]], *, name: str = "tokenizer",
                    rare: int = 2, progress: bool | None = None) -> AuditReport:
    """Audit ``tok`` on ``corpus`` (``(file name, text)`` pairs), encoded as ordinary text; a
    progress bar counts encoded characters (on a terminal, or as ``progress`` says)."""
    counts: Counter[int] = Counter()
    total = sum(len(text) for _, text in corpus)
    with progress_bar(desc="encoding", total=total, unit="char", scale=True, enabled=progress) as bar:
        for _, text in corpus:
            counts.update(tok.encode_ordinary(text))
            bar.update(len(text))
    rank = {new: i for i, new in enumerate(tok.merges.values())}
    used_by: Counter[int] = Counter()
    for a, b in tok.merges:
        used_by[a] += 1
        used_by[b] += 1
    unreachable = unreachable_tokens(tok)
    unreachable_ids = {u.id for u in unreachable}
    merged = [(new, tok.vocab[new]) for new in tok.merges.values()]
    glitch = [TokenCount(i, d, 0, rank[i], used_by[i]) for i, d in merged
              if counts[i] == 0 and i not in unreachable_ids and is_utf8(d)]
    rare_tokens = [TokenCount(i, d, counts[i], rank[i], used_by[i]) for i, d in merged if 0 < counts[i] <= rare]
    rare_tokens.sort(key=lambda t: (t.count, t.merge_rank))
    return AuditReport(
        tokenizer=name,
        n_vocab=tok.n_vocab,
        n_merges=len(tok.merges),
        corpus_files=[f for f, _ in corpus],
        corpus_chars=sum(len(t) for _, t in corpus),
        corpus_tokens=sum(counts.values()),
        rare_threshold=rare,
        tokens_used=len(counts),
        glitch_candidates=glitch,
        rare_tokens=rare_tokens,
        unreachable=unreachable,
        not_utf8=(partial := partial_utf8_tokens(tok)),
        not_utf8_counts={i: counts[i] for i in partial},
        special_tokens=special_token_risks(tok, [t for _, t in corpus]),
        vocab=tok.vocab,
    )


def _hex(data: bytes, limit: int = 24) -> str:
    text = data.hex(" ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def report_to_text(report: AuditReport, *, top: int = 20) -> str:
    """The report as headed tables, each cut to its first ``top`` rows."""
    out = [
        f"tokenizer {report.tokenizer}: n_vocab {report.n_vocab}, {report.n_merges} merges, "
        f"{len(report.special_tokens)} special tokens",
        f"corpus: {len(report.corpus_files)} file(s), {report.corpus_chars} chars, {report.corpus_tokens} tokens; "
        f"{report.tokens_used} distinct tokens used",
    ]

    def section(title: str, total: int, headers: Sequence[str], rows: list[list]) -> None:
        out.append("")
        shown = f", first {top}" if total > top else ""
        out.append(f"{title}: {total}{shown}")
        if rows:
            out.append(format_table(headers, rows[:top]))

    section("glitch candidates (merged tokens never produced on the corpus, in merge order)",
            len(report.glitch_candidates), ["id", "merge rank", "token", "bytes", "part of merges"],
            [[t.id, t.merge_rank, token_literal(t.data), _hex(t.data), t.used_by_merges]
             for t in report.glitch_candidates])
    section(f"rare tokens (produced 1-{report.rare_threshold} times)", len(report.rare_tokens),
            ["id", "count", "token", "bytes", "part of merges"],
            [[t.id, t.count, token_literal(t.data), _hex(t.data), t.used_by_merges] for t in report.rare_tokens])
    section("unreachable tokens (encode can never produce them)", len(report.unreachable),
            ["id", "token", "bytes", "reason", "its bytes encode as"],
            [[u.id, token_literal(u.data), _hex(u.data), ", ".join(u.reasons), " ".join(map(str, u.encodes_as))]
             for u in report.unreachable])
    section("merged tokens that are not valid UTF-8 alone (parts of characters: no glitch candidates)",
            len(report.not_utf8), ["id", "token", "bytes", "count"],
            [[i, token_literal(report.vocab[i]), _hex(report.vocab[i]), report.not_utf8_counts.get(i, 0)]
             for i in report.not_utf8])
    section("special tokens", len(report.special_tokens),
            ["id", "token", "plain text can spell it", "in corpus", "same bytes as token", "as ordinary text"],
            [[s.id, token_literal(s.token.encode("utf-8")), "yes" if s.typeable else "no", s.corpus_occurrences,
              "" if s.ordinary_token_id is None else s.ordinary_token_id, f"{len(s.ordinary_encoding)} tokens"]
             for s in report.special_tokens])
    return "\n".join(out) + "\n"


def report_to_json(report: AuditReport) -> str:
    return json.dumps(report.to_json_dict(), ensure_ascii=False, indent=2) + "\n"
