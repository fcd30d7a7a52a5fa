"""The C chunk counter (``csrc/count/``) gives exactly the counts, in exactly the order of first
appearance, of its readable twin: chunk_counting.count_chunks over the documents that
text_files.iter_file_documents reads (and of the regex module itself), for every pattern a C
scanner knows, on random text, on real multilingual text and code, on .jsonl and .parquet files,
with any number of threads and any cut of the work into units. Bad input is an error naming
the file and line, the first one in the input, on both paths. Training on files takes the
kernel's buffers to the merge loop as they are.
"""

from __future__ import annotations

import json
import random
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.training import _chunk_count
from hf_bbpe.engine.training import counting_reference as chunk_counting
from hf_bbpe.engine.training import counting as native_counting
from hf_bbpe.engine.training import text_files
from hf_bbpe.engine.training import api as training
from hf_bbpe.engine.training.counting_reference import count_chunks, paragraphs
from hf_bbpe.engine.chunking.patterns import compile_pattern
from hf_bbpe.engine.training.counting import ChunkCounts, collected, count_native
from hf_bbpe.engine.chunking.patterns import EQUIVALENT_PATTERNS, NATIVE_PATTERNS, native_scanner
from hf_bbpe.engine.training.text_files import iter_file_documents

DATA = Path(__file__).resolve().parents[2] / "data" / "text"
MIX = DATA / "mix-sample.txt"
SWIFT = DATA / "taylorswift.txt"
PATTERNS = {**NATIVE_PATTERNS, **{f"{name}-spelling{k}": pattern for k, (pattern, name) in
                                  enumerate(EQUIVALENT_PATTERNS.items())}}

# every decision of the patterns (see test_patterns.py's TRICKY), without the lone surrogate
# that UTF-8 cannot hold, and with NUL and characters of 2, 3 and 4 UTF-8 bytes
TRICKY = list("aZ'sSdDmMtTlLvVeErRkK\u017f\u212a \t\n\r\x0b\x0c\x1c\x85\u00a0\u2028\u3000\x00"
              "0123\u0663\u00bd\u2460.,!?-/_(\u00e9\u0301\u0903\u01c5\u02b0\u4f60\u597d"
              "\U0001f642\U0001d400")
WORDY = ["the", " the", "The", "don't", " WE'LL", "über", " 日本語", "\n", "\n\n", "  ", "\r\n", "12345", "x" * 20]
documents = st.lists(st.text(alphabet=st.sampled_from(TRICKY), max_size=30) | st.lists(
    st.sampled_from(WORDY), max_size=12).map("".join), max_size=12)


def test_the_kernel_is_built():
    """A missing build fails here instead of every comparison below running the Python path."""
    assert native_counting._kernel is not None, "hf_bbpe.engine.training._chunk_count is not built (setup.py build_ext --inplace)"


def regex_counts(docs, pattern: str) -> dict[str, int]:
    """The regex module's chunks of each document (the owners' classes: ``compile_pattern``),
    counted in order of first appearance."""
    counts: dict[str, int] = {}
    for doc in docs:
        for match in compile_pattern(pattern).finditer(doc):
            counts[match.group()] = counts.get(match.group(), 0) + 1
    return counts


def distinct(counts: ChunkCounts) -> dict[str, int]:
    """The kernel's counts as a dict, checking that no chunk comes twice."""
    as_dict = counts.to_dict()
    assert len(as_dict) == len(counts), "a chunk comes out more than once"
    return as_dict


def kernel_counts(batches, pattern: str, threads: int) -> dict[str, int]:
    """The kernel's counts over several calls (each a list of documents) on ``threads`` threads."""
    counter = _chunk_count.Counter(native_scanner(pattern), threads)
    for batch in batches:
        counter.count_texts(batch)
    return distinct(collected(counter))


def twin_file_counts(paths, pattern: str, text_column: str = "text", docs: str = "line") -> dict[str, int]:
    return count_chunks(iter_file_documents([str(p) for p in paths], text_column, docs), pattern, num_workers=1,
                        progress=False)


