"""Counts files (counts_file.py): counted once, trained from again at any vocab size. A file holds
exactly the counts it was given, in order, maps back without reading them into memory, and trains
to the merges of counting again; a file made with another split pattern, cut short, changed, or
not a counts file at all is refused with an error naming it; writing is atomic."""

from __future__ import annotations

import os

import pytest

from hf_bbpe import BasicTokenizer, RegexTokenizer
from hf_bbpe.counts_file import load_counts, save_counts
from hf_bbpe.native_counting import ChunkCounts, count_native
from hf_bbpe.patterns import NATIVE_PATTERNS

from .test_native_counting import MIX, SWIFT, assert_same, distinct


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
