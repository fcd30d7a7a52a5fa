"""The real families load through conversion.load and encode exactly as their owners' encoders.

Owners' encoders, from their PyPI packages (test extra): llama_models' tiktoken-based Llama 3 and
Llama 4 ``Tokenizer``, mistral_common's ``Tekkenizer`` (both Tekken files), openai-whisper's
``whisper.tokenizer`` (its three encodings), and ``tokenizers``
running the Llama 3 tokenizer.json that transformers' ``TikTokenConverter`` makes. Every
comparison is the whole id sequence of each document of tests/data/text/mix-sample.txt (prose
in nine languages and Python code, plus Vietnamese that reaches Llama 3's 678 tokens no merge
builds), with 0 documents allowed to differ, along every path: the engine loaded by
``conversion.load`` and by ``load_preset``, the tokenizer.json we export run by ``tokenizers``,
and (tests/hf/test_families_hf.py) BBPETokenizer and the AutoTokenizer fast twin.
"""

from __future__ import annotations

import re

import pytest
from llama_models.llama3.tokenizer import Tokenizer as Llama3Reference
from llama_models.llama4.tokenizer import Tokenizer as Llama4Reference
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from tests.support.families import LLAMA3_MODEL, LLAMA4_MODEL, TEKKEN_FILES, WHISPER_ASSETS, mix_documents
from tokenizers import Tokenizer as HFTokenizer

import conversion
from conversion.presets import PRESETS
from hf_bbpe.engine.chunking.patterns import TEKKEN_SPLIT_PATTERN, native_scanner
from hf_bbpe.engine.tokenizer import Tokenizer

DOCS = mix_documents()


def differing(ours, reference, docs=DOCS) -> list[int]:
    """Indices of the documents whose whole id sequences differ."""
    return [i for i, doc in enumerate(docs) if ours(doc) != reference(doc)]


@pytest.fixture(scope="module")
def llama3():
    return conversion.load(LLAMA3_MODEL), Llama3Reference(LLAMA3_MODEL)


@pytest.fixture(scope="module")
def llama4():
    return conversion.load(LLAMA4_MODEL), Llama4Reference(LLAMA4_MODEL)


def with_specials(doc: str, names: list[str]) -> str:
    """The document with special tokens around it and in its middle."""
    middle = len(doc) // 2
    return f"{names[0]}{doc[:middle]}{names[2]}{doc[middle:]}{names[1]}"


@pytest.mark.parametrize("family", ["llama3", "llama4"])
def test_llama_families_equal_llama_models(family, llama3, llama4):
    tok, reference = llama3 if family == "llama3" else llama4
    assert conversion.detect_format(LLAMA3_MODEL if family == "llama3" else LLAMA4_MODEL) == "tiktoken"
    assert tok.mode == "ranks" and tok.special_tokens == reference.special_tokens
    assert tok.pattern == reference.model._pat_str and tok.n_vocab == reference.model.n_vocab
    assert differing(tok.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False)) == []
    # without special tokens: text spelling them is ordinary text, as llama_models' default
    names = list(reference.special_tokens)
    spelled = [with_specials(doc, names) for doc in DOCS[:300]]
    assert differing(lambda d: tok.encode(d, disallowed_special=()),
                     lambda d: reference.encode(d, bos=False, eos=False), spelled) == []
    # with special tokens
    assert differing(lambda d: tok.encode(d, allowed_special="all"),
                     lambda d: reference.encode(d, bos=False, eos=False, allowed_special="all"), spelled) == []
    assert tok.encode(names[0] + "hi", allowed_special="all")[0] == reference.bos_id


def test_llama3_reaches_the_tokens_no_merge_builds(llama3):
    tok, reference = llama3
    assert len(tok.unmerged_tokens) == 678
    text = "Tôi làm việc hợp x.:.:y nhiều"
    ids = tok.encode_ordinary(text)
    assert ids == reference.encode(text, bos=False, eos=False)
    assert 100769 in ids and 100421 in ids  # ' việc', '.:.:'


