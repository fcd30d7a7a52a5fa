"""``Tokenizer.train`` / ``extend`` on a Hugging Face ``datasets.Dataset`` or streaming
``IterableDataset`` (built here from local data, no Hub): the merges equal training on the same
documents as a list; a missing column, or a DatasetDict instead of a split, is a clear error."""

from __future__ import annotations

import pytest

from hf_bbpe import RegexTokenizer
from tests.support.hf import mix_docs, trained_engine

datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return mix_docs()


@pytest.fixture(scope="module")
def expected(docs):
    tok = RegexTokenizer("gpt4")
    tok.train(docs, 600, num_workers=1)
    return tok.merges


def test_a_dataset_trains_like_its_documents(docs, expected):
    ds = datasets.Dataset.from_dict({"id": list(range(len(docs))), "content": docs})
    tok = RegexTokenizer("gpt4")
    tok.train(ds, 600, text_column="content", num_workers=1)
    assert tok.merges == expected


def test_a_streaming_dataset_trains_like_its_documents(docs, expected, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    half = len(docs) // 2
    for k, part in enumerate((docs[:half], docs[half:])):
        pq.write_table(pa.table({"text": part}), tmp_path / f"part-{k}.parquet")
    files = [str(tmp_path / f"part-{k}.parquet") for k in range(2)]
    streaming = datasets.load_dataset("parquet", data_files=files, split="train", streaming=True)
    assert isinstance(streaming, datasets.IterableDataset)
    tok = RegexTokenizer("gpt4")
    tok.train(streaming, 600)
    assert tok.merges == expected
    generated = datasets.IterableDataset.from_generator(lambda: ({"text": doc} for doc in docs))
    tok.train(generated, 600, num_workers=1)
    assert tok.merges == expected


def test_extend_takes_a_dataset(docs):
    base = trained_engine(400, eot_id=None)
    ds = datasets.Dataset.from_dict({"text": docs}).to_iterable_dataset(num_shards=3)
    assert base.extend(ds, 100, num_workers=1).merges == base.extend(docs, 100, num_workers=1).merges


def test_a_missing_column_is_named(docs):
    ds = datasets.Dataset.from_dict({"body": docs[:5]})
    with pytest.raises(ValueError, match="no column 'text'.*body"):
        RegexTokenizer("gpt4").train(ds, 300)


def test_a_dataset_dict_asks_for_a_split(docs):
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": docs[:5]})})
    with pytest.raises(TypeError, match=r"ds\['train'\]"):
        RegexTokenizer("gpt4").train(dd, 300)
