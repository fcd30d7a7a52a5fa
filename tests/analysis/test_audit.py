"""Tokenizer audit: the unreachable-token criterion against brute force, the UTF-8 criterion against
every character, and a CLI audit of a tokenizer trained on one corpus and audited on another."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.analysis.audit import (
    REASON_MERGE_ORDER,
    REASON_NOT_UTF8_TEXT,
    audit_tokenizer,
    is_typeable,
    is_utf8,
    occurs_in_utf8,
    unreachable_tokens,
)
from hf_bbpe.analysis.text_table import display_width, format_table
from tests.support.cli import GPT2_DIR, MIX, TAYLOR, run_cli, save_model_file

A, B, C = b"abc"


def test_counter_example_from_pair_keyed_merges():
    """Merges bc, ab, (ab)c: 'abc' becomes a + bc, so the token abc can never be produced."""
    tok = Tokenizer.from_merges({(B, C): 256, (A, B): 257, (257, C): 258})
    (found,) = unreachable_tokens(tok)[-1:]
    assert found.id == 258 and found.reasons == (REASON_MERGE_ORDER,) and found.encodes_as == (A, 256)
    produced = {i for n in range(1, 7) for s in itertools.product("abc", repeat=n) for i in tok.encode("".join(s))}
    assert 258 not in produced and {256, 257} <= produced


def _produced_by_all_strings(tok: Tokenizer, alphabet: str, max_len: int) -> set[int]:
    produced = set()
    for n in range(1, max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            produced.update(tok.encode_ordinary("".join(chars)))
    return produced


@st.composite
def random_merges(draw):
    """Up to 12 random merges over the bytes a, b, c, with tokens at most 5 bytes long."""
    length = {A: 1, B: 1, C: 1}
    merges = {}
    for _ in range(draw(st.integers(1, 12))):
        ids = sorted(length)
        left, right = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
        if (left, right) in merges or length[left] + length[right] > 5:
            continue
        new = 256 + len(merges)
        merges[(left, right)] = new
        length[new] = length[left] + length[right]
    return merges


@settings(max_examples=60, deadline=None)
@given(random_merges())
@example({(A, A): 256, (A, 256): 257, (256, A): 258})  # two tokens spell "aaa": only 258 is reachable
def test_merge_order_criterion_equals_brute_force(merges):
    """With no split pattern, the tokens some string produces are exactly the tokens the criterion
    calls reachable (all strings over the alphabet up to the longest token's length)."""
    tok = Tokenizer.from_merges(merges)
    merged = set(tok.merges.values())
    unreachable = {u.id for u in unreachable_tokens(tok) if REASON_MERGE_ORDER in u.reasons}
    produced = _produced_by_all_strings(tok, "abc", max(len(tok.vocab[i]) for i in merged))
    assert merged - unreachable == produced & merged


def _utf8_substrings_up_to_2() -> tuple[set[bytes], set[bytes]]:
    """Every 1- and 2-byte string that occurs in the UTF-8 encoding of some text."""
    encodings = [chr(c).encode() for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    ones, twos, firsts, lasts = set(), set(), set(), set()
    for e in encodings:
        firsts.add(e[0])
        lasts.add(e[-1])
        for i in range(len(e)):
            ones.add(e[i:i + 1])
            if i + 2 <= len(e):
                twos.add(e[i:i + 2])
    twos |= {bytes([a, b]) for a in lasts for b in firsts}
    return ones, twos


def test_occurs_in_utf8_equals_brute_force_for_short_byte_strings():
    ones, twos = _utf8_substrings_up_to_2()
    assert {bytes([b]) for b in range(256) if occurs_in_utf8(bytes([b]))} == ones
    assert {bytes([a, b]) for a in range(256) for b in range(256) if occurs_in_utf8(bytes([a, b]))} == twos


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8), st.data())
def test_occurs_in_utf8_accepts_every_slice_of_real_text(text, data):
    encoded = text.encode()
    start = data.draw(st.integers(0, len(encoded) - 1))
    end = data.draw(st.integers(start + 1, len(encoded)))
    assert occurs_in_utf8(encoded[start:end])
    assert not occurs_in_utf8(encoded[start:end] + b"\xff")
    assert not occurs_in_utf8(b"\x80\x80\x80\x80" + encoded[start:end])


