"""``hf-bbpe encode-corpus --format npy|nanogpt|llmc|megatron|olmo``: the same tokens for every
pretraining loader, read back the way each loader reads them.

One real corpus (mix-sample.txt's documents spread over a .jsonl, a .parquet and a text file) is
written in every format by the real command; each folder is read by its loader:

* npy: ``np.load`` (the README's recipe);
* nanogpt: nanoGPT's ``train.py`` ``get_batch`` (karpathy/nanoGPT 3adf61e): ``np.memmap(path,
  dtype=np.uint16, mode="r")``; nanoGPT is not on PyPI, so its two lines are written here;
* llmc: llm.c's ``_load_data_shard`` (karpathy/llm.c f1e2ace, ``train_gpt2.py`` and
  ``train_llama3.py``: the 256-int32 header, magic and version, the count checked against the
  file, as ``llmc/dataloader.h`` checks it) and modded-nanogpt's ``_load_data_shard``
  (KellerJordan/modded-nanogpt f411b3d, ``train_gpt.py``: ``torch.from_file`` of the header,
  ``readinto`` of the ids); neither is on PyPI, so both are written here from their source;
* megatron: the real ``megatron-core`` from PyPI (``IndexedDataset``, and ``GPTDataset`` built by
  ``BlendedMegatronDatasetBuilder``);
* olmo: OLMo-core's reading (allenai/OLMo-core fa6c501, ai2-olmo-core 3.0.0): the dtype from
  ``NumpyDatasetConfig.get_dtype``, ``np.memmap`` of the headerless array, documents from
  ``olmo_core.data.utils.iter_document_indices`` (cut after each EOS id, or the ``start,end``
  lines of the ``.csv.gz`` beside the array). ``ai2-olmo-core`` pins filelock<4 and, through
  cached-path, rich<14 and an older huggingface_hub, which would replace the shared venv's, so it
  is not a test dependency: its reading is written here from that source.

The tokens are byte-identical across formats and equal to the engine's ``encode_ordinary`` of
each document followed by EOS. Every format resumes an interrupted run to the same bytes; bad
input is a one-line error.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from hf_bbpe import Tokenizer
from hf_bbpe.token_shards import write_token_shards
from tests.support.cli import assert_one_line_error, run_cli
from tests.support.hf import EOT, mix_docs, trained_engine
from tests.support.shards import folder_bytes, shard_documents, write_corpus

FORMATS = ["npy", "nanogpt", "llmc", "megatron", "olmo"]
VAL_FRACTION, VAL_SEED = 0.1, 7
SPLIT = ["--val-fraction", str(VAL_FRACTION), "--val-seed", str(VAL_SEED)]


def in_val(index: int, fraction: float = VAL_FRACTION, seed: int = VAL_SEED) -> bool:
    """The README's rule for the val split, computed here on its own."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") < fraction * 2**64


@pytest.fixture(scope="module")
def written(tmp_path_factory, mix_tok_dir) -> tuple[Path, list[list[int]]]:
    """Every format's folder (one encode-corpus run each, several shards) and the expected ids."""
    root = tmp_path_factory.mktemp("formats")
    files, docs = write_corpus(root / "corpus")
    for fmt in FORMATS:
        run_cli("encode-corpus", *files, "--tokenizer", mix_tok_dir, "--out", root / fmt, "--docs", "line",
                "--shard-mb", "0.05", "--no-progress", "--format", fmt,
                *(SPLIT if fmt in ("nanogpt", "llmc") else []))
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    return root, [tok.encode_ordinary(doc) + [tok.special_tokens[EOT]] for doc in docs]


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def cut_at_eos(tokens: np.ndarray, eos: int) -> list[list[int]]:
    ends = np.flatnonzero(tokens == eos) + 1
    assert len(tokens) == 0 or ends[-1] == len(tokens)
    return [tokens[a:b].tolist() for a, b in zip(np.r_[0, ends[:-1]], ends)]


# -- the loaders' readers ---------------------------------------------------------------------------

