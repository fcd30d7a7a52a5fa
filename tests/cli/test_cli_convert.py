"""`hf-bbpe convert` and loading tokenizers named on the command line, as real programs: round trips are
byte-identical, converted files give the engine's ids in tiktoken and tokenizers, bad files are
one-line FormatErrors and leave nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_bbpe import Tokenizer
from tests.support.cli import GPT2_DIR, MIX, assert_one_line_error, run_cli



def cl100k_path() -> Path:
    import tiktoken_ext

    return Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"


def test_minbpe_to_gpt2_files_and_back_is_byte_identical(mix_tok_dir, tmp_path):
    run_cli("convert", mix_tok_dir / "tokenizer.model", "--from", "minbpe", "--to", "gpt2", "-o", tmp_path / "g2")
    assert {p.name for p in (tmp_path / "g2").iterdir()} == {"encoder.json", "vocab.bpe"}
    run_cli("convert", tmp_path / "g2", "--from", "gpt2", "--pattern", "gpt4", "--to", "minbpe", "-o", tmp_path / "back")
    assert (tmp_path / "back.model").read_bytes() == (mix_tok_dir / "tokenizer.model").read_bytes()


def test_reference_files_round_trip_byte_identical(tmp_path):
    """Presets read OpenAI's files and write them back unchanged (cl100k's permuted bytes, holes, specials)."""
    run_cli("convert", "--from", "preset", "cl100k_base", cl100k_path(), "--to", "tiktoken", "-o", tmp_path / "cl.tiktoken")
    assert (tmp_path / "cl.tiktoken").read_bytes() == cl100k_path().read_bytes()
    run_cli("convert", f"gpt2:{GPT2_DIR}", "--to", "gpt2", "-o", tmp_path / "gpt2")
    for name in ("encoder.json", "vocab.bpe"):
        assert (tmp_path / "gpt2" / name).read_bytes() == (GPT2_DIR / name).read_bytes()


def test_converted_files_encode_like_the_engine(mix_tok_dir, tmp_path):
    """tiktoken built from the .tiktoken output, and tokenizers from the tokenizer.json output, give the
    engine's ids on real multilingual text and code."""
    import tiktoken
    import tiktoken.load
    import tokenizers

    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    text = MIX.read_text(encoding="utf-8")
    expected = tok.encode_ordinary(text)
    run_cli("convert", mix_tok_dir, "--to", "tiktoken", "-o", tmp_path / "t.tiktoken")
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, special_tokens=tok.special_tokens,
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(tmp_path / "t.tiktoken")))
    assert enc.encode_ordinary(text) == expected
    run_cli("convert", mix_tok_dir, "--to", "hf", "-o", tmp_path / "tokenizer.json")
    fast = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert fast.encode(text, add_special_tokens=False).ids == expected
    # and the tokenizer.json reads back, through the loader, into the same tokenizer
    ids = run_cli("encode", tmp_path / "tokenizer.json", MIX).stdout.split()
    assert [int(i) for i in ids] == expected


def test_tokenizer_specs_load_the_reference_encodings(tmp_path):
    """A preset-named .tiktoken file, a GPT-2 folder and encoder.json all give tiktoken's ids."""
    import tiktoken
    import tiktoken.load

    from hf_bbpe.engine.chunking.patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN

    text = "Hello world! 你好 <|endoftext|> naïve\n\tdef f(x): return x ** 2\n"
    cl = tiktoken.Encoding("cl100k", pat_str=GPT4_SPLIT_PATTERN, special_tokens={"<|endoftext|>": 100257},
                           mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(cl100k_path())))
    gpt2 = tiktoken.Encoding("gpt2", pat_str=GPT2_SPLIT_PATTERN, special_tokens={"<|endoftext|>": 50256},
                             mergeable_ranks=tiktoken.load.data_gym_to_mergeable_bpe_ranks(
                                 str(GPT2_DIR / "vocab.bpe"), str(GPT2_DIR / "encoder.json")))
    # (PRESET:PATH is used by the round-trip test above and by test_compare.py)
    cases = [(cl100k_path(), cl), (GPT2_DIR, gpt2), (GPT2_DIR / "encoder.json", gpt2)]
    for spec, ref in cases:
        ids = run_cli("encode", spec, "--specials", "allow", "--text", text).stdout.split()
        assert [int(i) for i in ids] == ref.encode(text, allowed_special="all"), spec