def test_llama3_every_token_no_merge_builds_encodes_as_llama_models(llama3):
    """Each of the 678 tokens as text on its own, inside words and repeated: the pieces that reach them."""
    tok, reference = llama3
    texts = []
    for data in tok.unmerged_tokens.values():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        texts += [text, f"x{text}y", f"{text}{text} {text}.", f"Chúng tôi{text}"]
    assert len(texts) > 2000
    assert differing(tok.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False), texts) == []


def test_presets_know_the_families(llama3):
    tok, _ = llama3
    preset = conversion.load_preset("llama3", LLAMA3_MODEL)
    assert preset.vocab == tok.vocab and preset.special_tokens == PRESETS["llama3"].special_tokens
    assert preset.pattern == PRESETS["llama3"].pattern
    assert conversion.load_preset("llama4", LLAMA4_MODEL.parent).n_vocab == 202048  # a folder holding the file
    with pytest.raises(conversion.FormatError, match=r"this is llama4's tokenizer.model \(by its sha256\), not llama3's"):
        conversion.load_preset("llama3", LLAMA4_MODEL)
    with pytest.raises(conversion.FormatError, match=r"this is tekken's tekken.json"):
        conversion.load_preset("llama3", TEKKEN_FILES["tekken_240718"])


@pytest.mark.parametrize("name", sorted(TEKKEN_FILES))
def test_tekken_equals_tekkenizer(name):
    path = TEKKEN_FILES[name]
    reference = Tekkenizer.from_file(path)
    tok = conversion.load(path)
    assert conversion.detect_format(path) == "tekken" and tok.mode == "ranks"
    assert tok.pattern == TEKKEN_SPLIT_PATTERN and native_scanner(tok.pattern) is not None  # the C scanner
    assert tok.n_vocab == reference.n_words == 131072
    assert len(tok.special_tokens) == reference.num_special_tokens == 1000
    assert all(reference.get_special_token(token) == idx for token, idx in tok.special_tokens.items())
    assert tok.special_tokens["<s>"] == reference.bos_id and tok.special_tokens["<SPECIAL_999>"] == 999
    assert differing(tok.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False)) == []
    spelled = [f"[INST]{doc}</s>" for doc in DOCS[:100]]  # Tekkenizer.encode never matches special tokens
    assert differing(lambda d: tok.encode(d, disallowed_special=()),
                     lambda d: reference.encode(d, bos=False, eos=False), spelled) == []
    assert conversion.load_preset("tekken", path).vocab == tok.vocab
    assert all(tok.decode_single_token_bytes(idx) == reference.id_to_byte_piece(idx) for idx in range(1000, 1300))


@pytest.fixture(scope="module")
def llama3_converted(tmp_path_factory):
    """Llama 3's tokenizer.json as transformers' TikTokenConverter makes it (every split of every
    token as merges, ignore_merges), saved by tokenizers."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    specials = list(PRESETS["llama3"].special_tokens)
    hf = TikTokenConverter(vocab_file=str(LLAMA3_MODEL), pattern=PRESETS["llama3"].pattern,
                           extra_special_tokens=specials).converted()
    path = tmp_path_factory.mktemp("llama3-converted") / "tokenizer.json"
    hf.save(str(path))
    return path, HFTokenizer.from_file(str(path))


def test_tiktoken_converter_file_equals_tokenizers_and_llama_models(llama3, llama3_converted):
    path, hf = llama3_converted
    _, reference = llama3
    tok = conversion.load(path)
    assert conversion.detect_format(path) == "tokenizer_json" and tok.mode == "ranks"
    assert tok.special_tokens == reference.special_tokens and len(tok.unmerged_tokens) == 678
    assert differing(tok.encode_ordinary, lambda d: hf.encode(d, add_special_tokens=False).ids) == []
    assert differing(tok.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False)) == []
    spelled = [with_specials(doc, list(reference.special_tokens)) for doc in DOCS[:200]]
    assert differing(lambda d: tok.encode(d, allowed_special="all"),
                     lambda d: hf.encode(d, add_special_tokens=False).ids, spelled) == []


@pytest.mark.parametrize("family", ["llama3", "llama4", "tekken_240911"])
def test_exported_tokenizer_json_run_by_tokenizers_equals_the_owner(family, llama3, llama4, tmp_path):
    """The tokenizer.json we export, run by ``tokenizers``: the owner's ids, and with its special
    tokens on, the owner's BOS in front (``bos=True``), which the file's template records and
    conversion.load reads back as the tokenizer's roles."""
    if family == "tekken_240911":
        tok = conversion.load(TEKKEN_FILES[family])
        reference = Tekkenizer.from_file(TEKKEN_FILES[family])
    else:
        tok, reference = llama3 if family == "llama3" else llama4
    encode = lambda d: reference.encode(d, bos=False, eos=False)  # noqa: E731
    conversion.to_tokenizer_json(tok, tmp_path / "tokenizer.json")
    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert differing(lambda d: hf.encode(d, add_special_tokens=False).ids, encode) == []
    assert differing(lambda d: hf.encode(d).ids, lambda d: reference.encode(d, bos=True, eos=False), DOCS[:100]) == []
    back = conversion.load(tmp_path / "tokenizer.json")
    assert back.mode == "ranks" and back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    assert (back.roles.bos_token, back.roles.add_bos_token) == (tok.roles.bos_token, True)
    assert differing(back.encode_ordinary, encode, DOCS[:200]) == []


