"""Pre-tokenizer pipelines and normalizers: tokenizer.json files trained by ``tokenizers`` itself.

For each family a small byte-level BPE is trained with ``tokenizers``' own ``BpeTrainer`` on
mix-sample.txt (multilingual prose and code) with that family's pre-tokenizer and normalizer,
saved as tokenizer.json, and imported with ``conversion.from_tokenizer_json``. Every path then
gives ``tokenizers``' ids, document by document: the engine, the engine's ``.model`` file read
back, the tokenizer.json the engine exports (run by ``tokenizers``), ``BBPETokenizer``, a saved
folder loaded back by ``BBPETokenizer`` and by ``AutoTokenizer`` (the fast twin). Normalizer
families are also fed text that is not normalized: the documents in NFD and NFKD, and with
compatibility characters (ligatures, circled and full-width forms, half-width katakana with
sound marks, characters newer than tokenizers' Unicode tables) put in.
"""

from __future__ import annotations

import functools
import random
import unicodedata
from pathlib import Path

import pytest
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFTokenizer
from transformers import AutoTokenizer

import conversion
from conversion import FormatError
from hf_bbpe import Tokenizer
from hf_bbpe.engine.chunking.pre_tokenizers import ByteLevel
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_from_onig
from hf_bbpe.engine.chunking.patterns import QWEN2_SPLIT_PATTERN, native_scanner

DATA = Path(__file__).resolve().parents[1] / "data"
DOCS = [doc for doc in (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n") if doc.strip()]
EOT = "<|endoftext|>"

QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
DEEPSEEK_V3 = [
    r"\p{N}{1,3}",
    r"[一-龥\u3040-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
]


def _split(pattern: str, behavior: str = "isolated", invert: bool = False) -> pre_tokenizers.Split:
    return pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=invert)


def _bytes(use_regex: bool = False, add_prefix_space: bool = False) -> pre_tokenizers.ByteLevel:
    return pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, trim_offsets=True, use_regex=use_regex)


FAMILIES = {
    "starcoder": (None, lambda: pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                         _bytes(use_regex=True)])),
    "gpt_neox": (None, lambda: _bytes(use_regex=True)),
    "bytelevel_prefix_space": (None, lambda: _bytes(use_regex=True, add_prefix_space=True)),
    "deepseek_v3": (None, lambda: pre_tokenizers.Sequence([*map(_split, DEEPSEEK_V3), _bytes()])),
    "qwen2": (lambda: normalizers.NFC(), lambda: pre_tokenizers.Sequence([_split(QWEN2), _bytes()])),
    "nfkc_gpt2": (lambda: normalizers.NFKC(), lambda: _bytes(use_regex=True)),
    "nfd_llama3": (lambda: normalizers.NFD(), lambda: pre_tokenizers.Sequence([_split(LLAMA3), _bytes()])),
    "nfkd_llama3": (lambda: normalizers.NFKD(), lambda: pre_tokenizers.Sequence([_split(LLAMA3), _bytes()])),
    "sequence_nfd_nfkc": (lambda: normalizers.Sequence([normalizers.NFD(), normalizers.NFKC()]),
                          lambda: pre_tokenizers.Sequence([_split(QWEN2), _bytes()])),
    "punctuation_digit_runs": (None, lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), pre_tokenizers.Digits(individual_digits=False), _bytes(use_regex=True)])),
    "split_behaviors": (None, lambda: pre_tokenizers.Sequence([
        _split(r"\s+", "merged_with_next"), _split(r"[,.;:!?]", "merged_with_previous"),
        pre_tokenizers.Punctuation("removed"), _split(r"\p{L}+", "contiguous", invert=True), _bytes()])),
    "steps_after_bytelevel": (lambda: normalizers.NFKC(), lambda: pre_tokenizers.Sequence([
        _bytes(use_regex=True), pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Punctuation("isolated")])),
}

COMPATIBILITY = ["ﬁ", "ﬀ", "①", "⑫", "Ｆｕｌｌ", "１２３", "ｶﾞｷﾞ", "㎏", "½", "Å", "ẛ̣", "ǅ", "ᄀ\u1161\u11a8", "㋿", "\U00011935\U00011930",
                 "e\u0301\u0323", "\u0958", "x\u0345\u0301"]


def _unnormalized(doc: str, rng: random.Random) -> str:
    """``doc`` with a few compatibility and decomposed sequences put in at random places."""
    cut = sorted(rng.randrange(len(doc) + 1) for _ in range(4))
    pieces, last = [], 0
    for at in cut:
        pieces += [doc[last:at], rng.choice(COMPATIBILITY)]
        last = at
    return "".join(pieces) + doc[last:]