def test_bad_files_are_format_errors_and_write_nothing(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"IQ== 0\nnot*base64 1\n")
    out = tmp_path / "out.model"
    line = assert_one_line_error(run_cli("convert", bad, "--from", "tiktoken", "--to", "minbpe", "-o", out,
                                         check=False), "bad.tiktoken")
    assert ":2" in line or "line 2" in line
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]
    truncated = tmp_path / "tokenizer.json"
    truncated.write_text('{"model": {"type": "BPE", "vocab": {')
    assert_one_line_error(run_cli("convert", truncated, "--to", "tiktoken", "-o", tmp_path / "x.tiktoken",
                                  check=False), "tokenizer.json")
    assert not (tmp_path / "x.tiktoken").exists()
    assert_one_line_error(run_cli("convert", f"o200k_base:{tmp_path / 'none.tiktoken'}", "--to", "minbpe", "-o",
                                  tmp_path / "y", check=False), "none.tiktoken", "no such file")
    assert_one_line_error(run_cli("convert", "--from", "preset", "nosuch", bad, "--to", "minbpe", "-o", tmp_path / "z",
                                  check=False), "nosuch")


def test_unrepresentable_merges_need_force_for_tiktoken(tmp_path):
    """Merges bc, ab, (ab)c: rank-based BPE would encode 'abc' as one token, merges as a + bc."""
    a, b, c = b"abc"
    Tokenizer.from_merges({(b, c): 256, (a, b): 257, (257, c): 258}, pattern="gpt4").save(tmp_path / "odd")
    out = tmp_path / "odd.tiktoken"
    assert_one_line_error(run_cli("convert", tmp_path / "odd.model", "--to", "tiktoken", "-o", out, check=False),
                          "258")
    assert not out.exists()
    proc = run_cli("convert", tmp_path / "odd.model", "--to", "tiktoken", "-o", out, "--force")
    assert out.exists() and b"258" in proc.stderr  # the warning names the token