def test_llama3_through_the_model_file_and_gpt2_files(llama3, tmp_path):
    tok, reference = llama3
    conversion.to_minbpe(tok, tmp_path / "llama3")
    assert (tmp_path / "llama3.model").read_text(encoding="utf-8").startswith("hf_bbpe v2\n")
    back = conversion.load(tmp_path / "llama3.model")
    assert back.mode == "ranks" and back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    assert differing(back.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False), DOCS[:300]) == []
    # GPT-2 files carry no mode: plain BPE over the merges would never produce the 678 unmerged tokens
    with pytest.raises(conversion.FormatError, match=r"GPT-2 encoder\.json/vocab\.bpe cannot hold this 'ranks'-mode "
                       r"tokenizer.*token b'\.:\.:' \(id 100421\).*tokenizer\.json \(ignore_merges: true\), "
                       r"tiktoken ranks or a \.model \(hf_bbpe v2\)"):
        conversion.to_gpt2_files(tok, tmp_path / "g2")
    assert not (tmp_path / "g2" / "encoder.json").exists()


def moved_rank(ranks: dict[bytes, int], token: bytes) -> dict[bytes, int]:
    """``ranks`` with ``token`` moved to a rank above every other."""
    moved = dict(ranks)
    moved[token] = max(ranks.values()) + 1
    return moved


def test_gpt2_files_refuse_whole_piece_rules_the_merges_cannot_say(llama4, tmp_path):
    tok, _ = llama4
    moved = Tokenizer.from_ranks(moved_rank(tok.mergeable_ranks(), b"er"), pattern=tok.pattern)
    assert moved.mode == "ranks" and moved.merge_list_mismatch() is not None
    first = moved.merge_list_mismatch()
    with pytest.raises(conversion.FormatError, match=f"token {re.escape(repr(moved.vocab[first]))} \\(id {first}\\)"):
        conversion.to_gpt2_files(moved, tmp_path / "g2")
    # what the refusal prevents: the merges alone encode differently on the mixed text
    merges_only = Tokenizer.from_merges(moved.merges, byte_ids=moved.byte_ids, pattern=moved.pattern, check=False)
    assert differing(merges_only.encode_ordinary, moved.encode_ordinary, DOCS[:300]) != []
    # the .model (v2) keeps the mode, and the ids
    conversion.to_minbpe(moved, tmp_path / "moved")
    assert (tmp_path / "moved.model").read_text(encoding="utf-8").startswith("hf_bbpe v2\n")
    back = conversion.load(tmp_path / "moved.model")
    assert back.mode == "ranks" and differing(back.encode_ordinary, moved.encode_ordinary, DOCS[:300]) == []


