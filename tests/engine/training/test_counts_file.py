"""Counts files (counts_file.py): counted once, trained from again at any vocab size. A file holds
exactly the counts it was given, in order, maps back without reading them into memory, and trains
to the merges of counting again; a file made with another split pattern, cut short, changed, or
not a counts file at all is refused with an error naming it; writing is atomic."""

from __future__ import annotations

import json
import os
import struct
import zlib
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import BasicTokenizer, RegexTokenizer
from hf_bbpe.engine.training import _chunk_count
from hf_bbpe.engine.training.counts_file import first_bad_record, load_counts, save_counts
from hf_bbpe.engine.training.counting import ChunkCounts, count_native
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS

from .test_counting import MIX, SWIFT, assert_same, distinct


@pytest.fixture(scope="module")
def mix_counts_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("counts") / "mix.counts"
    tok = RegexTokenizer("gpt4")
    counts = tok.count_chunks(files=[MIX, SWIFT], docs="paragraph", progress=False, out=path)
    return path, counts


def test_a_counts_file_holds_the_counts_in_order(mix_counts_file):
    path, counts = mix_counts_file
    loaded = load_counts(path)
    assert loaded.source == str(path) and loaded.pattern == NATIVE_PATTERNS["gpt4"]
    assert_same(distinct(loaded), distinct(counts))
    assert (loaded.documents, loaded.input_bytes, loaded.characters, loaded.control) == (
        counts.documents, counts.input_bytes, counts.characters, counts.control)
    again = path.with_name("again.counts")
    loaded.save(again)
    assert again.read_bytes() == path.read_bytes()  # (the same bytes, whoever writes them)


@pytest.mark.parametrize("tie_break", ["smallest_pair", "first_occurrence", "huggingface"])
def test_training_from_a_counts_file_equals_counting_again(mix_counts_file, tie_break):
    path, _ = mix_counts_file
    for vocab_size in (300, 900):
        from_file = RegexTokenizer("gpt4")
        from_file.train_from_counts(path, vocab_size, tie_break=tie_break)
        direct = RegexTokenizer("gpt4")
        direct.train(files=[MIX, SWIFT], vocab_size=vocab_size, docs="paragraph", tie_break=tie_break, progress=False)
        assert from_file.merges == direct.merges
    assert load_counts(path).to_dict() == mix_counts_file[1].to_dict()  # the merge loop wrote in a private copy