def test_convert_to_a_save_pretrained_folder(mix_tok_dir, tmp_path):
    """--to hf with a folder name writes the save_pretrained files; without tokenizer.model the loader
    reads the folder through BBPETokenizer, with the same ids."""
    from transformers import AutoTokenizer

    out = tmp_path / "hf"
    run_cli("convert", mix_tok_dir / "tokenizer.model", "--to", "hf", "-o", out)
    names = {p.name for p in out.iterdir()}
    assert {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model"} <= names
    tok = Tokenizer.from_file(mix_tok_dir / "tokenizer.model")
    text = MIX.read_text(encoding="utf-8")[:20000]
    assert AutoTokenizer.from_pretrained(str(out))(text)["input_ids"] == tok.encode_ordinary(text)
    (out / "tokenizer.model").unlink()
    from hf_bbpe.cli.tokenizer_spec import load_tokenizer

    loaded = load_tokenizer(str(out)).tokenizer
    assert loaded.merges == tok.merges and loaded.special_tokens == tok.special_tokens


def test_meta_and_mistral_files_are_recognised_by_content(tmp_path):
    """Meta's rank file named tokenizer.model and Mistral's tekken.json convert with --from auto
    (a known file gets its preset) and encode like llama_models and Tekkenizer."""
    from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from tokenizers import Tokenizer as HFTokenizer

    from tests.support.families import LLAMA3_MODEL, TEKKEN_FILES, mix_documents

    docs = mix_documents()[::10] + ["Tôi làm việc x.:.:y"]
    run_cli("convert", LLAMA3_MODEL, "--to", "hf", "-o", tmp_path / "llama3.json")
    hf = HFTokenizer.from_file(str(tmp_path / "llama3.json"))
    reference = Llama3Reference(LLAMA3_MODEL)
    assert [hf.encode(d, add_special_tokens=False).ids for d in docs] == \
        [reference.encode(d, bos=False, eos=False) for d in docs]
    text = "<|begin_of_text|>Tôi làm việc x.:.:y<|eot_id|>"
    ids = run_cli("encode", LLAMA3_MODEL, "--specials", "allow", "--text", text).stdout.split()
    assert [int(i) for i in ids] == reference.encode(text, bos=False, eos=False, allowed_special="all")
    tekken = TEKKEN_FILES["tekken_240911"]
    ids = run_cli("encode", tekken, "--text", docs[3]).stdout.split()
    assert [int(i) for i in ids] == Tekkenizer.from_file(tekken).encode(docs[3], bos=False, eos=False)


def test_lossy_and_unverified_imports_name_their_flags(tmp_path):
    import json

    from tests.support.families import LLAMA3_MODEL

    from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict

    from hf_bbpe import RegexTokenizer

    tok = RegexTokenizer("gpt4")
    tok.train(MIX.read_text(encoding="utf-8")[:20000], 300, progress=False)
    data = tokenizer_json_dict(tok)
    data["normalizer"] = {"type": "Lowercase"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    line = assert_one_line_error(run_cli("inspect", tmp_path / "tokenizer.json", check=False),
                                 "normalizer", "--no-strict")
    assert "strict=False" not in line
    line = assert_one_line_error(run_cli("convert", tmp_path / "tokenizer.json", "--to", "minbpe", "-o",
                                         tmp_path / "m", check=False), "--no-strict")
    done = run_cli("convert", tmp_path / "tokenizer.json", "--no-strict", "--to", "minbpe", "-o", tmp_path / "m")
    assert "warning" in done.stderr.decode() and (tmp_path / "m.model").exists()
    edited = tmp_path / "ranks.bin"  # Llama 3's ranks, one line spaced differently: same ranks, other sha256
    edited.write_bytes(LLAMA3_MODEL.read_bytes().replace(b"IQ== 0\n", b"IQ==  0\n", 1))
    line = assert_one_line_error(run_cli("inspect", f"llama3:{edited}", check=False), "sha256", "--no-check-hash")
    assert "check_hash=False" not in line
    assert run_cli("inspect", f"llama3:{edited}", "--no-check-hash").returncode == 0
    assert_one_line_error(run_cli("inspect", tmp_path / "ranks.bin", check=False), "no split pattern", "--pattern")
    assert run_cli("inspect", tmp_path / "ranks.bin", "--pattern", "llama3").returncode == 0


def test_llama3_to_gpt2_files_is_refused_naming_the_token(tmp_path):
    """GPT-2 files cannot say Llama 3's whole-piece rule: one line naming the token and the formats that can."""
    from tests.support.families import LLAMA3_MODEL

    proc = run_cli("convert", LLAMA3_MODEL, "--to", "gpt2", "-o", tmp_path / "g2", check=False)
    assert_one_line_error(proc, "GPT-2 encoder.json/vocab.bpe", "b'.:.:' (id 100421)", "ignore_merges: true")
    assert not (tmp_path / "g2").exists()


def test_gpt2_file_pair_is_detected_in_either_order(tmp_path):
    """`convert encoder.json vocab.bpe` (the pair the help lists) and the other order, with --from auto or
    --from gpt2, write GPT-2's ranks as tiktoken reads them from the same two files."""
    import tiktoken.load

    import conversion

    encoder, merges = GPT2_DIR / "encoder.json", GPT2_DIR / "vocab.bpe"
    ranks = tiktoken.load.data_gym_to_mergeable_bpe_ranks(str(merges), str(encoder))
    for i, args in enumerate([(encoder, merges), (merges, encoder), ("--from", "gpt2", merges, encoder)]):
        out = tmp_path / f"{i}.tiktoken"
        run_cli("convert", *args, "--to", "tiktoken", "-o", out)
        assert tiktoken.load.load_tiktoken_bpe(str(out)) == ranks, args
    assert conversion.load((merges, encoder)).mergeable_ranks() == ranks
    assert conversion.detect_format((merges, encoder)) == "gpt2"
    assert_one_line_error(run_cli("convert", merges, merges, "--to", "tiktoken", "-o", tmp_path / "x.tiktoken",
                                  check=False), "token -> id map", "vocab.bpe is a BPE merges file")
    assert not (tmp_path / "x.tiktoken").exists()


@pytest.mark.slow
@pytest.mark.transformers_compat
def test_converted_llama3_folder_adds_bos_as_llama_models(mix_tok_dir, tmp_path):
    """`convert tokenizer.model --to hf` (Meta's Llama 3 rank file): the saved folder, through
    AutoTokenizer's fast twin (BBPETokenizer: tests/hf/test_families_hf.py), gives llama_models' ids with bos=True ("Hi" ->
    [128000, 13347]) and names Meta's bos/eos; --no-add-bos turns the BOS off, --add-bos on a
    tokenizer without a BOS token is refused before anything is written."""
    import json

    from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
    from transformers import AutoTokenizer

    from tests.support.families import LLAMA3_MODEL, mix_documents

    reference = Llama3Reference(LLAMA3_MODEL)
    docs = mix_documents()[::20]
    out = tmp_path / "llama3"
    run_cli("convert", LLAMA3_MODEL, "--to", "hf", "-o", out)
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["bos_token"], config["eos_token"], config["add_bos_token"]) == \
        ("<|begin_of_text|>", "<|end_of_text|>", True)
    assert reference.encode("Hi", bos=True, eos=False) == [128000, 13347]
    fast = AutoTokenizer.from_pretrained(str(out))
    assert fast("Hi")["input_ids"] == [128000, 13347]
    assert [fast(d)["input_ids"] for d in docs] == [reference.encode(d, bos=True, eos=False) for d in docs]
    run_cli("convert", LLAMA3_MODEL, "--to", "hf", "--no-add-bos", "-o", tmp_path / "plain")
    assert AutoTokenizer.from_pretrained(str(tmp_path / "plain"))("Hi")["input_ids"] == [13347]
    assert_one_line_error(run_cli("convert", mix_tok_dir, "--to", "hf", "--add-bos", "-o", tmp_path / "g",
                                  check=False), "--add-bos", "--bos-token")
    assert not (tmp_path / "g").exists()