def test_exact_ranks_vocabulary_round_trips_through_gpt2_files_and_model_without_mode(llama4, tmp_path):
    """Llama 4's ranks imply one merge per token: the merge-list formats are exact, whole ids equal the owner's."""
    tok, reference = llama4
    assert tok.mode == "ranks" and tok.merge_list_mismatch() is None
    encode = lambda d: reference.encode(d, bos=False, eos=False)  # noqa: E731
    conversion.to_gpt2_files(tok, tmp_path / "g2")
    back = conversion.load(tmp_path / "g2", pattern=tok.pattern)
    assert back.mode == "merges" and back.vocab == tok.vocab
    assert differing(back.encode_ordinary, encode, DOCS[:300]) == []
    conversion.to_minbpe(tok, tmp_path / "l4")
    assert "\nmode merges\n" in (tmp_path / "l4.model").read_text(encoding="utf-8")  # the merges alone are exact
    back = conversion.load(tmp_path / "l4.model")
    assert differing(back.encode_ordinary, encode, DOCS[:300]) == []


def test_llama3_to_tiktoken_is_byte_identical(llama3, tmp_path):
    tok, _ = llama3
    conversion.to_tiktoken(tok, tmp_path / "llama3.tiktoken")
    assert (tmp_path / "llama3.tiktoken").read_bytes() == LLAMA3_MODEL.read_bytes()