def test_is_typeable():
    assert is_typeable("<|endoftext|>") and is_typeable("<s>\n")
    assert not is_typeable("\ue000") and not is_typeable("a\u200bb") and not is_typeable("\x00")


# ------------------------------------------------------------------ one corpus vs another, via the CLI


@pytest.fixture(scope="module")
def taylor_tok(tmp_path_factory):
    tok = RegexTokenizer("gpt4")
    tok.train(TAYLOR.read_text(encoding="utf-8"), 600, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 600, "<|pad|>": 601})
    return save_model_file(tok, tmp_path_factory.mktemp("audit"), "taylor"), tok


def test_audit_trained_on_one_corpus_and_audited_on_another(taylor_tok, tmp_path):
    """Trained on the Taylor Swift article, audited on mix-sample (plus a file with a special token):
    every list equals an independent count of the ids the library produces."""
    model_file, tok = taylor_tok
    extra = tmp_path / "extra.txt"
    extra.write_text("a <|endoftext|> b <|endoftext|>\n", encoding="utf-8")
    report = json.loads(run_cli("audit", model_file, MIX, extra, "--json", "--rare", 3).stdout)

    texts = [MIX.read_text(encoding="utf-8"), extra.read_text(encoding="utf-8")]
    counts = Counter(i for t in texts for i in tok.encode_ordinary(t))
    merged = list(tok.merges.values())  # in merge order
    assert report["corpus"]["tokens"] == sum(counts.values())
    assert report["tokens_used"] == len(counts)
    assert [t["id"] for t in report["glitch_candidates"]] == [i for i in merged if counts[i] == 0]
    assert len(report["glitch_candidates"]) > 10  # Taylor Swift tokens that fortunes and code never use
    used_by = Counter(side for pair in tok.merges for side in pair)
    assert [t["used_by_merges"] for t in report["glitch_candidates"]] == [
        used_by[t["id"]] for t in report["glitch_candidates"]]
    rare = sorted((i for i in merged if 0 < counts[i] <= 3), key=lambda i: (counts[i], merged.index(i)))
    assert [(t["id"], t["count"]) for t in report["rare_tokens"]] == [(i, counts[i]) for i in rare]
    # a trained tokenizer has no merge-order-unreachable token: training merged in encoding's order;
    # only the byte tokens that UTF-8 never uses remain
    assert {t["id"] for t in report["unreachable"]} == {0xC0, 0xC1, *range(0xF5, 0x100)}
    assert all(t["reasons"] == [REASON_NOT_UTF8_TEXT] for t in report["unreachable"])
    specials = {s["token"]: s for s in report["special_tokens"]}
    assert specials["<|endoftext|>"]["corpus_occurrences"] == 2 and specials["<|endoftext|>"]["at_risk"]
    assert specials["<|pad|>"]["corpus_occurrences"] == 0 and specials["<|pad|>"]["typeable"]
    assert specials["<|endoftext|>"]["ordinary_encoding"] == tok.encode_ordinary("<|endoftext|>")

    table = run_cli("audit", model_file, MIX, "--top", 5).stdout.decode()
    assert "glitch candidates" in table and "unreachable tokens (encode can never produce them): 13" in table


def test_audit_reports_merge_order_unreachable_and_partial_tokens(tmp_path):
    """A hand-made .model with the pair-keyed counter-example and a token that ends inside 'é'."""
    tok = Tokenizer.from_merges({(B, C): 256, (A, B): 257, (257, C): 258, (32, 0xC3): 259})
    tok.save(tmp_path / "odd")
    report = json.loads(run_cli("audit", tmp_path / "odd.model", TAYLOR, "--json").stdout)
    by_id = {u["id"]: u for u in report["unreachable"]}
    assert by_id[258]["reasons"] == [REASON_MERGE_ORDER] and by_id[258]["encodes_as"] == [A, 256]
    assert [t["id"] for t in report["not_utf8"]] == [259]
    assert 258 not in [t["id"] for t in report["glitch_candidates"]]  # unreachable is not a glitch candidate
    in_process = audit_tokenizer(tok, [("t", TAYLOR.read_text(encoding="utf-8"))])
    assert [u.id for u in in_process.unreachable] == sorted(by_id)


