"""Chunk counting: parallel and streamed, yet exactly one sequential pass per document.

A split pattern's matches depend on what follows (``\\s+(?!\\S)``, ``\\s*[\\r\\n]``, ``\\s++$``), so
cutting a document anywhere, even at a blank line, changes the counts. The documents here are
full of such places; the counts (and their order of first appearance, which minbpe's tie-break
needs) must equal a plain loop over the documents, with worker processes and several batches.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest
import rustbpe
from hypothesis import given
from hypothesis import strategies as st
from tests.support.reference_bpe import split_chunks

from hf_bbpe import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, BasicTokenizer, RegexTokenizer
from hf_bbpe.engine.training import counting_reference as chunk_counting
from hf_bbpe.engine.training.counting_reference import count_chunks

TEXT_DIR = Path(__file__).resolve().parents[2] / "data" / "text"
PATTERNS = {"basic": None, "gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, "o200k": O200K_SPLIT_PATTERN}


def sequential_counts(documents, pattern):
    """One pass over each document, in order: {chunk: count} in order of first appearance."""
    counts: dict[str, int] = {}
    for doc in documents:
        for chunk in split_chunks(doc, pattern):
            counts[chunk] = counts.get(chunk, 0) + 1
    return counts


def tricky_documents(total_chars: int, seed: int = 0) -> list[str]:
    """Words, digits, CJK and whitespace runs: blank lines, "\\r\\n", trailing spaces."""
    rng = random.Random(seed)
    words = ["the", "The", "don't", "WE'LL", "über", "日本語", "Привет", "123456", "🙂", "a", "x" * 40, "--"]
    spaces = [" ", "  ", "\n", "\n\n", " \n\n ", "\r\n", "\t", "\n\n\n   ", "   \n"]
    docs = []
    size = 0
    while size < total_chars:
        n = rng.randint(1, 400)
        # random short words over a few letters: many distinct chunks and many tied pair counts
        doc = "".join(
            (rng.choice(words) if rng.random() < 0.5 else "".join(rng.choices("abcdeé", k=rng.randint(1, 9))))
            + rng.choice(spaces)
            for _ in range(n)
        )
        if rng.random() < 0.2:
            doc += "   "  # trailing whitespace: \s++$ and \s+(?!\S) at the end
        docs.append(doc)
        size += len(doc)
    return docs


@pytest.fixture(scope="module")
def big_documents():
    # several batches of the engine's size, so that the pool is used and batches are merged
    return tricky_documents(int(2.5 * chunk_counting._BATCH_CHARS))


@pytest.mark.parametrize("pattern_name", ["gpt4", "o200k", "basic"])
def test_parallel_counts_equal_one_sequential_pass(big_documents, pattern_name):
    pattern = PATTERNS[pattern_name]
    expected = sequential_counts(big_documents, pattern)
    counts = count_chunks(big_documents, pattern, num_workers=2, progress=False)
    assert counts == expected
    assert list(counts) == list(expected)  # order of first appearance


def test_cutting_at_blank_lines_would_change_the_counts(big_documents):
    """The test above can fail: splitting the documents further gives other counts."""
    cut = [piece for doc in big_documents for piece in doc.split("\n\n")]
    assert sequential_counts(cut, GPT4_SPLIT_PATTERN) != sequential_counts(big_documents, GPT4_SPLIT_PATTERN)


@pytest.mark.parametrize("tie_break", ["smallest_pair", "first_occurrence"])
def test_parallel_training_equals_sequential_training(big_documents, tie_break):
    parallel = RegexTokenizer()
    parallel.train(big_documents, 600, tie_break=tie_break, num_workers=2, progress=False)
    sequential = RegexTokenizer()
    sequential.train(big_documents, 600, tie_break=tie_break, num_workers=1, progress=False)
    assert list(parallel.merges.items()) == list(sequential.merges.items())


def test_a_string_with_blank_lines_is_one_document():
    text = "first line  \n\n  second\r\n\r\n\n third   \n\n"
    assert count_chunks(text, GPT4_SPLIT_PATTERN, num_workers=1) == sequential_counts([text], GPT4_SPLIT_PATTERN)
    assert count_chunks(text, GPT4_SPLIT_PATTERN) != sequential_counts(text.split("\n\n"), GPT4_SPLIT_PATTERN)
    assert count_chunks(text, None) == {text: 1}


def test_a_long_string_is_one_document(big_documents):
    """Even when it is larger than a batch: a str is never cut for the workers."""
    text = "\n\n".join(big_documents)
    assert len(text) > chunk_counting._BATCH_CHARS
    assert count_chunks(text, GPT4_SPLIT_PATTERN, num_workers=2) == sequential_counts([text], GPT4_SPLIT_PATTERN)


def test_file_object_counts_its_lines(tmp_path):
    """A text file is an iterable of lines: each line is a document, as for rustbpe."""
    docs = tricky_documents(200_000, seed=1)
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join(docs), encoding="utf-8")
    with open(path, encoding="utf-8") as f:
        lines = list(f)
    with open(path, encoding="utf-8") as f:
        assert count_chunks(f, GPT4_SPLIT_PATTERN, num_workers=2) == sequential_counts(lines, GPT4_SPLIT_PATTERN)
    tok = RegexTokenizer()
    with open(path, encoding="utf-8") as f:
        tok.train(f, 700, progress=False)
    ref = rustbpe.Tokenizer()
    with open(path, encoding="utf-8") as f:
        ref.train_from_iterator(f, 700, pattern=GPT4_SPLIT_PATTERN)
    assert tok.mergeable_ranks() == dict(ref.get_mergeable_ranks())


def test_basic_tokenizer_counts_whole_documents():
    docs = ["ab ab", "", "ab ab", "cd\n\ncd"]
    assert count_chunks(docs, None) == {"ab ab": 2, "cd\n\ncd": 1}
    tok = BasicTokenizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok.train(docs, 300, progress=False)
    assert tok.encode("ab ab") == [tok.merges[(tok.merges[(97, 98)], tok.merges[(32, tok.merges[(97, 98)])])]]


def test_empty_input():
    assert count_chunks([], GPT4_SPLIT_PATTERN) == {}
    assert count_chunks("", GPT4_SPLIT_PATTERN) == {}
    assert count_chunks(iter([]), None) == {}


def test_non_string_document_is_an_error():
    with pytest.raises(TypeError, match="bytes"):
        count_chunks(["fine", b"not a str"], GPT4_SPLIT_PATTERN)


def _train_in_worker(docs):
    tok = RegexTokenizer()
    tok.train(docs, 300, progress=False)
    return tok.merges


def test_training_inside_a_pool_worker(big_documents):
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        merges = pool.apply(_train_in_worker, (big_documents,))
    expected = RegexTokenizer()
    expected.train(big_documents, 300, num_workers=1, progress=False)
    assert merges == expected.merges


def _without_fork(monkeypatch):
    """Make this process look like one where fork does not exist (Windows)."""
    import multiprocessing

    real_get_context = multiprocessing.get_context

    def get_context(method=None):
        if method == "fork":
            raise ValueError("cannot find context for 'fork'")
        return real_get_context(method)

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(multiprocessing, "get_context", get_context)


def test_counting_falls_back_to_one_process_where_fork_does_not_exist(monkeypatch, big_documents):
    """A long str (counted in forked segments where fork exists) and many documents (counted in
    forked batches) are counted in this process instead, with the same result."""
    text = "".join(big_documents)
    expected_text = sequential_counts([text], GPT4_SPLIT_PATTERN)
    expected_docs = sequential_counts(big_documents, GPT4_SPLIT_PATTERN)
    monkeypatch.setattr(chunk_counting, "_SEGMENT_CHARS", len(text) // 5)
    _without_fork(monkeypatch)
    assert count_chunks(text, GPT4_SPLIT_PATTERN, num_workers=2) == expected_text
    assert count_chunks(big_documents, GPT4_SPLIT_PATTERN, num_workers=2) == expected_docs


def test_encode_batch_falls_back_to_one_process_where_fork_does_not_exist(monkeypatch, big_documents):
    from hf_bbpe.engine.encoding import batches as batch_encoding

    tok = RegexTokenizer()
    tok.train(big_documents[:200], 300, progress=False)
    texts = big_documents[: len(big_documents) // 2]
    assert sum(map(len, texts)) > batch_encoding._PARALLEL_MIN_CHARS  # the parallel path where fork exists
    expected = [tok.encode(t) for t in texts]
    _without_fork(monkeypatch)
    assert tok.encode_batch(texts, num_workers=2) == expected


@given(st.lists(st.sampled_from(["a", "b c", " ", "\n", "\r", "\r\n", "\n\n", "\t"]), max_size=40), st.data())
def test_paragraphs_of_any_pieces_are_those_of_the_lines(parts, data):
    """``paragraphs`` cuts at runs of blank lines, lines ending at \\n only: the same documents from
    a binary file's lines (what hf-bbpe train reads), a text file opened with newline='' (which
    also cuts lines at \\r) and arbitrary pieces; joined, they are the text."""
    import io

    from hf_bbpe import paragraphs

    text = "".join(parts)
    from_bytes = list(paragraphs(line.decode() for line in io.BytesIO(text.encode())))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=5)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert list(paragraphs(io.StringIO(text, newline=""))) == from_bytes == list(paragraphs(pieces))
    assert "".join(from_bytes) == text
    for doc in from_bytes[:-1]:  # each document but the last ends with a blank line
        assert doc.endswith("\n") and not doc.split("\n")[-2].strip("\r")