def texts_for(normalized: bool) -> list[str]:
    """The documents; for normalizer families also their NFD/NFKD forms that differ, and every
    document with compatibility characters put in; and a few hand-made strings."""
    texts = list(DOCS)
    extra = ["", " ", "  x", "1234567 89", "a<|endoftext|>b " + EOT, "don't\r\n\r\n  WE'LL", "\u00a0\u3000x",
             "ab\n\n", "x ,y", "٣٤٥ ²³", "日本語のテキスト、カタカナ。"]
    if normalized:
        for form in ("NFD", "NFKD"):
            texts += [changed for doc in DOCS if (changed := unicodedata.normalize(form, doc)) != doc]
        rng = random.Random(12)
        texts += [_unnormalized(doc, rng) for doc in DOCS]
        extra += COMPATIBILITY + ["".join(COMPATIBILITY), EOT + "\u0301" + EOT + "ﬁ"]
    return texts + extra


@functools.cache
def _trained_file(name: str, directory: str) -> Path:
    make_normalizer, make_pre = FAMILIES[name]
    hf = HFTokenizer(models.BPE())
    if make_normalizer is not None:
        hf.normalizer = make_normalizer()
    hf.pre_tokenizer = make_pre()
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(DOCS, trainer=trainer)
    path = Path(directory) / f"{name}.json"
    hf.save(str(path))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("pipelines"))


def _differing(expected: list[list[int]], texts: list[str], encode) -> list[str]:
    return [text for text, ids in zip(texts, expected) if encode(text) != ids]


@pytest.mark.transformers_compat
@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_imports_with_identical_ids_on_every_path(name, files, tmp_path):
    path = _trained_file(name, files)
    hf = HFTokenizer.from_file(str(path))
    texts = texts_for(normalized=FAMILIES[name][0] is not None)
    expected = [hf.encode(text, add_special_tokens=False).ids for text in texts]

    tok = conversion.from_tokenizer_json(path)
    assert (tok.normalizer is None) == (FAMILIES[name][0] is None)
    assert _differing(expected, texts, lambda t: tok.encode(t, allowed_special="all")) == []

    tok.save(tmp_path / "engine")
    again = Tokenizer.from_file(tmp_path / "engine.model")
    assert _differing(expected, texts, lambda t: again.encode(t, allowed_special="all")) == []

    conversion.to_tokenizer_json(tok, tmp_path / "exported.json")
    exported = HFTokenizer.from_file(str(tmp_path / "exported.json"))
    assert _differing(expected, texts, lambda t: exported.encode(t, add_special_tokens=False).ids) == []

    bbpe = BBPETokenizer.from_engine(tok)
    assert _differing(expected, texts, lambda t: bbpe(t)["input_ids"]) == []
    bbpe.save_pretrained(tmp_path / "folder")
    loaded = BBPETokenizer.from_pretrained(tmp_path / "folder")
    fast = AutoTokenizer.from_pretrained(tmp_path / "folder")
    assert fast.is_fast
    some = texts[::3]
    some_expected = expected[::3]
    assert _differing(some_expected, some, lambda t: loaded(t)["input_ids"]) == []
    assert _differing(some_expected, some, lambda t: fast(t)["input_ids"]) == []


def test_the_pipelines_are_not_plain_patterns(files):
    """The families exercise the pipeline, not the single-pattern path (except GPT-NeoX, whose
    ByteLevel regex is GPT-2's pattern, and the Llama 3 and Qwen2 ones, whose isolated Split is of
    Llama 3's or Qwen2's pattern, which the C scanner knows); one isolated Split reports its
    pattern as the tokenizer's pattern."""
    plain, single = set(), set()
    for name in FAMILIES:
        tok = conversion.from_tokenizer_json(_trained_file(name, files))
        if tok.plain_pattern is not None:
            plain.add(name)
        if tok.pre_tokenizer.split_pattern is not None:
            single.add(name)
            assert tok.pattern == tok.pre_tokenizer.split_pattern
    assert plain == {"gpt_neox", "nfkc_gpt2", "nfd_llama3", "nfkd_llama3", "qwen2", "sequence_nfd_nfkc"}
    assert single == plain
    qwen2 = conversion.from_tokenizer_json(_trained_file("qwen2", files))
    assert qwen2.pattern == QWEN2_SPLIT_PATTERN and native_scanner(qwen2.pattern) is not None