def nanogpt_memmap(path: Path) -> np.ndarray:
    """nanoGPT train.py get_batch: ``np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')``."""
    return np.memmap(path, dtype=np.uint16, mode="r")


def llmc_load_data_shard(path: Path) -> np.ndarray:
    """llm.c train_gpt2.py / train_llama3.py ``_load_data_shard``, with dataloader.h's size check."""
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(256 * 4), dtype=np.int32)
        if header[0] == 20240520:
            assert header[1] == 1, "unsupported version"
            dtype = np.uint16
        else:
            assert header[0] == 20240801, "magic number mismatch in the data .bin file"
            assert header[1] == 7, "unsupported version"
            dtype = np.uint32
        ntok = int(header[2])
        tokens = np.frombuffer(f.read(), dtype=dtype)
    assert ntok > 0 and len(tokens) == ntok, "number of tokens read does not match header?"
    assert path.stat().st_size == 256 * 4 + ntok * np.dtype(dtype).itemsize
    return tokens


def modded_nanogpt_load_data_shard(file: Path):
    """modded-nanogpt train_gpt.py ``_load_data_shard`` (uint16 only; pin_memory dropped: no GPU here)."""
    import torch

    header = torch.from_file(str(file), False, 256, dtype=torch.int32)
    assert header[0] == 20240520, "magic number mismatch in the data .bin file"
    assert header[1] == 1, "unsupported version"
    num_tokens = int(header[2])
    with file.open("rb", buffering=0) as f:
        tokens = torch.empty(num_tokens, dtype=torch.uint16)
        f.seek(256 * 4)
        nbytes = f.readinto(tokens.numpy())
        assert nbytes == 2 * num_tokens, "number of tokens read does not match header"
    return tokens


def olmo_dtype(vocab_size: int):
    """OLMo-core NumpyDatasetConfig.get_dtype: the first of uint8/16/32/64 that holds vocab_size - 1."""
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if vocab_size - 1 <= np.iinfo(dtype).max:
            return dtype
    raise ValueError("vocab size too big!")


