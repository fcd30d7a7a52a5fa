"""The ``hf-bbpe`` command, driven as a real program in subprocesses: train, encode/decode through
pipes, inspect, and bad input (one-line errors, non-zero exit, nothing half written)."""

from __future__ import annotations

import json
import subprocess

import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.cli.main import build_parser
from hf_bbpe.cli.commands import COMMANDS
from hf_bbpe.cli.text_input import iter_documents, train_on_inputs
from tests.support.cli import CLI, MIX, TAYLOR, assert_one_line_error, cli_env, run_cli

SUBCOMMANDS = ["train", "count", "encode", "encode-corpus", "decode", "convert", "gguf", "inspect", "view", "compare", "app", "audit", "extend",
               "extend-model", "push"]


def test_every_subcommand_is_registered_and_has_help(capsys):
    """Each module in COMMANDS registers a subcommand; `hf-bbpe CMD --help` works for each."""
    parser = build_parser()
    assert len(COMMANDS) == len(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([name, "--help"])
        assert exit_info.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: hf-bbpe {name}"), out[:80]
    top = run_cli("--help").stdout.decode()
    for name in SUBCOMMANDS:
        assert name in top


def test_train_writes_the_same_tokenizer_as_the_library(mix_tok_dir):
    """`train` on a file equals RegexTokenizer.train on the same documents; the special token gets
    the first id after the vocabulary."""
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    assert (mix_tok_dir / "tokenizer.vocab").is_file()
    ref = RegexTokenizer("gpt4")
    ref.train(iter_documents([str(MIX)], "paragraph"), 512, progress=False)
    assert tok.merges == ref.merges
    assert tok.pattern == ref.pattern
    assert tok.special_tokens == {"<|endoftext|>": 512}


def test_train_from_stdin_into_an_existing_folder(tmp_path):
    """'-' reads stdin, with the same result as the library on the same documents; training into an
    existing folder replaces its tokenizer files and keeps the others."""
    ref = RegexTokenizer("gpt4")
    ref.train(iter_documents([str(TAYLOR)], "paragraph"), 300, progress=False)
    existing = tmp_path / "stdin"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    (existing / "tokenizer.model").write_text("old")
    run_cli("train", "-", "--vocab-size", 300, "--out", existing, input=TAYLOR.read_bytes())
    assert Tokenizer.from_file(existing / "tokenizer.model").merges == ref.merges
    assert len(ref.merges) == 44
    assert (existing / "keep.txt").read_text() == "mine"


def test_train_takes_each_tie_break(tmp_path):
    """--tie-break reaches the merge loop: huggingface (BpeTrainer's rule, tested against it in
    tests/engine/training/test_train.py) gives the library's merges, which are not smallest_pair's."""
    learned = {}
    for rule in ("smallest_pair", "huggingface"):
        run_cli("train", TAYLOR, "--vocab-size", 400, "--pattern", "gpt2", "--tie-break", rule, "--out", tmp_path / rule)
        learned[rule] = Tokenizer.from_file(tmp_path / rule / "tokenizer.model").merges
        ref = RegexTokenizer("gpt2")
        ref.train(iter_documents([str(TAYLOR)], "paragraph"), 400, tie_break=rule, progress=False)
        assert learned[rule] == ref.merges, rule
    assert list(learned["huggingface"].items()) != list(learned["smallest_pair"].items())


def test_train_hands_text_files_to_the_counting_threads_in_every_docs_mode():
    """Paragraphs (the default), lines and whole files: the engine gets the files themselves, which
    the C counter's threads read and cut (tests/engine/training/test_counting.py holds its paragraphs
    to hf_bbpe.paragraphs); only stdin is read in Python."""
    parser = build_parser()
    for mode in ("paragraph", "line", "file"):
        args = parser.parse_args(["train", str(TAYLOR), "--vocab-size", "300", "--out", "x", "--docs", mode])
        calls = []
        train_on_inputs(lambda text, size, **options: calls.append((text, options)), [str(TAYLOR)], args, 300)
        assert calls[0][0] is None and calls[0][1]["files"] == [str(TAYLOR)] and calls[0][1]["docs"] == mode
    assert build_parser().parse_args(["train", "f", "--vocab-size", "300", "--out", "x"]).docs == "paragraph"


def test_train_max_memory_reaches_the_counter_and_bad_sizes_are_one_line_errors(tmp_path):
    """--max-memory is the library's max_memory (tests/engine/training/test_spilled_counting.py holds the
    spilled counts to the in-memory ones): the same merges; a size that is not one, or a pattern
    the C counter does not know, is a one-line error."""
    args = build_parser().parse_args(["train", str(TAYLOR), "--vocab-size", "300", "--out", "x", "--max-memory", "2G"])
    calls = []
    train_on_inputs(lambda text, size, **options: calls.append(options), [str(TAYLOR)], args, 300)
    assert calls[0]["max_memory"] == "2G"
    run_cli("train", TAYLOR, "--vocab-size", 400, "--max-memory", "64M", "--out", tmp_path / "bounded", "--quiet")
    run_cli("train", TAYLOR, "--vocab-size", 400, "--out", tmp_path / "free", "--quiet")
    assert (tmp_path / "bounded" / "tokenizer.model").read_bytes() == (tmp_path / "free" / "tokenizer.model").read_bytes()
    assert_one_line_error(run_cli("train", TAYLOR, "--vocab-size", 300, "--max-memory", "lots", "--out", tmp_path / "o",
                                  check=False), "memory size", "'lots'")
    assert_one_line_error(run_cli("train", TAYLOR, "--vocab-size", 300, "--pattern", "none", "--max-memory", "1G",
                                  "--out", tmp_path / "o", check=False), "max_memory needs the C chunk counter")


def test_train_on_lines_jsonl_and_parquet_equals_the_library_on_files(tmp_path):
    """`--docs line` takes the documents `open(f)` gives, as the library's `train(files=...)`,
    whose threads read the files; .jsonl and .parquet files give their records' --text-column, in
    the order of the files, whatever --docs says."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(TAYLOR) as handle:
        by_line = RegexTokenizer("gpt4")
        by_line.train(handle, 300, progress=False)
    run_cli("train", TAYLOR, "--docs", "line", "--vocab-size", 300, "--out", tmp_path / "lines", "--quiet")
    assert Tokenizer.from_file(tmp_path / "lines" / "tokenizer.model").merges == by_line.merges
    docs = MIX.read_text(encoding="utf-8").split("\n\n")
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"id": k, "body": d}) + "\n" for k, d in enumerate(docs[:500])),
                                      encoding="utf-8")
    pq.write_table(pa.table({"body": docs[500:]}), tmp_path / "b.parquet")
    files = [TAYLOR, tmp_path / "a.jsonl", tmp_path / "b.parquet"]
    run_cli("train", *files, "--docs", "line", "--vocab-size", 600, "--text-column", "body", "--out",
            tmp_path / "mixed", "--quiet")
    library = RegexTokenizer("gpt4")
    library.train(files=files, vocab_size=600, text_column="body", progress=False)
    with open(TAYLOR) as handle:
        documents = list(handle) + docs
    assert Tokenizer.from_file(tmp_path / "mixed" / "tokenizer.model").merges == library.merges
    python = RegexTokenizer(r"(?:" + library.pattern + ")")  # the same chunks, counted by the regex module
    python.train(documents, 600, progress=False)
    assert python.merges == library.merges
    run_cli("train", *files[1:], "--vocab-size", 600, "--text-column", "body", "--out", tmp_path / "records", "--quiet")
    records = RegexTokenizer("gpt4")
    records.train(files=files[1:], vocab_size=600, text_column="body", progress=False)
    assert Tokenizer.from_file(tmp_path / "records" / "tokenizer.model").merges == records.merges


def test_bad_training_records_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"content": "no text field"}\n', encoding="utf-8")
    proc = run_cli("train", TAYLOR, bad, "--vocab-size", 300, "--out", tmp_path / "o", check=False)
    assert_one_line_error(proc, f"{bad}, line 2", "no field 'text'", "'content'", "--text-column")
    assert not (tmp_path / "o").exists()
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert_one_line_error(run_cli("train", empty, "--vocab-size", 300, "--out", tmp_path / "o", check=False),
                          "empty input")


def test_globs_expand_to_files(mix_tok_dir):
    """A glob names the matching files, in sorted order (`compare` reads them like `train` does)."""
    rows = json.loads(run_cli("compare", "-t", mix_tok_dir, str(TAYLOR.parent / "*.txt"), "--json").stdout)
    assert [r["file"] for r in rows] == [str(MIX), str(TAYLOR), "(total)"]


def test_train_output_loads_in_transformers(mix_tok_dir):
    """The folder is a save_pretrained folder: BBPETokenizer and AutoTokenizer give the engine's ids."""
    from transformers import AutoTokenizer

    from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    text = MIX.read_text(encoding="utf-8")[:20000]
    expected = tok.encode_ordinary(text)
    assert BBPETokenizer.from_pretrained(str(mix_tok_dir))(text)["input_ids"] == expected
    assert AutoTokenizer.from_pretrained(str(mix_tok_dir))(text)["input_ids"] == expected


def test_encode_decode_round_trip_through_pipes(mix_tok_dir):
    """`encode < file | decode` gives the file back byte for byte, and the ids are the library's."""
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    encode = subprocess.Popen(CLI + ["encode", str(mix_tok_dir)], stdin=open(MIX, "rb"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=cli_env())
    decode = subprocess.run(CLI + ["decode", str(mix_tok_dir)], stdin=encode.stdout, capture_output=True,
                            env=cli_env(), timeout=120)
    encode.stdout.close()
    assert encode.wait(timeout=120) == 0, encode.stderr.read()
    assert decode.returncode == 0, decode.stderr
    assert decode.stdout == MIX.read_bytes()

    text = MIX.read_text(encoding="utf-8")
    ids_text = run_cli("encode", mix_tok_dir, MIX).stdout.decode()
    assert ids_text.endswith("\n") and "\n" not in ids_text[:-1]
    assert [int(i) for i in ids_text.split()] == tok.encode_ordinary(text)
    ids_json = json.loads(run_cli("encode", mix_tok_dir, "--json", input=text).stdout)
    assert ids_json == tok.encode_ordinary(text)
    assert run_cli("decode", mix_tok_dir, input=json.dumps(ids_json)).stdout == MIX.read_bytes()


def test_encode_special_tokens_policy(mix_tok_dir):
    """Default: text spelling a special token is an error naming it; allow -> its id; text -> ordinary."""
    text = "one<|endoftext|>two"
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    proc = run_cli("encode", mix_tok_dir, input=text, check=False)
    assert_one_line_error(proc, "'<|endoftext|>'", "--specials allow")
    assert proc.stdout == b""
    allowed = [int(i) for i in run_cli("encode", mix_tok_dir, "--specials", "allow", input=text).stdout.split()]
    assert allowed == tok.encode_ordinary("one") + [512] + tok.encode_ordinary("two")
    plain = [int(i) for i in run_cli("encode", mix_tok_dir, "--specials", "text", input=text).stdout.split()]
    assert plain == tok.encode_ordinary(text)


def test_encode_names_the_special_token_the_engine_met(mix_tok_dir, tmp_path):
    """The error names the token the engine raised for (the first in the text), read from the
    typed error, not guessed from the text (which named the longest special token anywhere)."""
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    tok.register_special_tokens({"<|a|>": 513})
    tok.save(tmp_path / "two")
    proc = run_cli("encode", tmp_path / "two.model", "--text", "x <|a|> y <|endoftext|>", check=False)
    line = assert_one_line_error(proc, "--text contains the special token '<|a|>'", "--specials allow")
    assert "<|endoftext|>" not in line


def test_special_token_ids_far_beyond_the_vocabulary_are_refused(mix_tok_dir, tmp_path):
    proc = run_cli("convert", mix_tok_dir, "--to", "minbpe", "-o", tmp_path / "x", "--special", "<|far|>=2000000000",
                   check=False)
    assert_one_line_error(proc, "'<|far|>'", "2000000000", "allow_large_ids")
    assert not list(tmp_path.iterdir())


def test_decode_partial_utf8(mix_tok_dir):
    """Ids that stop inside a character: replaced by default, raw with --errors bytes, an error with strict."""
    ids = run_cli("encode", mix_tok_dir, "--text", "é").stdout.decode().split()
    assert len(ids) == 2  # no merge for é in this vocabulary: two byte tokens
    assert run_cli("decode", mix_tok_dir, "--ids", ids[0]).stdout == "\ufffd".encode()
    assert run_cli("decode", mix_tok_dir, "--ids", ids[0], "--errors", "bytes").stdout == b"\xc3"
    assert_one_line_error(run_cli("decode", mix_tok_dir, "--ids", ids[0], "--errors", "strict", check=False),
                          "not UTF-8")


def test_inspect(mix_tok_dir):
    """Summary facts and a merge's parents equal the tokenizer's own data."""
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    info = json.loads(run_cli("inspect", mix_tok_dir, "--json", "--top", 3).stdout)
    assert info["n_vocab"] == 513 and info["merges"] == 256 and info["pattern"] == "gpt4"
    assert info["special_tokens"] == [{"token": "<|endoftext|>", "id": 512}]
    longest = sorted((i for i in tok.vocab if i != 512), key=lambda i: (-len(tok.vocab[i]), i))[:3]
    assert [t["id"] for t in info["longest_tokens"]] == longest
    (pair, new), = [(p, n) for p, n in tok.merges.items() if n == 300]
    token = json.loads(run_cli("inspect", mix_tok_dir, "--token", 300, "--json").stdout)
    assert token["kind"] == "merge" and token["merge_rank"] == 300 - 256 and token["reachable"]
    assert [p["id"] for p in token["tree"]["parents"]] == list(pair)
    by_text = json.loads(run_cli("inspect", mix_tok_dir, "--token", tok.vocab[300].decode(), "--json").stdout)
    assert by_text["id"] == 300
    text = run_cli("inspect", mix_tok_dir).stdout.decode()
    assert "n_vocab: 513" in text and "'<|endoftext|>'" in text


# ------------------------------------------------------------------ bad input


def test_missing_files(tmp_path, mix_tok_dir):
    assert_one_line_error(run_cli("train", tmp_path / "nope.txt", "--vocab-size", 300, "--out", tmp_path / "o",
                                  check=False), "nope.txt", "no such file")
    assert not (tmp_path / "o").exists()
    assert_one_line_error(run_cli("train", str(tmp_path / "*.txt"), "--vocab-size", 300, "--out", tmp_path / "o",
                                  check=False), "no file matches")
    assert_one_line_error(run_cli("encode", tmp_path / "missing.model", input="x", check=False),
                          "missing.model", "no such file")
    assert_one_line_error(run_cli("encode", mix_tok_dir, tmp_path / "in.txt", check=False), "in.txt", "no such file")
    assert_one_line_error(run_cli("inspect", tmp_path, check=False), "no tokenizer files")


def test_bad_tokenizer_file_names_the_line(tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_text("minbpe v1\n\n0\n97 98\n97 999\n")
    assert_one_line_error(run_cli("encode", bad, input="ab", check=False), "bad.model:5", "999")
    assert_one_line_error(run_cli("inspect", tmp_path / "strange.xyz", check=False), "no such file")
    (tmp_path / "strange.xyz").write_text("?")
    assert_one_line_error(run_cli("inspect", tmp_path / "strange.xyz", check=False), "cannot tell the tokenizer format")


def test_bad_ids(mix_tok_dir):
    assert_one_line_error(run_cli("decode", mix_tok_dir, input="1 2 x3 4", check=False), "item 3", "'x3'")
    assert_one_line_error(run_cli("decode", mix_tok_dir, input="1 -2", check=False), "item 2")
    assert_one_line_error(run_cli("decode", mix_tok_dir, input="1 99999", check=False), "99999")
    assert_one_line_error(run_cli("decode", mix_tok_dir, input="[1, 2", check=False), "not a JSON list")
    assert_one_line_error(run_cli("decode", mix_tok_dir, input='[1, "a"]', check=False), "item 2")
    assert_one_line_error(run_cli("inspect", mix_tok_dir, "--token", "99999", check=False), "99999")


def test_bad_text_input(tmp_path, mix_tok_dir):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    assert_one_line_error(run_cli("encode", mix_tok_dir, bad, check=False), "latin1.txt", "not UTF-8", "byte 6")
    assert_one_line_error(run_cli("train", bad, "--vocab-size", 300, "--out", tmp_path / "o", check=False),
                          "latin1.txt", "line 2", "byte 6")
    assert not (tmp_path / "o").exists()
    assert not list(tmp_path.glob(".o.*"))  # the staging folder is gone too


def test_bad_arguments(tmp_path):
    assert_one_line_error(run_cli("train", MIX, "--vocab-size", 100, "--out", tmp_path / "o", check=False),
                          "at least 256")
    assert_one_line_error(run_cli("train", MIX, "--vocab-size", 300, "--pattern", "(", "--out", tmp_path / "o",
                                  check=False), "invalid split pattern")
    for args in (["frobnicate"], ["train", MIX], ["encode"], ["decode", "x", "--errors", "maybe"],
                 ["audit", "x", "y", "--rare", "-1"]):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 2, args
        err = proc.stderr.decode()
        assert err.startswith("hf-bbpe") and "error:" in err and "--help" in err, err
        assert len(err.strip().splitlines()) == 1, err
