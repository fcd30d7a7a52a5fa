"""GGUF for llama.cpp (issue 29, point 1), tested with the real clients: the ``gguf`` package reads
the vocabulary file back, llama.cpp's own tokenizer (built from source, tests/support/llama_cpp.py)
gives our ids on real text, and llama.cpp's own converter converts a model with our tokenizer.

The hash llama.cpp's converter identifies a tokenizer by is computed as it does; for the families we
load unchanged it is the one llama.cpp's table lists, with the name we give (CONVERTER_HASHES).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import gguf
import pytest

import conversion
from conversion import FormatError
from conversion.gguf_vocab import CHKTXT, GPT4_NOTE
from hf_bbpe import BBPETokenizer, RegexTokenizer
from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from tests.support.cli import TAYLOR, run_cli
from tests.support.families import LLAMA3_MODEL, TEXT_DIR
from tests.support.llama_cpp import CONVERTER_HASHES, comparison_docs, converter_hash_table, llama_cpp_ids, \
    llama_cpp_special, tokenizer_fields

DOCS = comparison_docs()
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


def field(reader: gguf.GGUFReader, key: str):
    return reader.fields[key].contents()


def hf_ids(folder: Path, docs: list[str]) -> list[list[int]]:
    tok = BBPETokenizer.from_pretrained(str(folder))
    return [tok(doc)["input_ids"] for doc in docs]


def save(tok, folder: Path, **kwargs) -> Path:
    hf = BBPETokenizer.from_engine(tok, **kwargs)
    hf.chat_template = TEMPLATE
    hf.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[RegexTokenizer, Path]:
    """A tokenizer trained with GPT-4's pattern (plain merges), saved with an EOS and a chat template."""
    tok = RegexTokenizer(pattern="gpt4")
    tok.train(TAYLOR.read_text(encoding="utf-8"), 1500, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 1500})
    return tok, save(tok, tmp_path_factory.mktemp("trained") / "tok", eos_token="<|endoftext|>")


@pytest.fixture(scope="session")
def extended_llama3(tmp_path_factory) -> Path:
    """Llama 3 (llama-models' tokenizer.model) extended by ``hf-bbpe extend`` with 300 merges learnt
    on the multilingual sample and on a domain text where the pieces of llama.cpp's test text are
    frequent (so that, as in the issue, new merges touch that text: the sample alone does not),
    with Llama 3's BOS added to every sequence as the preset's roles say (nothing set here).
    Built once per run, under a lock in the folder xdist's workers share (an ``xdist_group``
    would not keep its tests on one worker: pytest 9 ignores the group suffix xdist 3.8 writes)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "gguf-extended-llama3"
    with open(shared / "gguf-extended-llama3.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_dir():
            tmp = Path(tempfile.mkdtemp(dir=shared))
            domain = tmp / "domain.txt"
            domain.write_text("\n\n".join([CHKTXT] * 40), encoding="utf-8")
            run_cli("extend", f"llama3:{LLAMA3_MODEL}", TEXT_DIR / "mix-sample.txt", domain, "--new-merges", 300,
                    "--out", tmp / "ext", "--no-progress", "--quiet", timeout=1800)
            (tmp / "ext").rename(out)
    return out


def test_vocab_gguf_reads_back(trained, tmp_path):
    """What the gguf package reads back is the tokenizer: tokens in GPT-2's byte alphabet by id,
    token types, merges in order, the EOS id (also the BOS: the folder has none), the chat template, and llama.cpp's name for a
    GPT-4-pattern tokenizer with plain merges (dbrx, cl100k's name there)."""
    tok, folder = trained
    path = tmp_path / "vocab.gguf"
    vocab = conversion.write_gguf_vocab(folder, path)
    reader = gguf.GGUFReader(path)
    assert field(reader, "general.architecture") == "llama"
    assert field(reader, "tokenizer.ggml.model") == "gpt2"
    assert field(reader, "tokenizer.ggml.pre") == vocab.pre == "dbrx"
    assert field(reader, "tokenizer.ggml.tokens") == [token_to_unicode(tok.vocab[i]) for i in range(1500)] + [
        "<|endoftext|>"]
    assert field(reader, "tokenizer.ggml.token_type") == [gguf.TokenType.NORMAL] * 1500 + [gguf.TokenType.CONTROL]
    spelled = {i: token_to_unicode(data) for i, data in tok.vocab.items()}
    assert field(reader, "tokenizer.ggml.merges") == [f"{spelled[a]} {spelled[b]}" for a, b in tok.merges]
    assert field(reader, "tokenizer.ggml.eos_token_id") == 1500
    assert field(reader, "tokenizer.ggml.bos_token_id") == 1500  # no BOS: the EOS (test_a_folder_without_bos...)
    assert field(reader, "tokenizer.ggml.add_bos_token") is False
    assert field(reader, "tokenizer.chat_template") == TEMPLATE
    assert vocab.notes == []  # no token spans the cut llama.cpp's split of GPT-4's pattern makes (below)


def test_pattern_without_llama_cpp_name_is_refused(tmp_path):
    """A pattern llama.cpp has no pre-tokenizer for: one line that says so, and no file."""
    tok = RegexTokenizer(pattern=r"\w+|[^\w\s]+|\s+")
    tok.train(TAYLOR.read_text(encoding="utf-8")[:20000], 300, progress=False)
    folder = save(tok, tmp_path / "tok")
    with pytest.raises(FormatError, match="llama.cpp has no pre-tokenizer for the split pattern") as info:
        conversion.write_gguf_vocab(folder, tmp_path / "x.gguf")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "x.gguf").exists()