def olmo_documents(path: Path, dtype, eos_token_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """A part's documents as OLMo-core's iter_document_indices finds them: from the array (cut after
    each EOS id, ``use_array_if_local``) and from the ``.csv.gz`` metadata (``start,end`` lines)."""
    mmap = np.memmap(path, mode="r", dtype=dtype)
    by_array, start = [], 0
    for idx in (mmap == eos_token_id).nonzero()[0]:
        by_array.append(mmap[start : idx + 1].tolist())
        start = idx + 1
    metadata = path.parent / path.name.replace(".npy", ".csv.gz")
    by_metadata = []
    with gzip.open(metadata, "rt") as f:
        for line in f:
            start_index, end_index, *_ = line.split(",")
            by_metadata.append(mmap[int(start_index) : int(end_index)].tolist())
    return by_array, by_metadata


def megatron_documents(prefix: Path) -> tuple[list[list[int]], np.dtype]:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    dataset = IndexedDataset(str(prefix))
    assert list(dataset.document_indices) == list(range(len(dataset) + 1))  # one sequence per document
    return [dataset[i].tolist() for i in range(len(dataset))], dataset.index.dtype


# -- the tests --------------------------------------------------------------------------------------

def test_every_format_holds_the_same_tokens(written):
    """Each loader reads the engine's ids of every document, EOS after each; the token bytes of
    npy, megatron and olmo are the same, and nanogpt's and llmc's train and val files hold those
    documents' bytes, split by the documented rule."""
    root, expected = written
    npy = shard_documents(root / "npy")
    assert npy == expected
    stream = b"".join(np.load(root / "npy" / e["tokens_file"]).tobytes() for e in manifest(root / "npy")["shards"])
    val = [in_val(i) for i in range(len(expected))]
    assert 0 < sum(val) < len(expected)
    as_bytes = lambda docs: np.array([t for doc in docs for t in doc], dtype=np.uint16).tobytes()  # noqa: E731
    train_bytes = as_bytes(doc for doc, v in zip(expected, val) if not v)
    val_bytes = as_bytes(doc for doc, v in zip(expected, val) if v)

    entries = manifest(root / "megatron")["shards"]
    assert b"".join((root / "megatron" / e["files"][0]).read_bytes() for e in entries) == stream
    entries = manifest(root / "olmo")["shards"]
    assert b"".join((root / "olmo" / e["files"][0]).read_bytes() for e in entries) == stream
    assert (root / "nanogpt" / "train.bin").read_bytes() == train_bytes
    assert (root / "nanogpt" / "val.bin").read_bytes() == val_bytes
    llmc = manifest(root / "llmc")["shards"]
    assert b"".join(llmc_load_data_shard(root / "llmc" / name).tobytes() for e in llmc for name in e["files"]) \
        == train_bytes
    assert llmc_load_data_shard(root / "llmc" / "val_000000.bin").tobytes() == val_bytes
    assert stream == as_bytes(expected)


def test_nanogpt_bins_read_as_get_batch_reads_them(written):
    root, expected = written
    eos = expected[0][-1]
    train, val = nanogpt_memmap(root / "nanogpt" / "train.bin"), nanogpt_memmap(root / "nanogpt" / "val.bin")
    in_val_docs = [doc for i, doc in enumerate(expected) if in_val(i)]
    assert cut_at_eos(train, eos) == [doc for i, doc in enumerate(expected) if not in_val(i)]
    assert cut_at_eos(val, eos) == in_val_docs
    block_size = 64  # get_batch's x and y: a window and the same window one token on
    x, y = train[100 : 100 + block_size].astype(np.int64), train[101 : 101 + block_size].astype(np.int64)
    assert (x[1:] == y[:-1]).all()
    data = manifest(root / "nanogpt")
    assert data["dtype"] == "uint16" and data["complete"] and not list((root / "nanogpt").glob("*.partial"))
    assert sum(e["val_documents"] for e in data["shards"]) == len(in_val_docs)


def test_llmc_shards_read_by_llmc_and_modded_nanogpt(written):
    root, expected = written
    folder = root / "llmc"
    train_files = sorted(folder.glob("train_*.bin"))  # what llm.c's and modded-nanogpt's globs find
    assert len(train_files) == len(manifest(folder)["shards"]) > 3
    eos = expected[0][-1]
    train = [doc for f in train_files for doc in cut_at_eos(llmc_load_data_shard(f), eos)]
    assert train == [doc for i, doc in enumerate(expected) if not in_val(i)]
    assert cut_at_eos(llmc_load_data_shard(folder / "val_000000.bin"), eos) == \
        [doc for i, doc in enumerate(expected) if in_val(i)]
    for f in [*train_files, folder / "val_000000.bin"]:
        assert modded_nanogpt_load_data_shard(f).numpy().tobytes() == llmc_load_data_shard(f).tobytes()


@pytest.mark.slow  # importing megatron.core takes about 10 s
def test_megatron_indexed_dataset_and_gpt_dataset_read_the_shards(written, tmp_path):
    """The real megatron-core: IndexedDataset gives every document; GPTDataset, built on a shard by
    BlendedMegatronDatasetBuilder, gives samples that are windows of those documents in its order."""
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

    root, expected = written
    data = manifest(root / "megatron")
    prefixes = [root / "megatron" / e["files"][0].removesuffix(".bin") for e in data["shards"]]
    documents = []
    for prefix in prefixes:
        docs, dtype = megatron_documents(prefix)
        assert dtype == np.uint16
        documents += docs
    assert documents == expected

    class MegatronTokenizer:  # what GPTDataset asks of a tokenizer
        vocab_size, eod, pad, bos = data["vocab_size"], data["eos_id"], -1, None
        unique_identifiers = {"class": "test"}

    config = GPTDatasetConfig(random_seed=1, sequence_length=64, blend=([str(prefixes[0])], None), split="1,0,0",
                              tokenizer=MegatronTokenizer(), reset_position_ids=False, reset_attention_mask=False,
                              eod_mask_loss=False, path_to_cache=str(tmp_path))
    train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [None, None, None], lambda: True, config).build()
    train[0]  # maps its indexes
    shard_docs = documents[: data["shards"][0]["documents"]]
    ordered = [shard_docs[d] for d in train.document_index]  # Megatron's shuffled document order
    starts = np.r_[0, np.cumsum([len(doc) for doc in ordered])]
    stream = np.array([t for doc in ordered for t in doc])
    assert len(train) > 10
    for i in range(len(train)):
        sample = train[i]
        doc, offset = train.sample_index[train.shuffle_index[i]]
        window = stream[starts[doc] + offset : starts[doc] + offset + 65]
        assert sample["tokens"].tolist() == window[:-1].tolist() and sample["labels"].tolist() == window[1:].tolist()