def test_normalized_text_changes_ids_so_the_test_can_fail(files):
    """Without its normalizer, the Qwen2-style file encodes the NFD documents differently."""
    tok = conversion.from_tokenizer_json(_trained_file("qwen2", files))
    hf = HFTokenizer.from_file(str(_trained_file("qwen2", files)))
    nfd = [unicodedata.normalize("NFD", doc) for doc in DOCS if unicodedata.normalize("NFD", doc) != doc]
    tok.normalizer = None
    assert sum(tok.encode(t) != hf.encode(t).ids for t in nfd) == len(nfd) > 30


def test_unsupported_components_name_themselves_and_the_file(files, tmp_path):
    import json

    data = json.loads(_trained_file("starcoder", files).read_text(encoding="utf-8"))
    for key, value, message in [
        ("pre_tokenizer", {"type": "Metaspace", "replacement": "▁"}, "pre_tokenizer 'Metaspace' is not supported"),
        ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}]},
         "has no ByteLevel step"),
        ("normalizer", {"type": "Lowercase"}, "normalizer 'Lowercase' is not supported"),
        ("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip"}]},
         "normalizer 'Strip' is not supported"),
    ]:
        broken = dict(data, **{key: value})
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps(broken), encoding="utf-8")
        with pytest.raises(FormatError, match=rf"{key}\.json: .*{message}"):
            conversion.from_tokenizer_json(path)


def test_exported_pipeline_keeps_its_steps(files, tmp_path):
    """Export writes the pipeline back step by step (regexes in Oniguruma syntax)."""
    import json

    tok = conversion.from_tokenizer_json(_trained_file("deepseek_v3", files))
    conversion.to_tokenizer_json(tok, tmp_path / "out.json")
    whole = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    written = whole["pre_tokenizer"]
    original = json.loads(_trained_file("deepseek_v3", files).read_text(encoding="utf-8"))["pre_tokenizer"]
    for step in written["pretokenizers"] + original["pretokenizers"]:  # the same regex, maybe spelled otherwise
        if step["type"] == "Split":
            step["pattern"]["Regex"] = translate_pattern_from_onig(step["pattern"]["Regex"])
    assert written == original
    assert whole["normalizer"] is None
    qwen = conversion.from_tokenizer_json(_trained_file("qwen2", files))
    assert isinstance(qwen.pre_tokenizer.steps()[-1], ByteLevel)
    conversion.to_tokenizer_json(qwen, tmp_path / "qwen.json")
    assert json.loads((tmp_path / "qwen.json").read_text(encoding="utf-8"))["normalizer"] == {"type": "NFC"}


@pytest.mark.transformers_compat
def test_added_tokens_under_a_normalizer_match_alike_in_both_classes(files, tmp_path):
    """transformers marks non-special added tokens "normalized"; BBPETokenizer looks for added
    tokens in the text as given, and the twin it saves does the same."""
    tok = conversion.from_tokenizer_json(_trained_file("nfkc_gpt2", files))
    bbpe = BBPETokenizer.from_engine(tok)
    bbpe.add_tokens(["ﬁx", "Ｆｕｌｌ"])
    bbpe.save_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    texts = ["ﬁx fix Ｆｕｌｌ Full", "prefix ﬁxture", *DOCS[:50]]
    assert [fast(t)["input_ids"] for t in texts] == [bbpe(t)["input_ids"] for t in texts]
    assert bbpe("ﬁx fix")["input_ids"][0] == bbpe.convert_tokens_to_ids("ﬁx") != bbpe("fix")["input_ids"][0]


NORMALIZED_ADDED = [  # (content, special, normalized)
    ("café", False, True), ("ﬁx", False, True), ("<|é|>", True, True), ("Ｆｕｌｌ", True, True),
    ("hello", False, True), ("o w", False, False), ("<raw>", True, False), ("naïve", False, False),
]
"""Added tokens of every kind: matched in the normalized text ("café" in either form, "ﬁx" as
"fix" under NFK*, "hello" losing to the raw "o w" that overlaps it) or in the text as given."""


def _with_added_tokens(texts: list[str]) -> list[str]:
    spellings = ["café", "cafe\u0301", "ﬁx", "fix", "<|é|>", "<|e\u0301|>", "Ｆｕｌｌ", "Full", "hello world",
                 "<raw>", "<ra\u0301w>", "naïve", "nai\u0308ve", "ﬁxcafé<raw>hello", "x<|é|>y"]
    return [f"{text[: len(text) // 2]}{spellings[i % len(spellings)]}{text[len(text) // 2:]}"
            f" {spellings[(i * 7 + 3) % len(spellings)]}" for i, text in enumerate(texts)]