def test_counts_of_another_split_pattern_are_refused(mix_counts_file):
    path, _ = mix_counts_file
    with pytest.raises(ValueError, match=f"{path}: these chunk counts were made with the split pattern 'gpt4', but "
                                         "this tokenizer splits with the split pattern 'gpt2'"):
        RegexTokenizer("gpt2").train_from_counts(path, 400)
    with pytest.raises(ValueError, match="no split pattern"):
        BasicTokenizer().train_from_counts(path, 400)
    minbpe_spelling = RegexTokenizer(r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
    with pytest.raises(ValueError, match="'llama3'"):  # another spelling names the pattern it cuts as
        minbpe_spelling.train_from_counts(path, 400)


def test_cut_changed_and_foreign_files_are_refused_naming_them(mix_counts_file, tmp_path):
    path, _ = mix_counts_file
    data = path.read_bytes()
    cut = tmp_path / "cut.counts"
    cut.write_bytes(data[:-100])
    with pytest.raises(ValueError, match=f"{cut}: cut short: it holds {len(data) - 100:,} bytes"):
        load_counts(cut)
    longer = tmp_path / "longer.counts"
    longer.write_bytes(data + b"\0")
    with pytest.raises(ValueError, match=f"{longer}: longer than its header says"):
        load_counts(longer)
    for where in (-10, len(data) // 3, 40):  # in the symbols, the counts, the header
        changed = tmp_path / f"changed{where}.counts"
        flipped = bytearray(data)
        flipped[where] ^= 0x20
        changed.write_bytes(bytes(flipped))
        with pytest.raises(ValueError, match=f"{changed}: corrupt counts file"):
            RegexTokenizer("gpt4").train_from_counts(changed, 400)
    header_cut = tmp_path / "header.counts"
    header_cut.write_bytes(data[:20])
    with pytest.raises(ValueError, match="cut short: it holds 20 bytes"):
        load_counts(header_cut)
    (tmp_path / "text.txt").write_bytes(MIX.read_bytes()[:1000])
    (tmp_path / "empty").write_bytes(b"")
    for foreign in (tmp_path / "text.txt", tmp_path / "empty"):
        with pytest.raises(ValueError, match=f"{foreign}: not a chunk counts file"):
            load_counts(foreign)
    newer = tmp_path / "newer.counts"
    newer.write_bytes(data[:8] + (2).to_bytes(4, "little") + data[12:])
    with pytest.raises(ValueError, match="a counts file of version 2"):
        load_counts(newer)
    with pytest.raises(FileNotFoundError, match="no such counts file"):
        load_counts(tmp_path / "missing.counts")


def test_writing_is_atomic(tmp_path, monkeypatch):
    """A write that fails leaves the old file as it was, and no temporary file beside it."""
    path = tmp_path / "c.counts"
    counts = count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(SWIFT)], num_threads=2, progress=False)
    save_counts(counts, path, NATIVE_PATTERNS["gpt4"])
    before = path.read_bytes()
    other = count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(MIX)], num_threads=2, progress=False)

    def failing(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", failing)
    with pytest.raises(OSError, match="No space left"):
        save_counts(other, path, NATIVE_PATTERNS["gpt4"])
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["c.counts"]


def test_python_counts_and_dicts_make_counts_files_too(tmp_path):
    """A pattern the C counter does not know: count_chunks(out=) writes Python's counts, which
    train as the dict does; empty counts make a valid file."""
    pattern = r"\w+|\s+|[^\w\s]+"
    tok = RegexTokenizer(pattern)
    counts = tok.count_chunks(files=[SWIFT], out=tmp_path / "py.counts", num_workers=1, progress=False)
    assert isinstance(counts, ChunkCounts) and load_counts(tmp_path / "py.counts").to_dict() == counts.to_dict()
    from_file = RegexTokenizer(pattern)
    from_file.train_from_counts(tmp_path / "py.counts", 500)
    direct = RegexTokenizer(pattern)
    direct.train(files=[SWIFT], vocab_size=500, progress=False)
    assert from_file.merges == direct.merges
    empty = ChunkCounts.from_dict({}, NATIVE_PATTERNS["gpt4"])
    empty.save(tmp_path / "empty.counts")
    assert len(load_counts(tmp_path / "empty.counts")) == 0


# ------------------------------------------------------------------- crafted files and flipped bits

def written(tmp_path, counts: dict[str, int]) -> tuple[bytes, dict]:
    """A counts file of ``counts`` as the real writer writes it, and its layout."""
    path = tmp_path / "real.counts"
    ChunkCounts.from_dict(counts, NATIVE_PATTERNS["gpt4"]).save(path)
    data = path.read_bytes()
    length = struct.unpack_from("<I", data, 12)[0]
    header = json.loads(data[32:32 + length])
    return data, {**header["offsets"], "header_end": 32 + length, "symbol_bytes": header["symbol_bytes"]}


def checksummed(data: bytearray, where: dict) -> bytes:
    """``data`` with every checksum made right again (as anyone can)."""
    ends = {"counts": where["lengths"], "lengths": where["symbols"], "symbols": where["end"]}
    crcs = [zlib.crc32(bytes(data[where[name]:ends[name]])) for name in ("counts", "lengths", "symbols")]
    struct.pack_into("<III", data, 20, *crcs)
    struct.pack_into("<I", data, 16, zlib.crc32(bytes(data[32:where["header_end"]])))
    return bytes(data)


@pytest.mark.parametrize(("edit", "message"), [
    ("empty", r"record 1 of 3, from 0: its chunk is empty"),
    ("negative", r"record 2 of 3, from 0: its count is negative \(-5\)"),
    ("not_utf8", r"record 0 of 3, from 0: its chunk is not UTF-8 text \(b'h\\xffllo'\)"),
    ("split_character", r"record 1 of 3, from 0: its chunk is not UTF-8 text \(b' \\xc3'\)"),
    ("too_long", r"record 2 of 3, from 0: the lengths do not add up to the symbols \(this one runs past them\)"),
    ("too_short", r"3 records: the lengths do not add up to the symbols \(they end before them\)"),
])
def test_crafted_files_with_right_checksums_are_refused_naming_the_record(tmp_path, edit, message):
    data, where = written(tmp_path, {"hello": 3, " \u00e9": 2, "!": 7})
    crafted = bytearray(data)
    counts, lengths, symbols = where["counts"], where["lengths"], where["symbols"]
    if edit == "empty":  # record 0 takes record 1's bytes
        struct.pack_into("<ii", crafted, lengths, 8, 0)
    elif edit == "negative":
        struct.pack_into("<q", crafted, counts + 16, -5)
    elif edit == "not_utf8":
        crafted[symbols + 1] = 0xFF
    elif edit == "split_character":  # a cut inside \u00e9: the symbols are UTF-8 as a whole, not each chunk
        struct.pack_into("<ii", crafted, lengths + 4, 2, 2)
    elif edit == "too_long":
        struct.pack_into("<i", crafted, lengths + 8, 2)
    elif edit == "too_short":  # 'h', 'ell', 'o': each UTF-8, but 4 of the 9 bytes left over
        struct.pack_into("<iii", crafted, lengths, 1, 3, 1)
    path = tmp_path / "crafted.counts"
    path.write_bytes(checksummed(crafted, where))
    with pytest.raises(ValueError, match=f"^{path}: corrupt counts file \\({message}\\); count again$"):
        load_counts(path)
    with pytest.raises(ValueError, match="corrupt counts file"):
        RegexTokenizer("gpt4").train_from_counts(path, 300)


def test_the_padding_after_the_header_must_be_zeros(tmp_path):
    data, where = written(tmp_path, {"hello": 3, " \u00e9": 2, "!": 7})
    assert where["counts"] > where["header_end"], "this file has padding after its header"
    assert data[where["header_end"]:where["counts"]].count(0) == where["counts"] - where["header_end"]
    crafted = bytearray(data)
    crafted[where["counts"] - 1] = 1
    path = tmp_path / "padded.counts"
    path.write_bytes(bytes(crafted))
    with pytest.raises(ValueError, match=f"^{path}: corrupt counts file \\(byte {where['counts'] - 1:,}, in the padding "
                                         "after its header, is not zero\\)$"):
        load_counts(path)


def test_every_bit_flipped_in_a_small_counts_file_is_refused(tmp_path):
    """Flip each bit of a real (small) counts file in turn: every one is refused."""
    data, _ = written(tmp_path, {"hello": 3, " \u00e9": 2, "!": 7, "\n\n": 1})
    path = tmp_path / "flipped.counts"
    load_counts(tmp_path / "real.counts")
    passed = []
    with open(path, "wb") as handle:
        handle.write(data)
    with open(path, "r+b") as handle:
        for at in range(len(data)):
            for bit in range(8):
                handle.seek(at)
                handle.write(bytes([data[at] ^ 1 << bit]))
                handle.flush()
                try:
                    load_counts(path)
                    passed.append((at, bit))
                except ValueError:
                    pass
            handle.seek(at)
            handle.write(data[at:at + 1])
    assert not passed, f"{len(passed)} of {8 * len(data)} flipped bits were read: {passed[:10]}"


@settings(max_examples=300, deadline=None)
@given(records=st.lists(st.tuples(st.binary(max_size=4) | st.text(max_size=3).map(str.encode),
                                  st.integers(-2, 2), st.integers(-3, 5)), max_size=6),
       extra=st.binary(max_size=2))
def test_the_kernels_record_check_equals_its_twin(records, extra):
    symbols = b"".join(chunk for chunk, _, _ in records) + extra
    lengths = array("i", [len(chunk) + skew for chunk, skew, _ in records])
    counts = array("q", [count for _, _, count in records])
    assert _chunk_count.first_bad_record(symbols, lengths, counts) == first_bad_record(symbols, lengths, counts)
