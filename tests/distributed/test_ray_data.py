"""hf_bbpe.distributed on a real local Ray cluster (``ray.init(num_cpus=2)``, the session's ``cluster`` fixture).

* chunk counts, and the merges trained from them, equal the single-machine path on the documents
  of mix-sample.txt, for both tie-breaks (``first_occurrence`` through ``order_column``), for
  ``extend`` too, and with ``min_chunk_count`` pruning;
* for the patterns a C scanner knows, the workers count with the single-machine C counter (their
  partial counts are its buffers as an Arrow column), and the totals equal its counts;
* a counting task whose worker process dies mid-job is retried by Ray: nothing lost or counted twice;
* ``encode_dataset`` gives the engine's ids, from an engine tokenizer and from a saved folder;
* counts above 2**32 train like a reference that counts with Python ints;
* parity-aware training counts each language (and dev set) on the cluster, with the local merges.

Ray is an optional extra: without it this module skips, except in CI, where it must run.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

try:
    import ray
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("Ray is not installed (pip install 'hf_bbpe[ray]')", allow_module_level=True)

from hf_bbpe import BasicTokenizer, BBPETokenizer, RegexTokenizer
from hf_bbpe.engine.training.counting_reference import count_chunks as local_counts
from hf_bbpe.distributed import count_chunks, encode_dataset
from hf_bbpe.distributed.counting import _PartialCounts
from hf_bbpe.engine.training.counting import count_native
from hf_bbpe.engine.chunking.patterns import resolve_pattern
from tests.support.hf import EOT, mix_docs, trained_engine
from tests.support.reference_bpe import naive_train_weighted

GPT4 = RegexTokenizer("gpt4").pattern


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return mix_docs()


@pytest.fixture(scope="module")
def ds(cluster, docs):
    """The documents with their positions, in 4 blocks (so 4 counting tasks)."""
    return ray.data.from_items([{"text": doc, "position": i} for i, doc in enumerate(docs)], override_num_blocks=4)


@pytest.mark.parametrize("pattern", [GPT4, None], ids=["gpt4", "no-split"])
def test_counts_equal_single_machine(ds, docs, pattern):
    expected = local_counts(docs, pattern, num_workers=1)
    assert count_chunks(ds, pattern) == expected
    ordered = count_chunks(ds, pattern, order_column="position")
    assert list(ordered.items()) == list(expected.items())  # same counts, in order of first appearance


# a scanner of each kind (ASCII classes, Unicode cases, Tekken's); tests/engine holds every scanner to `regex`
@pytest.mark.parametrize("name", ["gpt2", "o200k", "tekken"])
def test_workers_count_with_the_c_counter(ds, docs, name):
    import pyarrow as pa

    pattern = resolve_pattern(name)
    partial = ds.map_batches(_PartialCounts(pattern, "text", None), batch_format="pyarrow", zero_copy_batch=True)
    tables = ray.get(partial.to_arrow_refs())
    for table in tables:  # the C counter's buffers as they are; the regex path makes a string column
        assert table.schema.field("chunk").type == pa.large_string()
        table.validate(full=True)
    single = count_native(docs, pattern, num_threads=1, progress=False).to_dict()
    assert single == local_counts(docs, pattern, num_workers=1)
    assert count_chunks(ds, pattern) == single


def test_merges_equal_single_machine_smallest_pair(ds, docs):
    on_ray = RegexTokenizer("gpt4")
    on_ray.train(ds, 700)
    local = RegexTokenizer("gpt4")
    local.train(docs, 700, num_workers=1)
    assert len(local.merges) == 444
    assert on_ray.merges == local.merges


def test_merges_equal_single_machine_first_occurrence(ds, docs):
    on_ray = RegexTokenizer("gpt4")
    on_ray.train_from_counts(count_chunks(ds, on_ray, order_column="position"), 700, tie_break="first_occurrence")
    local = RegexTokenizer("gpt4")
    local.train(docs, 700, num_workers=1, tie_break="first_occurrence")
    assert on_ray.merges == local.merges
    smallest = RegexTokenizer("gpt4")
    smallest.train(docs, 700, num_workers=1)
    assert smallest.merges != local.merges  # the two tie-breaks differ here, so the order mattered


def test_first_occurrence_on_a_dataset_asks_for_the_order(ds):
    with pytest.raises(ValueError, match="order_column"):
        RegexTokenizer("gpt4").train(ds, 300, tie_break="first_occurrence")


def test_basic_tokenizer_and_extend_equal_single_machine(ds, docs):
    basic_ray, basic = BasicTokenizer(), BasicTokenizer()
    basic_ray.train(ds, 300)
    basic.train(docs, 300, num_workers=1)
    assert basic_ray.merges == basic.merges
    base = trained_engine(400, eot_id=None)
    assert base.extend(ds, 100).merges == base.extend(docs, 100, num_workers=1).merges


def test_min_chunk_count_prunes_inside_ray(ds, docs):
    expected = {chunk: n for chunk, n in local_counts(docs, GPT4, num_workers=1).items() if n >= 3}
    assert count_chunks(ds, "gpt4", min_chunk_count=3) == expected
    with pytest.raises(ValueError, match="min_chunk_count"):
        count_chunks(ds, "gpt4", min_chunk_count=0)


def test_unknown_column_is_named(ds):
    with pytest.raises(ValueError, match="'body'.*text"):
        count_chunks(ds, "gpt4", text_column="body")


class _DieOnce:
    """A map over documents whose worker process exits (as if killed) the first time it sees
    the document at ``position``; ``marker`` records that it did."""

    def __init__(self, marker: str, position: int) -> None:
        self.marker, self.position = marker, position

    def __call__(self, batch: dict) -> dict:
        if self.position in list(batch["position"]) and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return batch


def test_a_killed_counting_task_loses_and_duplicates_nothing(cluster, docs, tmp_path):
    marker = tmp_path / "died"
    ds = ray.data.from_items([{"text": doc, "position": i} for i, doc in enumerate(docs)], override_num_blocks=4)
    dying = ds.map_batches(_DieOnce(str(marker), len(docs) // 2))  # Ray Data retries failed tasks by default
    assert count_chunks(dying, GPT4) == local_counts(docs, GPT4, num_workers=1)
    assert marker.exists()  # a worker really died during the job


def test_encode_dataset_with_an_engine_tokenizer(ds, docs):
    tok = trained_engine(1024)
    rows = encode_dataset(ds, tok, add_eos=True, attention_mask=True, num_actors=2).take_all()
    assert sorted(row["position"] for row in rows) == list(range(len(docs)))
    for row in rows:
        expected = tok.encode_ordinary(docs[row["position"]]) + [tok.special_tokens[EOT]]
        assert list(row["input_ids"]) == expected
        assert list(row["attention_mask"]) == [1] * len(expected)


def test_encode_dataset_with_a_saved_folder(ds, docs, tmp_path):
    tok = trained_engine(1024)
    BBPETokenizer.from_engine(tok, eos_token=EOT).save_pretrained(tmp_path)
    rows = encode_dataset(ds, str(tmp_path), add_eos=True, num_actors=1).take_all()
    assert {row["position"]: list(row["input_ids"]) for row in rows} == {
        i: tok.encode_ordinary(doc) + [tok.special_tokens[EOT]] for i, doc in enumerate(docs)
    }
    with pytest.raises(ValueError, match="no special token '<|eos|>'"):
        encode_dataset(ds, tok, add_eos=True, eos_token="<|eos|>")


def test_counts_above_2_to_the_32_train_like_a_reference():
    """Cut to 32 bits, ``ab`` would count 1 and ``cd`` 2, and (c, d) would merge before (a, b)."""
    counts = {"ab": 2**32 + 1, "cd": 2, "xyz": 2**33 + 7, "yz": 5, "cdab": 2**31}
    tok = RegexTokenizer("gpt4")
    tok.train_from_counts(counts, 256 + 5)
    assert tok.merges == naive_train_weighted({chunk.encode(): n for chunk, n in counts.items()}, 5)
    assert list(tok.merges)[:3] == [(ord("y"), ord("z")), (ord("x"), 256), (ord("a"), ord("b"))]


def test_without_ray_the_error_names_the_extra():
    code = "import sys; sys.modules['ray'] = None\ntry:\n import hf_bbpe.distributed\nexcept ImportError as e: print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'hf_bbpe[ray]'" in out


def test_parity_training_counts_each_language_on_the_cluster(cluster):
    """``train(languages=...)`` with a Ray Dataset per language (and per dev set): each is counted
    by the cluster, and the merges equal the single-machine ones (which tests/engine/training/
    test_parity.py holds to ParityBpeTrainer)."""
    from pathlib import Path

    from hf_bbpe import ParityConfig

    data = Path(__file__).resolve().parents[1] / "data" / "text" / "parity"

    def documents(name: str) -> list[str]:
        return [doc for doc in (data / name).read_text(encoding="utf-8").split("\n\n") if doc]

    def dataset(texts: list[str]):
        return ray.data.from_items([{"text": text} for text in texts], override_num_blocks=2)

    names = ("en", "ru", "zh")
    train = {name: documents(f"{name}.txt") for name in names}
    dev = {name: documents(f"{name}.dev.txt") for name in names}
    local = RegexTokenizer("gpt4")
    local.train(languages=train, vocab_size=900, parity=ParityConfig(dev=dev), num_workers=1, progress=False)
    on_ray = RegexTokenizer("gpt4")
    on_ray.train(languages={name: dataset(texts) for name, texts in train.items()}, vocab_size=900,
                 parity=ParityConfig(dev={name: dataset(texts) for name, texts in dev.items()}), progress=False)
    assert len(local.merges) == 900 - 256
    assert on_ray.merges == local.merges