@pytest.mark.transformers_compat
@pytest.mark.parametrize("name", ["nfd_llama3", "nfkd_llama3", "nfkc_gpt2", "gpt_neox"])
def test_added_tokens_marked_normalized_match_as_tokenizers_does(name, files, tmp_path):
    """tokenizer.json added tokens with normalized=true are found in the normalized text, after
    those without it are found in the text as given: ids equal to ``tokenizers`` on NFD/NFKD text
    holding the tokens in several spellings, through the engine (and its .model file), the
    exported tokenizer.json, BBPETokenizer, its saved folder and the AutoTokenizer fast twin."""
    from tokenizers import AddedToken as HFAddedToken

    hf = HFTokenizer.from_file(str(_trained_file(name, files)))
    hf.add_tokens([HFAddedToken(c, special=s, normalized=n) for c, s, n in NORMALIZED_ADDED if not s])
    hf.add_special_tokens([HFAddedToken(c, special=s, normalized=n) for c, s, n in NORMALIZED_ADDED if s])
    path = tmp_path / "with_added.json"
    hf.save(str(path))
    texts = _with_added_tokens(texts_for(normalized=True)[::4])
    expected = [hf.encode(text, add_special_tokens=False).ids for text in texts]
    ids = {c: hf.token_to_id(c) for c, _, _ in NORMALIZED_ADDED}
    if name != "gpt_neox":  # the test can fail: other spellings reach the tokens only through normalization
        assert ids["café"] in hf.encode("cafe\u0301").ids and ids["<|é|>"] in hf.encode("<|e\u0301|>").ids
    assert ids["hello"] not in hf.encode("hello world").ids

    tok = conversion.from_tokenizer_json(path)
    assert tok.normalized_special_tokens == {c for c, _, n in NORMALIZED_ADDED if n}  # not the trainer's EOT
    assert _differing(expected, texts, lambda t: tok.encode(t, allowed_special="all")) == []
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode("x café")
    tok.save(tmp_path / "engine")
    again = Tokenizer.from_file(tmp_path / "engine.model")
    assert again.normalized_special_tokens == tok.normalized_special_tokens
    assert _differing(expected[::5], texts[::5], lambda t: again.encode(t, allowed_special="all")) == []
    conversion.to_tokenizer_json(tok, tmp_path / "exported.json")
    exported = HFTokenizer.from_file(str(tmp_path / "exported.json"))
    assert _differing(expected, texts, lambda t: exported.encode(t, add_special_tokens=False).ids) == []
    assert conversion.from_tokenizer_json(tmp_path / "exported.json").normalized_special_tokens == \
        tok.normalized_special_tokens

    bbpe = BBPETokenizer.from_engine(tok)
    assert _differing(expected, texts, lambda t: bbpe(t)["input_ids"]) == []
    for text in ["cafe\u0301 x", "a ﬁx<raw>b", "x<|e\u0301|>y"]:  # offsets in the original text, as tokenizers'
        assert bbpe(text, return_offsets_mapping=True)["offset_mapping"] == hf.encode(text).offsets
    bbpe.save_pretrained(tmp_path / "folder")
    loaded = BBPETokenizer.from_pretrained(tmp_path / "folder")
    fast = AutoTokenizer.from_pretrained(tmp_path / "folder")
    assert fast.is_fast and not isinstance(fast, BBPETokenizer)
    assert _differing(expected, texts, lambda t: loaded(t)["input_ids"]) == []
    assert _differing(expected, texts, lambda t: fast(t)["input_ids"]) == []


@pytest.mark.parametrize("name", list(FAMILIES))
def test_offsets_refer_to_the_original_text_as_tokenizers_reports_them(name, files):
    """Under normalizers that change the text (NFD/NFKD/NFKC input) and pipelines that add to it,
    BBPETokenizer's offsets are the original text's, equal to what ``tokenizers`` reports."""
    path = _trained_file(name, files)
    hf = HFTokenizer.from_file(str(path))
    bbpe = BBPETokenizer.from_engine(conversion.from_tokenizer_json(path))
    texts = texts_for(normalized=FAMILIES[name][0] is not None)[::7]
    texts = [text for text in texts if EOT not in text]  # an added token's offsets are its span either way
    differing = [text for text in texts
                 if bbpe(text, return_offsets_mapping=True)["offset_mapping"] != hf.encode(text).offsets]
    assert differing == []