def assert_same(got: dict, expected: dict) -> None:
    assert got == expected
    assert list(got) == list(expected), "same counts, other order of first appearance"


@pytest.mark.parametrize("name", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(docs=documents, cuts=st.lists(st.integers(0, 12), max_size=3), threads=st.sampled_from([1, 2, 3, 5]))
def test_kernel_counts_equal_the_regex_modules(name, docs, cuts, threads):
    pattern = PATTERNS[name]
    bounds = [0, *sorted(cuts), len(docs)]
    batches = [docs[a:b] for a, b in zip(bounds, bounds[1:])]
    expected = regex_counts(docs, pattern)
    assert_same(kernel_counts(batches, pattern, threads), expected)
    assert_same(count_chunks(docs, pattern, num_workers=1, progress=False), expected)  # the twin agrees


@contextmanager
def parts_from(length: int):
    """Documents of ``length`` UTF-8 bytes or more are counted in parts on the threads."""
    before = _chunk_count.part_bytes()
    _chunk_count.part_bytes(length)
    try:
        yield
    finally:
        _chunk_count.part_bytes(before)


@pytest.mark.parametrize("name", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(docs=documents, part=st.sampled_from([1, 3, 16, 64]), threads=st.sampled_from([2, 3, 5]))
def test_long_documents_cut_into_parts_count_as_one_pass(name, docs, part, threads):
    """A long document is cut for the threads at arbitrary characters; each part hands over to the
    next where their chunkings meet (or runs to the end when they do not), so the counts and their
    order are one pass's."""
    pattern = PATTERNS[name]
    with parts_from(part):
        assert_same(kernel_counts([docs], pattern, threads), regex_counts(docs, pattern))


@pytest.mark.parametrize("name", NATIVE_PATTERNS)
def test_one_long_real_text_in_parts(name):
    """minbpe's way, one str: mix-sample in parts of 4 KB on 2 to 4 threads, between other
    documents; runs of one class longer than the marks reach make parts run on to the end."""
    pattern = NATIVE_PATTERNS[name]
    text = MIX.read_text(encoding="utf-8")
    docs = ["before", text, "x" * 9000 + " " * 9000 + "\n" * 9000 + "9" * 9000, SWIFT.read_text(encoding="utf-8")]
    with parts_from(4096):
        for threads in (2, 3, 4):
            assert_same(kernel_counts([docs[:2], docs[2:]], pattern, threads), regex_counts(docs, pattern))


@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_real_documents_from_an_iterable(name, threads):
    pattern = NATIVE_PATTERNS[name]
    docs = MIX.read_text(encoding="utf-8").split("\n\n") + SWIFT.read_text(encoding="utf-8").split("\n\n")
    got = count_native(iter(docs), pattern, num_threads=threads, progress=False)
    assert_same(distinct(got), count_chunks(docs, pattern, num_workers=1, progress=False))
    assert got.documents == len(docs) and got.input_bytes == sum(len(d.encode()) for d in docs)


@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("block", [0, 61, 4096])
def test_text_files_are_counted_line_by_line_as_the_twin_reads_them(name, block):
    """Units of ``block`` bytes cut lines anywhere (0: the default size, one unit per file here);
    a line belongs to the unit it starts in, and no line is counted twice or cut."""
    pattern = PATTERNS[name]
    counter = _chunk_count.Counter(native_scanner(pattern), 3)
    counter.count_files([str(MIX), str(SWIFT)], [False, False], b"text", block, None)
    expected = twin_file_counts([MIX, SWIFT], pattern)
    assert_same(distinct(collected(counter)), expected)
    assert_same(expected, regex_counts(lines_of(MIX) + lines_of(SWIFT), pattern))


def lines_of(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as handle:
        return list(handle)


def test_a_line_is_a_document_and_carriage_returns_stay(tmp_path):
    """A file is cut after each \\n only (tokenizers' train(files) reads it so); "\\r\\n" and a lone
    "\\r" stay in the text, as open(f, newline="\\n") gives it; the last line may lack its \\n."""
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one  two\r\n\r\nthree\rfour  \n\n  five")
    lines = ["one  two\r\n", "\r\n", "three\rfour  \n", "\n", "  five"]
    with open(path, encoding="utf-8", newline="\n") as handle:
        assert list(handle) == lines
    for pattern in NATIVE_PATTERNS.values():
        got = count_native(None, pattern, files=[str(path)], num_threads=2, progress=False)
        assert_same(distinct(got), regex_counts(lines, pattern))
        assert got.documents == len(lines)


# ------------------------------------------------------------------ paragraphs and whole files

PARAGRAPH_PIECES = ["the cat", " sat", "\n", "\r\n", "\r", "\n\n", "\r\r\n", "  \n", "\t\n", "\n\r\n\r\n", " 日本語",
                    "don't", "  ", "12", "x" * 40]


def file_counts(path: Path, pattern: str, docs: str, threads: int, block: int) -> ChunkCounts:
    """The kernel's counts of one file read by its threads in units of ``block`` bytes."""
    counter = _chunk_count.Counter(native_scanner(pattern), threads)
    counter.count_files([str(path)], [native_counting._file_format(str(path), docs)], b"text", block, None)
    return collected(counter)


def paragraphs_of(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(paragraphs(handle))


@pytest.mark.parametrize("name", PATTERNS)
@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(st.sampled_from(PARAGRAPH_PIECES) | st.text(alphabet=st.sampled_from(TRICKY), max_size=6),
                       max_size=40),
       block=st.sampled_from([1, 2, 3, 5, 16, 0]), threads=st.sampled_from([1, 2, 3]))
def test_paragraphs_of_files_are_counted_as_paragraphs_cuts_them(tmp_path_factory, name, pieces, block, threads):
    """A paragraph (the lines up to a run of blank lines, that run with them; a blank line holds
    nothing but \r before its \n) belongs to the unit it starts in and is counted whole, however
    the units cut it: the counts and their order are those of paragraphs(open(f, newline=""))."""
    pattern = PATTERNS[name]
    path = tmp_path_factory.mktemp("paragraphs") / "text.txt"
    path.write_bytes("".join(pieces).encode("utf-8"))
    docs = paragraphs_of(path)
    got = file_counts(path, pattern, "paragraph", threads, block)
    assert_same(distinct(got), regex_counts(docs, pattern))
    assert got.documents == len(docs)
    assert list(iter_file_documents([str(path)], docs="paragraph")) == docs  # the twin reads them so too
    whole = file_counts(path, pattern, "file", threads, block)
    assert_same(distinct(whole), regex_counts(["".join(pieces)], pattern))


@pytest.mark.parametrize("name", NATIVE_PATTERNS)
@pytest.mark.parametrize("block", [0, 61, 4096])
def test_paragraphs_of_real_text_with_either_line_ending(tmp_path, name, block):
    """mix-sample and taylorswift.txt, and mix-sample with \r\n line endings, whose blank lines
    are "\r\n": the kernel's paragraphs are the twin's, in order, on 3 threads."""
    pattern = NATIVE_PATTERNS[name]
    crlf = tmp_path / "mix-crlf.txt"
    crlf.write_bytes(MIX.read_bytes().replace(b"\n", b"\r\n"))
    for path in (MIX, SWIFT, crlf):
        docs = paragraphs_of(path)
        assert len(docs) > 10
        got = file_counts(path, pattern, "paragraph", 3, block)
        assert_same(distinct(got), twin_file_counts([path], pattern, docs="paragraph"))
        assert_same(distinct(got), regex_counts(docs, pattern))
        assert got.documents == len(docs)


def test_training_on_paragraph_files_equals_training_on_their_paragraphs():
    from_files = RegexTokenizer("gpt4")
    from_files.train(files=[MIX, SWIFT], vocab_size=600, docs="paragraph", tie_break="first_occurrence",
                     progress=False)
    from_docs = RegexTokenizer("gpt4")
    from_docs.train(paragraphs_of(MIX) + paragraphs_of(SWIFT), 600, tie_break="first_occurrence", progress=False)
    assert from_files.merges == from_docs.merges
    with pytest.raises(ValueError, match="docs must be one of"):
        RegexTokenizer("gpt4").train(files=[SWIFT], vocab_size=300, docs="paragraphs")


def jsonl_records(docs: list[str], seed: int) -> bytes:
    """docs as .jsonl lines, in the ways real files hold them: ASCII escapes or raw UTF-8, other
    fields before and after (nested, numbers, literals, escaped names), a duplicate name (the last
    one counts, as in Python's json), blank lines, \\r\\n endings, no final newline."""
    rng = random.Random(seed)
    lines = []
    for k, doc in enumerate(docs):
        record = {"id": k, "meta": {"tags": ["a", {"b": [1.5e3, -0.25, True, None]}], "s": "x\"\\y\u00e9"}}
        if rng.random() < 0.3:
            record["text"] = "not this one"  # a duplicate name below: the later value counts
            line = json.dumps(record, ensure_ascii=rng.random() < 0.5)[:-1] + ', "text": ' + json.dumps(
                doc, ensure_ascii=rng.random() < 0.5) + ', "after": [] }'
        else:
            record["text"] = doc
            record["z"] = -12
            line = json.dumps(record, ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.2:
            line = line.replace('"text"', '"te\\u0078t"')  # an escaped name is the same name
        lines.append(line + rng.choice(["\n", "\r\n", "\n \n", "\n\t\r\n"]))
    return "".join(lines).rstrip("\n").encode("utf-8")


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k", "tekken"])
def test_jsonl_text_fields_match_the_twin(tmp_path, name):
    pattern = NATIVE_PATTERNS[name]
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    path = tmp_path / "docs.jsonl"
    path.write_bytes(jsonl_records(docs, seed=1))
    assert list(iter_file_documents([str(path)])) == docs
    counter = _chunk_count.Counter(native_scanner(pattern), 2)
    counter.count_files([str(path)], [True], b"text", 997, None)
    assert_same(distinct(collected(counter)), regex_counts(docs, pattern))


@settings(max_examples=100, deadline=None)
@given(docs=documents, seed=st.integers(0, 1000))
def test_jsonl_with_random_text_matches_the_twin(docs, seed, tmp_path_factory):
    path = tmp_path_factory.mktemp("jsonl") / "random.jsonl"
    path.write_bytes(jsonl_records(docs, seed))
    pattern = NATIVE_PATTERNS["gpt4"]
    got = count_native(None, pattern, files=[str(path)], num_threads=2, progress=False)
    assert_same(distinct(got), twin_file_counts([path], pattern))
    assert distinct(got) == regex_counts(docs, pattern)


def write_parquet(path: Path, docs: list, large: bool = False, column: str = "body") -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind = pa.large_string() if large else pa.string()
    table = pa.table({"n": list(range(len(docs))), column: pa.array(docs, type=kind)})
    pq.write_table(table, path, row_group_size=97)


@pytest.mark.parametrize("large", [False, True])
def test_parquet_columns_match_the_twin(tmp_path, large, monkeypatch):
    monkeypatch.setattr("hf_bbpe.engine.training.text_files.PARQUET_BATCH_ROWS", 50)  # several batches, sliced arrays
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    path = tmp_path / "docs.parquet"
    write_parquet(path, docs, large)
    pattern = NATIVE_PATTERNS["o200k"]
    got = count_native(None, pattern, files=[str(path)], num_threads=3, progress=False, text_column="body")
    assert_same(distinct(got), twin_file_counts([path], pattern, "body"))
    assert distinct(got) == regex_counts(docs, pattern)


def test_files_of_every_kind_in_one_run_keep_the_order_of_first_appearance(tmp_path):
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    third = len(docs) // 3
    (tmp_path / "a.jsonl").write_bytes(jsonl_records(docs[:third], seed=2))
    write_parquet(tmp_path / "b.parquet", docs[third : 2 * third], column="text")
    (tmp_path / "c.txt").write_text("".join(d + "\n" for d in docs[2 * third :]), encoding="utf-8")
    paths = [tmp_path / name for name in ("c.txt", "a.jsonl", "b.parquet", "c.txt", "b.parquet")]
    documents = list(iter_file_documents([str(p) for p in paths]))
    assert len(documents) == 2 * len(lines_of(tmp_path / "c.txt")) + third + 2 * third
    for pattern in (NATIVE_PATTERNS["gpt2"], NATIVE_PATTERNS["llama3"]):
        counts = count_native(None, pattern, files=[str(p) for p in paths], num_threads=2, progress=False)
        assert_same(distinct(counts), regex_counts(documents, pattern))


def test_a_datasets_dataset_is_counted_from_its_arrow_column():
    import datasets

    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    ds = datasets.Dataset.from_dict({"text": docs, "n": list(range(len(docs)))}).shuffle(seed=0).select(range(0, 900, 2))
    pattern = NATIVE_PATTERNS["gpt4"]
    got = count_native(ds, pattern, num_threads=2, progress=False)
    assert_same(distinct(got), regex_counts(ds["text"], pattern))
    with pytest.raises(ValueError, match="row 1: the text is null"):
        count_native(datasets.Dataset.from_dict({"text": ["a", None, "b"]}), pattern, num_threads=1, progress=False)


# ---------------------------------------------------------------------------------------- errors

def both_raise(path: Path, match: str, text_column: str = "text") -> None:
    """The kernel and the twin raise a ValueError naming the file and matching ``match``, with the
    same message (but for the JSON parsers' own words on what they expected)."""
    with pytest.raises(ValueError, match=match) as twin:
        list(iter_file_documents([str(path)], text_column))
    assert str(path) in str(twin.value)
    for threads in (1, 3):
        counter = _chunk_count.Counter(native_scanner(NATIVE_PATTERNS["gpt4"]), threads)
        with pytest.raises(ValueError, match=match) as kernel:
            counter.count_files([str(path)], [path.suffix == ".jsonl"], text_column.encode(), 64, None)
        if "not JSON" not in match:
            assert str(kernel.value) == str(twin.value)


def numbered_lines(n: int) -> list[str]:
    return [f"line {k} of the file, with some words\n" for k in range(1, n + 1)]


def test_invalid_utf8_names_the_first_bad_line(tmp_path):
    lines = [line.encode() for line in numbered_lines(3000)]
    lines[1999] = b"caf\xe9 latin-1\n"
    lines[2499] = b"\xff\xfe\n"
    lines[39] = b"a cut character \xe6\x97\n"  # the first, in a unit other threads may finish later
    path = tmp_path / "bad.txt"
    path.write_bytes(b"".join(lines))
    both_raise(path, r"line 40: not UTF-8 text \(byte \d+: b'\\xe6\\x97\\n'; a binary file")
    for bad in (b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe0\x80\x80"):  # surrogate, overlong, > U+10FFFF
        path.write_bytes(b"ok\n" + bad + b"\n")
        both_raise(path, "line 2: not UTF-8 text")


@pytest.mark.parametrize(("line", "match"), [
    ('{"text": "a", }', "line 3: not JSON"),
    ('{"text": "a"} x', "line 3: not JSON"),
    ('{"text": "a\tb"}', "line 3: not JSON"),  # a raw control character
    ('{"text": "a\\qb"}', "line 3: not JSON"),
    ("{'text': 'a'}", "line 3: not JSON"),
    ('{"body": "a"}', "line 3: no field 'text' in the JSON object"),
    ('["text"]', "line 3: no field 'text' in the JSON array"),
    ('{"text": 12}', r"line 3: field 'text' is not a string \(a JSON number\)"),
    ('{"text": null}', r"line 3: field 'text' is not a string \(a JSON null\)"),
    ('{"text": ["a"]}', r"line 3: field 'text' is not a string \(a JSON array\)"),
    ('{"text": "a", "text": false}', r"line 3: field 'text' is not a string \(a JSON boolean\)"),
    ('{"text": "lone \\ud800 surrogate"}', "line 3: field 'text' holds a lone surrogate"),
])
def test_bad_jsonl_lines_are_named(tmp_path, line, match):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n\n' + line + '\n{"text": "after"}\n', encoding="utf-8")
    both_raise(path, match)


def test_json_that_python_reads_is_read(tmp_path):
    """Python's json reads NaN, Infinity, -Infinity, deep nesting and escaped surrogate pairs."""
    path = tmp_path / "odd.jsonl"
    records = ['{"x": NaN, "y": -Infinity, "z": Infinity, "text": "\\ud83d\\ude42 \\u00e9\\/\\b"}',
               '{"deep": ' + "[" * 200 + "]" * 200 + ', "text": "x"}', '  {"text":"tight"}  ']
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    docs = list(iter_file_documents([str(path)]))
    assert docs == ["\U0001f642 \u00e9/\b", "x", "tight"]
    got = count_native(None, NATIVE_PATTERNS["gpt2"], files=[str(path)], num_threads=1, progress=False)
    assert_same(distinct(got), regex_counts(docs, NATIVE_PATTERNS["gpt2"]))


def read_both_ways(path: Path) -> tuple:
    """What the twin and the kernel (on 1 and 3 threads) make of a file: its documents' counts,
    or the error's message."""
    outcomes = []
    try:
        outcomes.append(regex_counts(list(iter_file_documents([str(path)])), NATIVE_PATTERNS["gpt2"]))
    except ValueError as exc:
        outcomes.append(str(exc))
    for threads in (1, 3):
        try:
            outcomes.append(distinct(count_native(None, NATIVE_PATTERNS["gpt2"], files=[str(path)], num_threads=threads,
                                                  progress=False)))
        except ValueError as exc:
            outcomes.append(str(exc))
    return tuple(outcomes)


def nested(depth: int, kinds: str, inner: str) -> str:
    """``inner`` inside ``depth`` arrays and objects (``kinds``: "[" or "{" per level, cycled)."""
    opening = "".join("[" if kinds[k % len(kinds)] == "[" else '{"k": ' for k in range(depth))
    return opening + inner + "".join("]" if kinds[k % len(kinds)] == "[" else "}" for k in reversed(range(depth)))


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(990, 1010), kinds=st.sampled_from(["[", "{", "[{", "{[["]), text_first=st.booleans(),
       top=st.sampled_from(["object", "array"]))
def test_deeply_nested_lines_read_alike_on_both_paths(tmp_path_factory, depth, kinds, text_first, top):
    """Up to JSON_MAX_DEPTH (1000) levels, counting the line's own object, a line is read on both
    paths, however deep Python's stack already is; deeper, both refuse it with the same line."""
    if top == "object":
        fields = ['"text": "x [y] {z}"', f'"deep": {nested(depth - 1, kinds, "1")}']
        line = "{" + ", ".join(fields if text_first else fields[::-1]) + "}"
    else:
        line = "[" + nested(depth - 1, kinds, '"x"') + "]"
    path = tmp_path_factory.mktemp("deep") / "deep.jsonl"
    path.write_text('{"text": "before"}\n' + line + "\n", encoding="utf-8")
    twin, *kernels = read_both_ways(path)
    assert kernels == [twin, twin]
    if depth > text_files.JSON_MAX_DEPTH:
        assert twin == f"{path}, line 2: not JSON (nested deeper than {text_files.JSON_MAX_DEPTH} levels)"
    elif top == "object":
        assert twin == regex_counts(["before", "x [y] {z}"], NATIVE_PATTERNS["gpt2"])
    else:
        assert twin == f"{path}, line 2: no field 'text' in the JSON array (text_column= names the field)"


def test_the_twin_reads_deep_lines_from_deep_in_the_stack(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"deep": ' + "[" * 999 + "]" * 999 + ', "text": "x"}\n', encoding="utf-8")

    def from_depth(frames: int) -> list[str]:
        return from_depth(frames - 1) if frames else list(iter_file_documents([str(path)]))

    assert from_depth(sys.getrecursionlimit() - 100) == ["x"]


@settings(max_examples=30, deadline=None)
@given(digits=st.integers(4290, 4310) | st.integers(1, 30000), where=st.sampled_from(["other", "text", "nested"]),
       sign=st.sampled_from(["", "-"]), fraction=st.sampled_from(["", ".5", "e7"]))
def test_numbers_of_any_length_read_alike_on_both_paths(tmp_path_factory, digits, where, sign, fraction):
    """Python's int_max_str_digits (4300) is no limit on either path: numbers are never used."""
    number = sign + "9" * digits + fraction
    line = {"other": f'{{"n": {number}, "text": "x"}}', "text": f'{{"text": {number}}}',
            "nested": f'{{"text": "x", "n": [{{"m": {number}}}]}}'}[where]
    path = tmp_path_factory.mktemp("long") / "long.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    twin, *kernels = read_both_ways(path)
    assert kernels == [twin, twin]
    if where == "text":
        assert twin == f"{path}, line 1: field 'text' is not a string (a JSON number)"
    else:
        assert twin == regex_counts(["x"], NATIVE_PATTERNS["gpt2"])


def test_parquet_errors(tmp_path, monkeypatch):
    path = tmp_path / "nulls.parquet"
    write_parquet(path, ["a", "b", None, "c"])
    pattern = NATIVE_PATTERNS["gpt4"]
    for count in (lambda: count_native(None, pattern, files=[str(path)], text_column="body", progress=False),
                  lambda: list(iter_file_documents([str(path)], "body"))):
        with pytest.raises(ValueError, match=r"nulls.parquet, row 2: the text is null"):
            count()
        with pytest.raises(ValueError, match=r"nulls.parquet: no column 'text' \(its columns: n, body"):
            list(iter_file_documents([str(path)], "text"))
    with pytest.raises(ValueError, match="column 'n' holds int64, not strings"):
        list(iter_file_documents([str(path)], "n"))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # pyarrow not installed
    with pytest.raises(ImportError, match=r"pip install 'hf_bbpe\[parquet\]'"):
        list(iter_file_documents([str(path)], "body"))


def test_missing_files_are_named(tmp_path):
    tok = RegexTokenizer("gpt4")
    with pytest.raises(FileNotFoundError, match="nowhere.txt: no such file"):
        tok.train(files=[tmp_path / "nowhere.txt"], vocab_size=300)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        tok.train(files=tmp_path, vocab_size=300)


# -------------------------------------------------------------------------------------- training

@pytest.mark.parametrize("tie_break", ["smallest_pair", "first_occurrence"])
@pytest.mark.parametrize("name", ["gpt2", "gpt4"])
def test_training_on_files_equals_training_on_their_documents(tmp_path, tie_break, name):
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    (tmp_path / "a.jsonl").write_bytes(jsonl_records(docs[:200], seed=3))
    paths = [SWIFT, tmp_path / "a.jsonl"]
    from_files = RegexTokenizer(name)
    from_files.train(files=paths, vocab_size=700, tie_break=tie_break, progress=False)
    from_paths = RegexTokenizer(name)
    from_paths.train(paths, 700, tie_break=tie_break, progress=False, num_workers=1)  # Path objects are files
    from_docs = RegexTokenizer(name)
    with open(SWIFT, encoding="utf-8", newline="\n") as handle:
        documents = list(handle) + docs[:200]
    from_docs.train(documents, 700, tie_break=tie_break, progress=False)
    python = RegexTokenizer(name)
    python.train_from_counts(count_chunks(documents, python.pattern, num_workers=1), 700, tie_break=tie_break)
    assert from_files.merges == from_paths.merges == from_docs.merges == python.merges


def test_training_hands_the_kernels_buffers_to_the_merge_loop(monkeypatch):
    """No Python object per chunk between counting and the merge loop: the kernel's ChunkCounts
    is never iterated, and the list-of-words path of the trainer is never taken."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a Python object per chunk")

    monkeypatch.setattr(ChunkCounts, "items", forbidden)
    monkeypatch.setattr(training, "train_merges", forbidden)
    tok = RegexTokenizer("gpt4")
    tok.train(files=SWIFT, vocab_size=400, progress=False)
    assert len(tok.merges) == 144


def test_without_the_kernel_training_takes_the_python_path_with_the_same_merges(monkeypatch):
    with_kernel = RegexTokenizer("o200k")
    with_kernel.train(files=[MIX], vocab_size=500, progress=False)
    monkeypatch.setattr(native_counting, "_kernel", None)  # a saved folder's copy: no compiled module
    without = RegexTokenizer("o200k")
    without.train(files=[MIX], vocab_size=500, progress=False)
    assert with_kernel.merges == without.merges


def test_text_or_files_and_a_warning_for_file_names_given_as_text(tmp_path):
    tok = RegexTokenizer("gpt4")
    with pytest.raises(TypeError, match="not both"):
        tok.train("text", 300, files=[SWIFT])
    with pytest.raises(TypeError, match="nothing to train on"):
        tok.train(vocab_size=300)
    with pytest.warns(UserWarning, match="names an existing file"):
        tok.train([str(SWIFT), str(MIX)], 260, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok.train(["a normal document", "another"], 260, progress=False)


def test_a_lone_surrogate_in_a_document_is_an_error_on_both_paths():
    for pattern in ("gpt4", r"\w+|\W"):
        with pytest.raises(UnicodeEncodeError):
            RegexTokenizer(pattern).train(["ok", "a\ud800b"], 300, progress=False)


def test_the_counting_bar_shows_megabytes_a_second(capfd):
    tok = RegexTokenizer("gpt4")
    tok.train(files=[SWIFT, MIX], vocab_size=260, progress=True)
    shown = capfd.readouterr().err
    assert "counting chunks" in shown and "MB/s" in shown
    tok.train([MIX.read_text(encoding="utf-8")], 260, progress=True)
    assert "MB/s" in capfd.readouterr().err


def test_where_the_kernel_cannot_read_files_python_reads_them_for_it(monkeypatch, tmp_path):
    """Without POSIX threads (Windows) the kernel reads no file: the lines and records are read
    in Python and counted by the kernel, with the same counts in the same order."""
    class NoFiles:
        Counter = _chunk_count.Counter
        READS_FILES = 0

    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    (tmp_path / "a.jsonl").write_bytes(jsonl_records(docs[:300], seed=4))
    paths = [str(SWIFT), str(tmp_path / "a.jsonl")]
    pattern = NATIVE_PATTERNS["gpt4"]
    expected = distinct(count_native(None, pattern, files=paths, num_threads=2, progress=False))
    monkeypatch.setattr(native_counting, "_kernel", NoFiles)
    assert_same(distinct(count_native(None, pattern, files=paths, num_threads=2, progress=False)), expected)


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.text(alphabet=st.sampled_from(TRICKY + list("\x01\x1b\x7f\x80\x84\x85\x86\x9f\xa0")),
                             max_size=40), max_size=8))
def test_the_kernels_text_tallies_equal_pythons(docs):
    """The characters and control characters (each counted, in order of first appearance) that the
    kernel tallies for the control-character warning are the ones Python counts on the dict."""
    counts = count_native(docs, NATIVE_PATTERNS["gpt4"], num_threads=2, progress=False)
    as_dict = distinct(counts)
    assert counts.characters == sum(len(chunk) * n for chunk, n in as_dict.items())
    found: dict[str, int] = {}
    for chunk, n in as_dict.items():
        for char in chunk_counting._CONTROL.findall(chunk):
            found[char] = found.get(char, 0) + n
    assert list(counts.control.items()) == list(found.items())


def test_the_merge_loop_works_in_trainings_own_counts_but_not_in_a_callers():
    """Training's own counts are spent by a merge loop that works in their symbols (no copy of
    them); counts a caller gives to train_from_counts stay whole, to train again."""
    counts = count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(SWIFT)], num_threads=2, progress=False)
    first, again = RegexTokenizer("gpt4"), RegexTokenizer("gpt4")
    first.train_from_counts(counts, 500)
    again.train_from_counts(counts, 500)
    direct = RegexTokenizer("gpt4")
    direct.train(files=SWIFT, vocab_size=500, progress=False)
    assert first.merges == again.merges == direct.merges
    counts.buffers(spend=True)
    with pytest.raises(ValueError, match="spent"):
        RegexTokenizer("gpt4").train_from_counts(counts, 500)