def test_olmo_memmaps_read_as_olmo_core_reads_them(written):
    root, expected = written
    data = manifest(root / "olmo")
    dtype = olmo_dtype(data["vocab_size"])
    assert np.dtype(dtype) == np.dtype(data["dtype"]) == np.uint16
    by_array, by_metadata = [], []
    for entry in data["shards"]:
        array_docs, metadata_docs = olmo_documents(root / "olmo" / entry["files"][0], dtype, data["eos_id"])
        by_array += array_docs
        by_metadata += metadata_docs
    assert by_array == by_metadata == expected


def test_a_vocabulary_beyond_uint16(tmp_path):
    """Ids above 65,535: llmc writes llm.c's uint32 header (20240801, version 7), megatron int32
    (IndexedDataset reads dtype code 4), olmo uint32 (OLMo-core's rule), all the same values;
    nanogpt, which reads uint16 only, is refused with one line before anything is written."""
    docs = mix_docs()[:60]
    tok = trained_engine(1024, eot_id=65536)
    expected = [tok.encode_ordinary(doc) + [65536] for doc in docs]
    for fmt in ("llmc", "megatron", "olmo"):
        write_token_shards(docs, tok, tmp_path / fmt, eos_id=65536, format=fmt, shard_bytes=4000, progress=False,
                           **({"val_fraction": 0.2} if fmt == "llmc" else {}))
    llmc = manifest(tmp_path / "llmc")
    train = [doc for f in sorted((tmp_path / "llmc").glob("train_*.bin"))
             for doc in cut_at_eos(llmc_load_data_shard(f), 65536)]
    val = cut_at_eos(llmc_load_data_shard(tmp_path / "llmc" / "val_000000.bin"), 65536)
    assert llmc["dtype"] == "uint32" and (tmp_path / "llmc" / "train_000000.bin").read_bytes()[:8] == \
        np.array([20240801, 7], dtype="<i4").tobytes()
    assert train == [doc for i, doc in enumerate(expected) if not in_val(i, 0.2, 2357)]
    assert val == [doc for i, doc in enumerate(expected) if in_val(i, 0.2, 2357)]
    megatron = []
    for entry in manifest(tmp_path / "megatron")["shards"]:
        documents, dtype = megatron_documents(tmp_path / "megatron" / entry["files"][0].removesuffix(".bin"))
        assert dtype == np.int32
        megatron += documents
    assert megatron == expected
    olmo = manifest(tmp_path / "olmo")
    assert np.dtype(olmo_dtype(olmo["vocab_size"])) == np.dtype(olmo["dtype"]) == np.uint32
    assert [doc for e in olmo["shards"]
            for doc in olmo_documents(tmp_path / "olmo" / e["files"][0], np.uint32, 65536)[0]] == expected

    big = tmp_path / "big"
    big.mkdir()
    tok.save(big / "tokenizer")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(docs), encoding="utf-8")
    proc = run_cli("encode-corpus", corpus, "--tokenizer", big, "--out", tmp_path / "nanogpt", "--format", "nanogpt",
                   check=False)
    assert_one_line_error(proc, "nanoGPT reads uint16 ids", "65,537 ids", "llmc")
    assert not (tmp_path / "nanogpt").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_resumes_to_the_same_bytes(fmt, tmp_path):
    """A run stopped by an error after some shards resumes to the folder a straight run writes;
    meanwhile no loader-named file is half there (nanoGPT's and llm.c's val grow as .partial).
    Then the states a kill can leave: bytes appended but not yet recorded, and files renamed at
    the end before the manifest said ``complete``."""
    docs = mix_docs()
    tok = trained_engine(1024)
    options = {"eos_id": 1030, "shard_bytes": 20_000, "progress": False, "format": fmt,
               **({"val_fraction": 0.1} if fmt in ("nanogpt", "llmc") else {})}

    def failing_after(n):
        yield from docs[:n]
        raise OSError("the disk went away")

    with pytest.raises(OSError, match="went away"):
        write_token_shards(failing_after(700), tok, tmp_path / "resumed", **options)
    data = manifest(tmp_path / "resumed")
    assert not data["complete"] and 0 < data["documents"] < 700 and data["shard_format"] == fmt
    assert not (tmp_path / "resumed" / "train.bin").exists() and not (tmp_path / "resumed" / "val_000000.bin").exists()
    for partial in (tmp_path / "resumed").glob("*.partial"):  # as if killed after appending, before recording
        with open(partial, "ab") as f:
            f.write(b"\xff" * 6)
    write_token_shards(docs, tok, tmp_path / "resumed", **options)
    write_token_shards(docs, tok, tmp_path / "straight", **options)
    assert folder_bytes(tmp_path / "resumed") == folder_bytes(tmp_path / "straight")

    path = tmp_path / "resumed" / "manifest.json"  # as if killed after the last renames, before "complete"
    path.write_text(json.dumps({**manifest(tmp_path / "resumed"), "complete": False}), encoding="utf-8")
    write_token_shards(docs, tok, tmp_path / "resumed", **options)
    assert folder_bytes(tmp_path / "resumed") == folder_bytes(tmp_path / "straight")