def test_extending_llama3_keeps_every_id_and_encodes_other_text_as_before(llama3):
    """New merges on top of Llama 3: every old id keeps its bytes, and text without the new
    tokens' bytes encodes exactly as llama_models encodes it."""
    tok, reference = llama3
    code = [doc for doc in DOCS if "def " in doc or "import " in doc]
    extended = tok.extend(code[: len(code) // 2], 40, progress=False)
    assert extended.mode == "ranks" and extended.special_tokens == tok.special_tokens
    assert all(extended.vocab[idx] == data for idx, data in tok.vocab.items())
    new_ids = sorted(set(extended.vocab) - set(tok.vocab))
    assert len(new_ids) == 40 and new_ids[0] > max(tok.special_tokens.values())
    new_bytes = [extended.vocab[idx] for idx in new_ids]
    untouched = [doc for doc in DOCS if not any(data in doc.encode("utf-8") for data in new_bytes)]
    touched = [doc for doc in DOCS if doc not in untouched]
    assert len(untouched) > 300 and touched
    assert differing(extended.encode_ordinary, lambda d: reference.encode(d, bos=False, eos=False), untouched) == []
    assert any(set(extended.encode_ordinary(doc)) & set(new_ids) for doc in touched)
    assert all(extended.decode(extended.encode_ordinary(doc)) == doc for doc in touched)


WHISPER_ENCODINGS = {"whisper": ("multilingual", 99), "whisper_v3": ("multilingual", 100), "whisper_en": ("gpt2", 99)}
"""Preset name -> the arguments of whisper.tokenizer.get_encoding that make the owner's encoding."""


def whisper_reference(preset: str):
    """Whisper's own encoding (tiktoken underneath, with Whisper's special tokens)."""
    from whisper.tokenizer import get_encoding

    name, num_languages = WHISPER_ENCODINGS[preset]
    return get_encoding(name, num_languages=num_languages)


@pytest.mark.parametrize("preset", sorted(WHISPER_ENCODINGS))
def test_whisper_presets_equal_whisper_tokenizer(preset, tmp_path):
    """Each Whisper preset: the owner's special tokens and ids, the same ids as whisper's encoder on
    every document with and without special tokens, through load_preset, conversion.load and the
    tokenizer.json we export run by ``tokenizers``."""
    reference = whisper_reference(preset)
    path = WHISPER_ASSETS / PRESETS[preset].files[0]
    tok = conversion.load_preset(preset, path)
    assert tok.mode == "ranks" and tok.special_tokens == reference._special_tokens
    assert tok.n_vocab == reference.n_vocab and tok.mergeable_ranks() == reference._mergeable_ranks
    assert differing(tok.encode_ordinary, reference.encode_ordinary) == []
    assert differing(tok.encode, reference.encode) == []  # whisper's own default: special tokens disallowed
    names = ["<|startoftranscript|>", "<|endoftext|>", "<|0.00|>", "<|transcribe|>", "<|notimestamps|>", "<|yue|>"]
    spelled = [with_specials(doc, names[i % 3:]) for i, doc in enumerate(DOCS[:300])]
    assert differing(lambda d: tok.encode(d, allowed_special="all"),
                     lambda d: reference.encode(d, allowed_special="all"), spelled) == []
    assert differing(lambda d: tok.encode(d, disallowed_special=()),
                     lambda d: reference.encode(d, disallowed_special=()), spelled) == []
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        tok.encode("a <|endoftext|>")
    assert tok.decode(reference.encode(DOCS[5])) == DOCS[5]
    if preset == "whisper":
        assert conversion.load(path).special_tokens == tok.special_tokens  # recognised by its sha256
    conversion.to_tokenizer_json(tok, tmp_path / "tokenizer.json")
    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert differing(lambda d: hf.encode(d, add_special_tokens=False).ids, reference.encode_ordinary) == []
    assert differing(lambda d: hf.encode(d, add_special_tokens=False).ids,
                     lambda d: reference.encode(d, allowed_special="all"), spelled) == []


def test_whisper_preset_names_the_right_file():
    """multilingual.tiktoken is not the English-only models' file, and Whisper's gpt2.tiktoken is
    byte for byte r50k_base.tiktoken (either preset takes it)."""
    with pytest.raises(conversion.FormatError, match=r"this is whisper's multilingual.tiktoken \(by its sha256\)"):
        conversion.load_preset("whisper_en", WHISPER_ASSETS / "multilingual.tiktoken")
    r50k = conversion.load_preset("r50k_base", WHISPER_ASSETS / "gpt2.tiktoken")
    english = conversion.load_preset("whisper_en", WHISPER_ASSETS)
    assert r50k.vocab.items() <= english.vocab.items() and english.special_tokens["<|endoftext|>"] == 50256
    assert conversion.load_preset("whisper_v3", WHISPER_ASSETS).special_tokens["<|translate|>"] == 50359


OWNER_ROLES = {
    # (bos, eos, pad, BOS added) as the owners' Hugging Face tokenizers of the base models have them
    "llama3": ("<|begin_of_text|>", "<|end_of_text|>", None, True),
    "llama4": ("<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad|>", True),
    "tekken": ("<s>", "</s>", None, True),
    **{name: ("<|endoftext|>", "<|endoftext|>", "<|endoftext|>", False) for name in ("whisper", "whisper_v3",
                                                                                      "whisper_en")},
    **{name: ("<|endoftext|>", "<|endoftext|>", None, False) for name in ("gpt2", "r50k_base", "p50k_base",
                                                                          "cl100k_base", "o200k_base")},
    # the SuperBPE paper's released vocab.json + merges.txt hold no special token
    **{name: (None, None, None, False) for name in ("superbpe_t180k", "superbpe_baseline")},
}


def roles_of(tok_or_preset) -> tuple:
    roles = tok_or_preset.roles
    return roles.bos_token, roles.eos_token, roles.pad_token, roles.add_bos_token


def test_every_preset_carries_its_owners_token_roles(llama3, llama4, tmp_path):
    """Each preset's bos/eos/pad and add-BOS rule are the owner's; the tokenizers loaded from the
    real files carry them (whatever the path: load, load_preset), and they survive the .model file,
    pickling and extension. encode itself never adds a token."""
    import pickle

    assert {name: roles_of(preset) for name, preset in PRESETS.items()} == OWNER_ROLES
    loaded = {"llama3": llama3[0], "llama4": llama4[0], "tekken": conversion.load(TEKKEN_FILES["tekken_240718"]),
              "whisper": conversion.load(WHISPER_ASSETS / "multilingual.tiktoken"),
              "whisper_en": conversion.load_preset("whisper_en", WHISPER_ASSETS / "gpt2.tiktoken"),
              "r50k_base": conversion.load(WHISPER_ASSETS / "gpt2.tiktoken")}  # the same file, byte for byte
    assert {name: roles_of(tok) for name, tok in loaded.items()} == {name: OWNER_ROLES[name] for name in loaded}
    tok = llama3[0]
    assert tok.encode("Hi") == [13347]  # the engine's encode is tiktoken's: no BOS
    conversion.to_minbpe(tok, tmp_path / "llama3")
    assert roles_of(conversion.load(tmp_path / "llama3.model")) == OWNER_ROLES["llama3"]
    assert roles_of(pickle.loads(pickle.dumps(tok))) == OWNER_ROLES["llama3"]
    assert roles_of(tok.extend(DOCS[:20], 5, progress=False)) == OWNER_ROLES["llama3"]