def test_gpt2_audit_finds_solidgoldmagikarp():
    """On GPT-2 (permuted byte ids) audited on mix-sample: ' SolidGoldMagikarp' is a never-produced
    leaf token; all 50,000 merges are reachable (only the 13 bytes UTF-8 never uses are not)."""
    report = json.loads(run_cli("audit", GPT2_DIR, MIX, "--json").stdout)
    glitch = {t["text"]: t for t in report["glitch_candidates"]}
    assert glitch[" SolidGoldMagikarp"]["id"] == 43453 and glitch[" SolidGoldMagikarp"]["used_by_merges"] == 0
    assert sorted(bytes.fromhex(t["bytes"])[0] for t in report["unreachable"]) == [0xC0, 0xC1, *range(0xF5, 0x100)]
    assert len(report["not_utf8"]) == 216


# ------------------------------------------------------------------ parts of characters, and CJK tables


@pytest.fixture(scope="module")
def mix_tok(tmp_path_factory):
    """Trained on mix-sample (CJK among its nine languages): merges that end inside a character."""
    tok = RegexTokenizer("gpt4")
    tok.train(MIX.read_text(encoding="utf-8"), 1200, progress=False)
    return save_model_file(tok, tmp_path_factory.mktemp("audit_mix"), "mix"), tok


def test_parts_of_characters_are_no_glitch_candidates(mix_tok):
    """Audited on the English Taylor Swift article, the CJK merges' partial-UTF-8 steps are never
    produced: they are listed as parts of characters with their counts (0 for most), and the glitch
    candidates are exactly the whole-character merged tokens never produced."""
    model_file, tok = mix_tok
    report = json.loads(run_cli("audit", model_file, TAYLOR, "--json").stdout)
    counts = Counter(tok.encode_ordinary(TAYLOR.read_text(encoding="utf-8")))
    merged = list(tok.merges.values())
    partial = [i for i in merged if not is_utf8(tok.vocab[i])]
    assert sum(counts[i] == 0 for i in partial) > 10
    assert [t["id"] for t in report["glitch_candidates"]] == [i for i in merged if counts[i] == 0 and i not in partial]
    assert [(t["id"], t["count"]) for t in report["not_utf8"]] == [(i, counts[i]) for i in sorted(partial)]


def test_format_table_pads_by_display_width():
    """Wide CJK characters take two columns, a combining mark none: every column starts at the
    same terminal column on every line."""
    rows = [[1, "'中文'", "e4 b8 ad", 3], [22, "'e\u0301'", "65 cc 81", 10], [333, "'ab'", "61 62", 7]]
    lines = format_table(["id", "token", "bytes", "n"], rows).splitlines()
    starts = {display_width(line[: line.index(cell)]) for line, row in zip(lines[2:], rows) for cell in [row[2]]}
    assert len(starts) == 1
    assert len({display_width(line) for line in lines}) == 1  # the last column is right-aligned numbers
    assert display_width("中文") == 4 and display_width("e\u0301") == 1 and display_width("👍") == 2


def _columns_hold(table: list[str]) -> bool:
    """Every line of a format_table table keeps the two spaces between columns where the dashes
    line puts them, counted in terminal columns (a wide character takes two)."""
    columns = [(m.start(), m.end()) for m in re.finditer(r"-+", table[1])]
    for line in table:
        cells = [part for char in line for part in [char] + [""] * (display_width(char) - 1)]
        if any(len(cells) > end and cells[end:end + 2] != [" ", " "] for _, end in columns[:-1]):
            return False
        # a cell's text touches its column's left edge (left-aligned) or right edge (right-aligned)
        if any(start < len(cells) and cells[start:end].count(" ") < end - start
               and cells[start] == " " and (end > len(cells) or cells[end - 1] == " ") for start, end in columns):
            return False
    return True


def test_audit_tables_align_around_cjk(mix_tok):
    """The audit's text tables, audited on English text (so the never-produced tokens are CJK),
    keep their columns at the same display column on every line."""
    model_file, _ = mix_tok
    text = run_cli("audit", model_file, TAYLOR, "--top", 400).stdout.decode()
    tables = [block.splitlines()[1:] for block in text.split("\n\n")[1:] if len(block.splitlines()) > 2]
    assert any(display_width(line) != len(line) for table in tables for line in table), "no wide character"
    assert all(_columns_hold(table) for table in tables)