def test_a_folder_written_before_formats_resumes_as_npy(tmp_path):
    """A manifest without "shard_format" (hf_bbpe before --format) is an npy folder."""
    docs, tok = mix_docs(), trained_engine(1024)
    options = {"eos_id": 1030, "shard_bytes": 20_000, "progress": False}

    def failing_after(n):
        yield from docs[:n]
        raise OSError("stop")

    with pytest.raises(OSError):
        write_token_shards(failing_after(500), tok, tmp_path / "old", **options)
    data = manifest(tmp_path / "old")
    del data["shard_format"]
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    write_token_shards(docs, tok, tmp_path / "old", **options)
    assert shard_documents(tmp_path / "old") == [tok.encode_ordinary(doc) + [1030] for doc in docs]


def test_split_options_are_checked(mix_tok_dir, tmp_path):
    """--val-fraction with a format that has no val file, or out of (0, 1), is a one-line error
    before anything is written; a split left empty is a clear error naming the fix."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("one document\n", encoding="utf-8")
    base = ["encode-corpus", corpus, "--tokenizer", mix_tok_dir, "--out", tmp_path / "out"]
    assert_one_line_error(run_cli(*base, "--format", "megatron", "--val-fraction", "0.1", check=False),
                          "--val-fraction", "megatron")
    proc = run_cli(*base, "--format", "nanogpt", "--val-fraction", "1.5", check=False)
    assert proc.returncode == 2 and b"--val-fraction" in proc.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="val_fraction is for the formats with a val file"):
        write_token_shards(["a"], trained_engine(1024), tmp_path / "api", eos_id=1030, format="olmo",
                           val_fraction=0.1)
    with pytest.raises(ValueError, match="no shard format 'bin'"):
        write_token_shards(["a"], trained_engine(1024), tmp_path / "api", eos_id=1030, format="bin")
    assert not (tmp_path / "api").exists()
    assert_one_line_error(run_cli(*base, "--format", "llmc", check=False), "no document of 1 fell in the val split",
                          "larger val fraction")
