"""``hf-bbpe encode-corpus``: token shards from .jsonl, .parquet and text files (hf_bbpe.token_shards).

* the shards hold every document's engine ids followed by EOS, read back with plain numpy;
* one process and every core write byte-identical folders (threads for the C kernel, forked
  processes for a normalizer);
* uint16 when the vocabulary fits, uint32 otherwise;
* a run killed mid-way (SIGKILL of the real command while it waits for input), or stopped by an
  error after some shards, resumes to the same bytes, without a document lost or repeated;
* bad input is a one-line error naming the file: a missing field or column, an empty tokenizer
  folder, a tokenizer that is not the one an unfinished folder was started with.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.token_shards import open_token_shards, write_token_shards
from tests.support.cli import CLI, assert_one_line_error, cli_env, run_cli
from tests.support.hf import EOT, mix_docs, trained_engine
from tests.support.shards import folder_bytes, shard_documents, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[list[Path], list[str]]:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


def encode_corpus(corpus_files, tok_dir, out, *extra, check=True):
    return run_cli("encode-corpus", *corpus_files, "--tokenizer", tok_dir, "--out", out, "--docs", "line",
                   "--no-progress", *extra, check=check)


def test_shards_hold_each_document_then_eos(corpus, mix_tok_dir, tmp_path):
    files, docs = corpus
    encode_corpus(files, mix_tok_dir, tmp_path / "out", "--shard-mb", "0.02")
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    eos = tok.special_tokens[EOT]
    assert shard_documents(tmp_path / "out") == [tok.encode_ordinary(doc) + [eos] for doc in docs]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dtype"] == "uint16" and manifest["eos_id"] == eos and manifest["vocab_size"] == tok.n_vocab
    assert manifest["complete"] and manifest["documents"] == len(docs) and len(manifest["shards"]) > 5
    assert [entry["documents"] for entry in manifest["shards"]] == [len(s) for s in open_token_shards(tmp_path / "out")]


def test_one_process_and_every_core_write_the_same_bytes(corpus, mix_tok_dir, tmp_path):
    files, _ = corpus
    encode_corpus(files, mix_tok_dir, tmp_path / "one", "--shard-mb", "0.1", "--workers", "1")
    encode_corpus(files, mix_tok_dir, tmp_path / "all", "--shard-mb", "0.1")
    assert folder_bytes(tmp_path / "one") == folder_bytes(tmp_path / "all")


def test_processes_for_a_normalizer_write_the_same_bytes(tmp_path):
    """NFKC keeps the C kernel from encoding whole texts, so every core means forked processes."""
    tok = RegexTokenizer("gpt4", normalizer="NFKC")
    tok.train(mix_docs(), 400, num_workers=1)
    tok.register_special_tokens({EOT: 400})
    docs = mix_docs() * 5  # more than a MB in one batch: enough for encode_batch to fork
    for workers in (1, 2):
        write_token_shards(docs, tok, tmp_path / f"w{workers}", eos_id=400, shard_bytes=4 << 20, progress=False,
                           encoder=None if workers == 2 else _one_thread(tok))
    assert folder_bytes(tmp_path / "w1") == folder_bytes(tmp_path / "w2")
    assert shard_documents(tmp_path / "w2")[3] == tok.encode_ordinary(docs[3]) + [400]


def _one_thread(tok):
    from hf_bbpe.token_shards import local_encoder

    return local_encoder(tok, num_workers=1)


def test_uint32_when_an_id_needs_more_than_16_bits(tmp_path):
    docs = mix_docs()[:50]
    small, large = trained_engine(1024, eot_id=65535), trained_engine(1024, eot_id=65536)
    assert write_token_shards(docs, small, tmp_path / "16", eos_id=65535, progress=False)["dtype"] == "uint16"
    assert write_token_shards(docs, large, tmp_path / "32", eos_id=65536, progress=False)["dtype"] == "uint32"
    assert shard_documents(tmp_path / "32") == [large.encode_ordinary(doc) + [65536] for doc in docs]
    assert [ids[:-1] for ids in shard_documents(tmp_path / "16")] == [ids[:-1] for ids in shard_documents(tmp_path / "32")]


def test_resume_after_an_error_loses_and_repeats_nothing(tmp_path):
    docs = mix_docs()
    tok = trained_engine(1024)

    def failing_after(n):
        yield from docs[:n]
        raise OSError("the disk went away")

    options = {"eos_id": 1030, "shard_bytes": 20_000, "progress": False}
    with pytest.raises(OSError, match="went away"):
        write_token_shards(failing_after(700), tok, tmp_path / "resumed", **options)
    manifest = json.loads((tmp_path / "resumed" / "manifest.json").read_text(encoding="utf-8"))
    assert not manifest["complete"] and 0 < manifest["documents"] < 700
    with pytest.raises(ValueError, match="not finished"):
        open_token_shards(tmp_path / "resumed")
    write_token_shards(docs, tok, tmp_path / "resumed", **options)
    write_token_shards(docs, tok, tmp_path / "straight", **options)
    assert folder_bytes(tmp_path / "resumed") == folder_bytes(tmp_path / "straight")
    assert shard_documents(tmp_path / "resumed") == [tok.encode_ordinary(doc) + [1030] for doc in docs]


def test_resume_after_sigkill(mix_tok_dir, tmp_path):
    """The real command reads a FIFO; once it has committed shards and waits for more input it is
    killed (SIGKILL: no clean-up runs), then the same command resumes with the whole input."""
    docs = mix_docs()
    fifo = tmp_path / "corpus.txt"
    os.mkfifo(fifo)
    payload = "".join(line + "\n" for doc in docs for line in doc.split("\n") if line.strip()).encode("utf-8")
    args = [*CLI, "encode-corpus", str(fifo), "--tokenizer", str(mix_tok_dir), "--docs", "line", "--shard-mb", "0.02",
            "--no-progress", "--out"]

    def run_feeding(out: Path, data: bytes, *, kill_after_shards: int | None = None) -> None:
        proc = subprocess.Popen([*args, str(out)], env=cli_env(), stderr=subprocess.PIPE)
        with open(fifo, "wb") as pipe:
            pipe.write(data)
            pipe.flush()
            if kill_after_shards is not None:
                manifest = out / "manifest.json"
                deadline = time.monotonic() + 60
                while not (manifest.exists() and len(json.loads(manifest.read_text())["shards"]) >= kill_after_shards):
                    assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                    time.sleep(0.02)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return
        assert proc.wait(timeout=120) == 0, proc.stderr.read()

    run_feeding(tmp_path / "killed", payload[: len(payload) * 2 // 3], kill_after_shards=4)
    manifest = json.loads((tmp_path / "killed" / "manifest.json").read_text(encoding="utf-8"))
    assert not manifest["complete"]
    run_feeding(tmp_path / "killed", payload)
    run_feeding(tmp_path / "straight", payload)
    assert folder_bytes(tmp_path / "killed") == folder_bytes(tmp_path / "straight")
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    lines = payload.decode("utf-8").splitlines(keepends=True)
    assert shard_documents(tmp_path / "killed") == [tok.encode_ordinary(line) + [tok.special_tokens[EOT]] for line in lines]


def test_a_finished_folder_is_left_as_it_is(corpus, mix_tok_dir, tmp_path):
    files, _ = corpus
    encode_corpus(files, mix_tok_dir, tmp_path / "out")
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}
    encode_corpus(files, mix_tok_dir, tmp_path / "out")
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()} == before


def test_a_missing_jsonl_field_names_the_file_and_line(mix_tok_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"content": "no text field"}\n', encoding="utf-8")
    proc = encode_corpus([bad], mix_tok_dir, tmp_path / "out", check=False)
    assert_one_line_error(proc, f"{bad}, line 2", "'text'", "'content'")


def test_a_missing_parquet_column_names_the_file(mix_tok_dir, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"body": ["some text"]}), bad)
    proc = encode_corpus([bad], mix_tok_dir, tmp_path / "out", check=False)
    assert_one_line_error(proc, str(bad), "no column 'text'", "body")
    encode_corpus([bad], mix_tok_dir, tmp_path / "out", "--text-column", "body")


def test_an_empty_tokenizer_folder_is_named(corpus, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = encode_corpus(corpus[0], tmp_path / "empty", tmp_path / "out", check=False)
    assert_one_line_error(proc, str(tmp_path / "empty"))
    assert not (tmp_path / "out").exists()


def test_resuming_with_another_tokenizer_is_refused(corpus, mix_tok_dir, tmp_path):
    files, _ = corpus
    other = tmp_path / "other"
    other.mkdir()
    trained_engine(1024).save(other / "tokenizer")
    encode_corpus(files, other, tmp_path / "out")
    manifest = tmp_path / "out" / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "complete": False}), encoding="utf-8")  # as if interrupted
    proc = encode_corpus(files, mix_tok_dir, tmp_path / "out", check=False)
    assert_one_line_error(proc, str(manifest), "another")


def test_no_eos_token_is_a_clear_error(corpus, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    trained_engine(1024, eot_id=None).save(plain / "tokenizer")
    proc = encode_corpus(corpus[0], plain, tmp_path / "out", check=False)
    assert_one_line_error(proc, str(plain), "no special token '<|endoftext|>'", "--eos-token")


BAD_INPUTS = {  # name -> (content, what the error says besides the file)
    "binary.bin": (bytes(range(256)) * 4, ", line 2: not UTF-8 text (byte 128"),  # byte 10 ends line 1
    "latin1.txt": ("première ligne\ndeuxième ligne\n".encode("latin-1"), ", line 1: not UTF-8 text (byte 5"),
    "no_field.jsonl": (b'{"text": "fine"}\n{"body": "x"}\n', ", line 2: no field 'text'"),
    "not_a_string.jsonl": (b'{"text": "fine"}\n\n{"text": 7}\n', ", line 3: field 'text' is not a string (a JSON number)"),
    "bad_json.jsonl": (b'{"text": "fine"}\n{"text": "cut\n', ", line 2: not JSON"),
    "empty.txt": (b"", ": empty input"),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_is_named_and_leaves_nothing(name, mix_tok_dir, tmp_path):
    content, says = BAD_INPUTS[name]
    bad = tmp_path / name
    bad.write_bytes(content)
    proc = encode_corpus([bad], mix_tok_dir, tmp_path / "out", check=False)
    assert_one_line_error(proc, f"{bad}{says}")
    assert not (tmp_path / "out").exists()
    (tmp_path / "given").mkdir()  # a folder the user made stays, empty
    assert_one_line_error(encode_corpus([bad], mix_tok_dir, tmp_path / "given", check=False), f"{bad}{says}")
    assert list((tmp_path / "given").iterdir()) == []


@pytest.mark.parametrize("fmt", ["npy", "nanogpt", "megatron"])
def test_bad_input_after_some_shards_leaves_nothing(fmt, mix_tok_dir, tmp_path):
    """The bad record comes after shards were committed: every run would stop there, so a new
    run's files are removed (the growing .partial files of nanogpt too); an error that a rerun may
    not meet (the disk, an interruption) keeps them to resume
    (test_resume_after_an_error_loses_and_repeats_nothing)."""
    docs = mix_docs()
    bad = tmp_path / "late.jsonl"
    bad.write_text("".join(json.dumps({"text": doc}) + "\n" for doc in docs) + '{"text": null}\n', encoding="utf-8")
    proc = encode_corpus([bad], mix_tok_dir, tmp_path / "out", "--shard-mb", "0.02", "--format", fmt, check=False)
    assert_one_line_error(proc, f"{bad}, line {len(docs) + 1}: field 'text' is not a string (a JSON null)")
    assert not (tmp_path / "out").exists()


def test_the_writer_makes_no_folder_before_a_whole_shard(tmp_path):
    def failing():
        yield "some text"
        raise ValueError("bad record")

    with pytest.raises(ValueError, match="bad record"):
        write_token_shards(failing(), trained_engine(1024), tmp_path / "out", eos_id=1030, progress=False)
    with pytest.raises(ValueError, match="empty input"):
        write_token_shards([], trained_engine(1024), tmp_path / "out", eos_id=1030, progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc"])
def test_an_empty_val_split_leaves_nothing(fmt, mix_tok_dir, tmp_path):
    """Issue 36: one text file with the default --docs file is one document, so the val split is
    empty; every run stops there, so nothing stays (no manifest, no .partial files) to block the
    rerun, which says the same; a folder the user made stays, empty."""
    corpus = tmp_path / "one.txt"
    corpus.write_text("\n".join(mix_docs()[:50]), encoding="utf-8")
    command = ["encode-corpus", corpus, "--tokenizer", mix_tok_dir, "--out", tmp_path / "out", "--format", fmt,
               "--no-progress"]
    for _ in range(2):
        assert_one_line_error(run_cli(*command, check=False), "no document of 1 fell in the val split",
                              "larger val fraction")
        assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()
    assert_one_line_error(run_cli(*command, check=False), "no document of 1 fell in the val split")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_resumed_run_ending_in_an_empty_split_leaves_nothing(tmp_path):
    """The same when the run that meets the empty split resumed an interrupted one: the folder
    holds only this command's files, and they go."""
    tok = trained_engine(1024)
    docs = mix_docs()[:40]
    options = {"eos_id": 1030, "shard_bytes": 2_000, "progress": False, "format": "nanogpt", "val_fraction": 1e-9}

    def failing_after(n):
        yield from docs[:n]
        raise OSError("the disk went away")

    with pytest.raises(OSError, match="went away"):
        write_token_shards(failing_after(30), tok, tmp_path / "out", **options)
    assert json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))["documents"] > 0
    with pytest.raises(ValueError, match="no document of 40 fell in the val split"):
        write_token_shards(docs, tok, tmp_path / "out", **options)
    assert list((tmp_path / "out").iterdir()) == []


def test_an_interrupted_run_says_how_to_resume(mix_tok_dir, tmp_path):
    """Ctrl-C (SIGINT) once shards are committed: exit status 130 and one line that says the same
    command resumes (test_resume_after_sigkill shows that it does, byte for byte)."""
    fifo = tmp_path / "corpus.txt"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    proc = subprocess.Popen([*CLI, "encode-corpus", str(fifo), "--tokenizer", str(mix_tok_dir), "--docs", "line",
                             "--shard-mb", "0.02", "--no-progress", "--out", str(out)], env=cli_env(),
                            stderr=subprocess.PIPE)
    with open(fifo, "wb") as pipe:
        pipe.write("".join(doc.replace("\n", " ") + "\n" for doc in mix_docs()).encode("utf-8"))
        pipe.flush()
        deadline = time.monotonic() + 60
        while not ((out / "manifest.json").exists() and json.loads((out / "manifest.json").read_text())["shards"]):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    err = proc.stderr.read().decode("utf-8").strip().splitlines()
    assert err == ["hf-bbpe: interrupted; the shards written so far are kept: run the same command again to resume "
                   "where it stopped (the finished folder is byte for byte the same)"], err
