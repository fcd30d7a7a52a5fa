"""`hf-bbpe compare`: token counts and ratios for tokenizers x files, as table, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from hf_bbpe import RegexTokenizer, Tokenizer
from hf_bbpe.analysis.compare import compare_tokenizers
from tests.support.cli import MIX, TAYLOR, run_cli, save_model_file

RECORDS = [{"name": f"item {i}", "tags": ["a", "b"], "price": i * 1.5, "nested": {"ok": i % 2 == 0}}
           for i in range(40)]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[Path]:
    """The same records as JSON and as a YAML-like listing, plus a file spelling a special token."""
    tmp = tmp_path_factory.mktemp("compare")
    (tmp / "data.json").write_text(json.dumps(RECORDS, indent=2), encoding="utf-8")
    yaml = "".join(f"- name: {r['name']}\n  tags: [a, b]\n  price: {r['price']}\n  nested:\n    ok: "
                   f"{str(r['nested']['ok']).lower()}\n" for r in RECORDS)
    (tmp / "data.yaml").write_text(yaml, encoding="utf-8")
    (tmp / "special.txt").write_text("one <|endoftext|> two\n", encoding="utf-8")
    return [tmp / "data.json", tmp / "data.yaml", tmp / "special.txt"]


@pytest.fixture(scope="module")
def taylor_model(tmp_path_factory) -> Path:
    tok = RegexTokenizer("gpt2")
    tok.train(TAYLOR.read_text(encoding="utf-8"), 400, progress=False)
    return save_model_file(tok, tmp_path_factory.mktemp("compare-tok"), "taylor")


def test_json_rows_equal_the_library_counts(mix_tok_dir, taylor_model, files):
    rows = json.loads(run_cli("compare", "-t", mix_tok_dir, "-t", taylor_model, *files, MIX, "--json").stdout)
    toks = [("mix512", Tokenizer.from_file(mix_tok_dir / "tokenizer.model")), ("taylor", Tokenizer.from_file(taylor_model))]
    paths = [*files, MIX]
    assert len(rows) == len(toks) * (len(paths) + 1)
    for row in rows[: len(toks) * len(paths)]:
        path = next(p for p in paths if str(p) == row["file"])
        tok = dict(toks)[row["tokenizer"]]
        text = path.read_text(encoding="utf-8")
        assert row["tokens"] == len(tok.encode_ordinary(text))  # special-token text counts as plain text
        assert row["bytes"] == path.stat().st_size and row["chars"] == len(text)
        assert row["bytes_per_token"] == round(row["bytes"] / row["tokens"], 4)
        assert row["chars_per_token"] == round(row["chars"] / row["tokens"], 4)
    totals = rows[len(toks) * len(paths):]
    for total in totals:
        assert total["file"] == "(total)"
        assert total["tokens"] == sum(r["tokens"] for r in rows[:-len(toks)] if r["tokenizer"] == total["tokenizer"])
    first, second = totals
    assert second["tokens_vs_first"] == round(second["tokens"] / first["tokens"], 4)
    # the seed's observation, measured: the same records cost more tokens as JSON than as YAML
    by = {(Path(r["file"]).name, r["tokenizer"]): r["tokens"] for r in rows}
    assert by[("data.json", "mix512")] > by[("data.yaml", "mix512")]


def test_csv_and_table_carry_the_same_numbers(mix_tok_dir, files):
    as_json = json.loads(run_cli("compare", "-t", mix_tok_dir, *files, "--json").stdout)
    as_csv = list(csv.DictReader(io.StringIO(run_cli("compare", "-t", mix_tok_dir, *files, "--csv").stdout.decode())))
    assert [int(r["tokens"]) for r in as_csv] == [r["tokens"] for r in as_json]
    assert [float(r["chars_per_token"]) for r in as_csv] == [r["chars_per_token"] for r in as_json]
    table = run_cli("compare", "-t", mix_tok_dir, *files).stdout.decode().splitlines()
    assert table[0].split()[:3] == ["file", "tokenizer", "tokens"]
    assert len(table) == 2 + len(as_json)
    assert table[2].split()[2] == str(as_json[0]["tokens"])


def test_specials_flag_counts_special_tokens_as_one(mix_tok_dir, files):
    special = files[2]
    plain, = json.loads(run_cli("compare", "-t", mix_tok_dir, special, "--json").stdout)
    allowed, = json.loads(run_cli("compare", "-t", mix_tok_dir, special, "--json", "--specials").stdout)
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    assert plain["tokens"] - allowed["tokens"] == len(tok.encode_ordinary("<|endoftext|>")) - 1


def test_allow_specials_is_the_name_of_the_flag(mix_tok_dir, files):
    """compare's switch has its own name (elsewhere --specials takes raise/allow/text); the old
    spelling still works, hidden from --help."""
    special = files[2]
    old, = json.loads(run_cli("compare", "-t", mix_tok_dir, special, "--json", "--specials").stdout)
    new, = json.loads(run_cli("compare", "-t", mix_tok_dir, special, "--json", "--allow-specials").stdout)
    assert new == old
    shown = run_cli("compare", "--help").stdout.decode()
    assert "--allow-specials" in shown and "--specials" not in shown


def test_library_function_without_files():
    tok = RegexTokenizer()
    rows = compare_tokenizers([("bytes", tok)], [("empty", ""), ("x", "héllo")])
    assert [(r.file, r.tokens, r.bytes, r.chars) for r in rows] == [("empty", 0, 0, 0), ("x", 6, 6, 5),
                                                                   ("(total)", 6, 6, 5)]
    assert rows[0].bytes_per_token == 0.0 and rows[0].tokens_vs_first == 0.0


def test_presets_equal_tiktoken(tmp_path):
    """GPT-2 and cl100k loaded from local files by preset name count exactly what tiktoken counts."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext
    from tiktoken_ext import openai_public  # noqa: F401

    from hf_bbpe.engine.chunking.patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN

    cl100k = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    gpt2 = Path(__file__).resolve().parents[1] / "data" / "gpt2"
    rows = json.loads(run_cli("compare", "-t", f"cl100k_base:{cl100k}", "-t", gpt2, MIX, TAYLOR, "--json").stdout)
    refs = {
        "cl100k_base": tiktoken.Encoding("cl100k", pat_str=GPT4_SPLIT_PATTERN,
                                         mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(cl100k)),
                                         special_tokens={}),
        "gpt2": tiktoken.Encoding("gpt2", pat_str=GPT2_SPLIT_PATTERN, special_tokens={},
                                  mergeable_ranks=tiktoken.load.data_gym_to_mergeable_bpe_ranks(
                                      str(gpt2 / "vocab.bpe"), str(gpt2 / "encoder.json"))),
    }
    for row in rows:
        if row["file"] == "(total)":
            continue
        text = Path(row["file"]).read_text(encoding="utf-8")
        assert row["tokens"] == len(refs[row["tokenizer"]].encode_ordinary(text)), row