@pytest.fixture(scope="module")
def superbpe_folders(tmp_path_factory) -> dict[str, Path]:
    """Tokenizers trained with SuperBPE's stage-1 pattern: plain BPE, and SuperBPE (superwords:
    the stage-2 pipeline), saved with an EOS."""
    text = (TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8")
    folders = {}
    for name, superwords in (("stage1", None), ("superwords", True)):
        tok = RegexTokenizer(pattern="superbpe_stage1")
        tok.train(text, 900, progress=False, superwords=superwords)
        tok.register_special_tokens({"<|endoftext|>": 900})
        folders[name] = save(tok, tmp_path_factory.mktemp("superbpe") / name, eos_token="<|endoftext|>")
    return folders


@pytest.mark.parametrize(("kind", "said"), [
    ("stage1", "no pre-tokenizer for the superbpe_stage1 pattern: it is o200k's without contractions"),
    ("superwords", "no pre-tokenizer for SuperBPE's stage-2 split (superwords): llama.cpp's 'superbpe'")])
def test_superbpe_is_refused_saying_why(superbpe_folders, kind, said, tmp_path):
    """A tokenizer trained with ``--pattern superbpe_stage1`` (issue 36: a bare KeyError) and a
    SuperBPE one: one line that says why llama.cpp cannot split as they do, and no file."""
    with pytest.raises(FormatError, match=re.escape(said)) as info:
        conversion.write_gguf_vocab(superbpe_folders[kind], tmp_path / "x.gguf")
    assert "\n" not in str(info.value) and "'superbpe' pre-tokenizer" in str(info.value)
    assert not (tmp_path / "x.gguf").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stage1", "superwords"])
def test_llama_cpp_superbpe_pre_tokenizer_gives_other_ids(superbpe_folders, kind, llama_cpp, tmp_path, monkeypatch):
    """Why SuperBPE is refused: llama.cpp's own 'superbpe' pre-tokenizer (llama.cpp PR #12532),
    forced into the GGUF, gives other ids than ours on the sample, for both kinds."""
    monkeypatch.setattr("conversion.gguf_vocab.llama_cpp_pre_tokenizer", lambda tok, source: ("superbpe", []))
    folder = superbpe_folders[kind]
    assert conversion.write_gguf_vocab(folder, tmp_path / "vocab.gguf").pre == "superbpe"
    theirs, ours = llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", DOCS, tmp_path), hf_ids(folder, DOCS)
    assert sum(a != b for a, b in zip(theirs, ours)) > len(DOCS) // 2


def test_mode_llama_cpp_would_not_follow_is_refused():
    """GPT-2's pre-tokenizer in llama.cpp runs plain BPE: an ``ignore_merges`` tokenizer whose
    merges do not rebuild one of its tokens would encode differently there, so it is refused,
    naming the token; a tokenizer whose merges rebuild every token is accepted in either mode."""
    tok = RegexTokenizer(pattern="gpt2")
    tok.merges = {(ord("a"), ord("b")): 256, (ord("b"), ord("c")): 257, (ord("a"), 257): 258}  # "abc" <- a + bc
    assert conversion.llama_cpp_pre_tokenizer(tok)[0] == "gpt-2"
    tok.mode = "ignore_merges"
    with pytest.raises(FormatError, match=r"'gpt-2'.*runs plain BPE.*b'abc' \(id 258\)"):
        conversion.llama_cpp_pre_tokenizer(tok)
    tok.merges = {(ord("a"), ord("b")): 256, (256, ord("c")): 257}
    assert conversion.llama_cpp_pre_tokenizer(tok)[0] == "gpt-2"


def test_gpt2_hash_is_the_one_llama_cpp_lists(tmp_path):
    """GPT-2's files, saved by us, hash as llama.cpp's table lists openai-community/gpt2, and get
    the same name from their pattern."""
    tok = conversion.load_preset("gpt2", Path(__file__).resolve().parents[1] / "data" / "gpt2")
    folder = save(tok, tmp_path / "gpt2", eos_token="<|endoftext|>")
    assert conversion.pre_tokenizer_hash(folder) == CONVERTER_HASHES["gpt-2"]
    assert conversion.llama_cpp_pre_tokenizer(tok)[0] == "gpt-2"


@pytest.mark.slow
def test_llama3_hash_is_the_one_llama_cpp_lists_and_extension_changes_it(extended_llama3, tmp_path):
    """Llama 3 saved as it loads (the preset's BOS and add-BOS rule) hashes as llama.cpp lists
    Meta-Llama-3-8B (without the BOS it would be another family's hash: smaug-bpe's); extended, its
    new merges change the test text's ids, so llama.cpp's converter cannot know it: the name comes
    from the pattern (llama-bpe, Llama 3's ranks mode)."""
    base = conversion.load_preset("llama3", LLAMA3_MODEL)
    folder = save(base, tmp_path / "llama3")
    assert conversion.pre_tokenizer_hash(folder) == CONVERTER_HASHES["llama-bpe"]
    assert conversion.llama_cpp_pre_tokenizer(base)[0] == "llama-bpe"
    vocab = conversion.gguf_vocab_of(extended_llama3)
    assert vocab.chkhsh not in CONVERTER_HASHES.values()
    assert vocab.pre == "llama-bpe" and vocab.add_bos and vocab.special_ids["bos"] == 128000


@pytest.mark.slow
def test_llama_cpp_tokenizes_a_trained_tokenizer_as_we_do(trained, llama_cpp, tmp_path):
    """llama.cpp's tokenizer (its dbrx pre-tokenizer and BPE) on our GGUF gives our ids, whole
    sequences, on every document of the multilingual + code sample."""
    _, folder = trained
    conversion.write_gguf_vocab(folder, tmp_path / "vocab.gguf")
    assert llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", DOCS, tmp_path) == hf_ids(folder, DOCS)


@pytest.mark.slow
def test_a_folder_without_bos_gets_its_eos_as_bos_in_llama_cpp(trained, llama_cpp, tmp_path):
    """Issue 36: a folder with no BOS was read by llama.cpp with BOS id 11 (an ordinary token here,
    its default for BPE vocabularies: it has no "no BOS"). Its EOS is the BOS, as GPT-2's and
    OpenAI's folders say; no BOS is added; a folder without an EOS either keeps llama.cpp's default
    and gets the note that says so."""
    _, folder = trained
    conversion.write_gguf_vocab(folder, tmp_path / "vocab.gguf")
    special = llama_cpp_special(llama_cpp, tmp_path / "vocab.gguf")
    assert (special["bos"], special["eos"], special["add_bos"]) == (1500, 1500, 0)
    assert llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", DOCS[:50], tmp_path) == hf_ids(folder, DOCS[:50])
    tok = RegexTokenizer(pattern="gpt4")
    tok.train(TAYLOR.read_text(encoding="utf-8")[:20000], 300, progress=False)
    bare = conversion.write_gguf_vocab(save(tok, tmp_path / "bare"), tmp_path / "bare.gguf")
    assert bare.special_ids == {} and any("takes id 11 as BOS and EOS" in note for note in bare.notes)
    assert llama_cpp_special(llama_cpp, tmp_path / "bare.gguf")["bos"] == 11


@pytest.mark.slow
def test_gpt4_note_is_said_where_llama_cpp_differs(llama_cpp, tmp_path):
    """llama.cpp splits GPT-4's pattern as Llama 3's, which cuts a text's trailing white space after
    its last line break where GPT-4's keeps it whole. A tokenizer that learnt a token across that
    cut (from code ending in an indent) gets the note, and llama.cpp's ids differ from ours exactly
    on the texts ending so; one without such a token gets no note (``trained`` above; cl100k,
    whose ids llama.cpp gives on such texts too: tests/conversion/test_gguf_owners.py)."""
    tok = RegexTokenizer(pattern="gpt4")
    tok.train(["    return x\n    ", "y = x\n\n    "] * 100 + [TAYLOR.read_text(encoding="utf-8")[:20000]], 300,
              progress=False)
    tok.register_special_tokens({"<|endoftext|>": 300})
    folder = save(tok, tmp_path / "tok", eos_token="<|endoftext|>")
    vocab = conversion.write_gguf_vocab(folder, tmp_path / "vocab.gguf")
    assert vocab.notes == [GPT4_NOTE]
    docs = ["def f(x):\n    return x\n    ", "return x\n    return y\n", "y = x\n\n  ", "x\n", "x\n  y"]
    theirs, ours = llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", docs, tmp_path), hf_ids(folder, docs)
    assert [i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b] == [0, 2]


@pytest.mark.slow
@pytest.mark.parametrize(("pattern", "pre"), [("gpt2", "gpt-2"), ("llama3", "llama-bpe"), ("qwen2", "qwen2"),
                                            ("o200k", "gpt-4o"), ("tekken", "tekken")])
def test_llama_cpp_tokenizes_each_named_pattern_as_we_do(pattern, pre, llama_cpp, tmp_path):
    """Every pattern llama.cpp has a name for: a tokenizer trained with it on the multilingual +
    code sample gets that name, and llama.cpp's tokenizer (its regex for the name, its BPE mode and
    add_bos rule as the GGUF sets them) gives our ids, whole sequences, on every document."""
    tok = RegexTokenizer(pattern=pattern)
    tok.train((TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8"), 1200, progress=False)
    tok.register_special_tokens({"<|endoftext|>": 1200})
    folder = save(tok, tmp_path / "tok", eos_token="<|endoftext|>")
    vocab = conversion.write_gguf_vocab(folder, tmp_path / "vocab.gguf")
    assert vocab.pre == pre
    assert llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", DOCS, tmp_path) == hf_ids(folder, DOCS)


@pytest.mark.slow
def test_llama_cpp_tokenizes_extended_llama3_as_we_do(extended_llama3, llama_cpp, tmp_path):
    """The same for Llama 3 extended with new merges, BOS first, on the sample and on the text the
    new merges were learnt from."""
    conversion.write_gguf_vocab(extended_llama3, tmp_path / "vocab.gguf")
    ours = hf_ids(extended_llama3, DOCS)
    assert all(ids[0] == 128000 for ids in ours) and any(i >= 128256 for ids in ours for i in ids)
    assert llama_cpp_ids(llama_cpp, tmp_path / "vocab.gguf", DOCS, tmp_path) == ours


@pytest.mark.slow
def test_llama_cpp_converter_converts_a_model_with_our_tokenizer(extended_llama3, llama_cpp, tmp_path):
    """llama.cpp's own convert_hf_to_gguf.py, whose table lacks the extended Llama 3's hash (so
    alone it stops: "BPE pre-tokenizer was not recognized"), run by ``hf-bbpe gguf --llama-cpp`` converts a (tiny) Llama with it, and the model
    GGUF holds the vocabulary we write, which llama.cpp tokenizes as we do."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = BBPETokenizer.from_pretrained(str(extended_llama3))
    model_dir = tmp_path / "model"
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, bos_token_id=128000, eos_token_id=128001)
    LlamaForCausalLM(config).save_pretrained(str(model_dir))
    tok.save_pretrained(str(model_dir))

    assert conversion.gguf_vocab_of(model_dir).chkhsh not in converter_hash_table(llama_cpp)  # it would stop
    proc = run_cli("gguf", model_dir, "-o", tmp_path / "vocab.gguf", "--llama-cpp", llama_cpp.source,
                   "--converter-args", "--outfile", tmp_path / "model.gguf", "--outtype", "f32", timeout=1800)
    assert b"pre-tokenizer: llama-bpe" in proc.stdout
    model, ours = gguf.GGUFReader(tmp_path / "model.gguf"), gguf.GGUFReader(tmp_path / "vocab.gguf")
    assert tokenizer_fields(model) == tokenizer_fields(ours)
    assert field(model, "general.architecture") == "llama" and len(model.tensors) > 0
    docs = DOCS[::7]
    assert llama_cpp_ids(llama_cpp, tmp_path / "model.gguf", docs, tmp_path) == hf_ids(extended_llama3, docs)
    assert json.loads((model_dir / "config.json").read_text())["vocab_size"] == len(field(model, "tokenizer.ggml.tokens"))


def test_llama_cpp_build_without_compilers_says_so_in_one_line(tmp_path):
    """Where cmake or a compiler is missing, scripts/build_llama_cpp.sh (which the ``llama_cpp``
    fixture and setup.sh run) stops with one line naming what is missing and how to install it,
    before fetching anything: the GGUF tests then fail with it, never skip."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "mkdir", "flock", "sha256sum", "cut", "cat", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    script = Path(__file__).resolve().parents[2] / "scripts" / "build_llama_cpp.sh"
    proc = subprocess.run([str(bin_dir / "bash"), str(script), str(tmp_path / "llama")], capture_output=True,
                          text=True, env={"PATH": str(bin_dir), "HOME": str(tmp_path)}, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "build_llama_cpp.sh: cmake cc c++ not found: the GGUF tests build llama.cpp from source and need cmake and C "
        "and C++ compilers (Debian/Ubuntu: apt-get install cmake gcc g++; .ci/run installs them)"]
    assert sorted(p.name for p in (tmp_path / "llama").iterdir()) == [".lock"]
