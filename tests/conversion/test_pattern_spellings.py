"""One spelling per pattern (issue 29, point 2).

The registry writes GPT-2's, GPT-4's (cl100k) and o200k's patterns without possessive quantifiers,
in the spellings other runtimes compile; they cut text as tiktoken's own spellings do (tiktoken's
ids: tests/conversion/test_conversion_parity.py, whose reference runs tiktoken's own patterns),
take the C scanner, and a tokenizer.json we write carries them, also for a tokenizer made with
tiktoken's spelling or read from a file written with it. Ollama's converter names a pre-tokenizer
by the sha256 of the tokenizer.json's Split regexes: the ones its table lists are ours. What a
tokenizer.json carries compiles in JavaScript's own RegExp (V8, as transformers.js 3.x compiles it)
and cuts our chunks there; tiktoken's possessive spellings do not compile.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import regex

import conversion
from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig
from hf_bbpe.engine.chunking.patterns import (
    EQUIVALENT_PATTERNS,
    GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
    LLAMA3_SPLIT_PATTERN,
    MINBPE_GPT4_SPLIT_PATTERN,
    NATIVE_PATTERNS,
    O200K_SPLIT_PATTERN,
    QWEN2_SPLIT_PATTERN,
    TIKTOKEN_CL100K_SPLIT_PATTERN,
    TIKTOKEN_GPT2_SPLIT_PATTERN,
    chunk_splitter,
    native_scanner,
    scanner_name,
)
from tests.support.families import mix_documents, tiktoken_pattern
from tests.support.javascript import js_regexp_chunks

# Ollama's convert/tokenizer.go (github.com/ollama/ollama at fb30760, parseTokenizer): the sha256 of
# the concatenated Split regexes of tokenizer.json's pre_tokenizer -> tokenizer.ggml.pre. The table
# lists no GPT-2, cl100k or o200k regex (those fall back to "default", with a warning).
OLLAMA_PRE_TOKENIZERS = {
    "d98f9631be1e9607a9848c26c1f9eac1aa9fc21ac6ba82a2fc0741af9780a48f": "llama-bpe",
    "03df5c5863ad70781dcfdef491ead25140f895fe8010964be0daefe27be32b02": "deepseek-llm",
    "21cde974d587f0d54dc8d56b183cc1e6239600172035c68fbd6d4b9f8da0576e": "deepseek-coder",
    "1ff7f41064896984db5d1bb6ff64fa4bc29007d08c1b439e505b7392777a319e": "qwen2",
    "00431aed57e696b747435f734d1e3b9b1bfd931a121fb5cac7129e97c181e9ba": "qwen35",
    "b92c0824a58e1d8dc3221cf3e12c433c3a86f57e46d57229993489f0798e7702": "laguna",
}

POSSESSIVE = regex.compile(r"(?<!\\)(?:[+*?]|\{\d+(?:,\d*)?\})\+")  # X++ X*+ X?+ X{n,m}+ (not \+, \p{L}+)

TEXT = mix_documents()[:200] + ["def f():\n    ", "a\n \n  ", "x  \n", "I'M 'll 12345\r\n\t"]
TEXT_JS = mix_documents() + TEXT[200:] + ["trailing newlines \n\n", "a  \nb", "   ", ""]


def ollama_digest(tokenizer_json: dict) -> str:
    """What Ollama's converter hashes: every Split regex of a Sequence pre-tokenizer, in order."""
    digest = hashlib.sha256()
    for step in (tokenizer_json.get("pre_tokenizer") or {}).get("pretokenizers") or []:
        if step.get("type") == "Split" and step.get("pattern", {}).get("Regex"):
            digest.update(step["pattern"]["Regex"].encode())
    return digest.hexdigest()


def saved_split_regex(pattern: str, tmp_path) -> tuple[str, dict]:
    """The Split regex a tokenizer.json we write carries, for a tokenizer trained on texts ending in
    an indent (so that a GPT-4-pattern one learns ``"\\n  "``, and keeps GPT-4's spelling: see
    tests/hf/test_snaptokens_fastokens.py for the one without such a token)."""
    tok = RegexTokenizer(pattern=pattern)
    tok.train(["hello world, hello there\n    "] * 20, 266, progress=False)
    path = tmp_path / "tokenizer.json"
    conversion.to_tokenizer_json(tok, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    splits = [step for step in data["pre_tokenizer"]["pretokenizers"] if step["type"] == "Split"]
    assert len(splits) == 1
    return splits[0]["pattern"]["Regex"], data


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k"])
def test_registry_spelling_has_no_possessive_quantifier(name):
    """JavaScript, .NET and RE2 have no possessive quantifiers, and Oniguruma reads X{n,m}+ as a
    repetition of X{n,m}: the registry writes none."""
    pattern = NATIVE_PATTERNS[name]
    assert not POSSESSIVE.search(pattern), pattern
    assert "(?>" not in translate_pattern_for_onig(pattern)  # nothing for the tokenizer.json to rewrite


def test_registry_spellings_are_the_ones_others_write():
    """GPT-2's is GPT-2's own (transformers' GPT2Tokenizer and tokenizers' ByteLevel regex), o200k's
    is tiktoken's (which has no possessive quantifier), and tiktoken's possessive GPT-2 and cl100k
    spellings are listed as other spellings of the same patterns."""
    assert GPT2_SPLIT_PATTERN == r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    assert O200K_SPLIT_PATTERN == tiktoken_pattern("o200k_base")
    assert TIKTOKEN_GPT2_SPLIT_PATTERN == tiktoken_pattern("r50k_base")
    assert TIKTOKEN_CL100K_SPLIT_PATTERN == tiktoken_pattern("cl100k_base")
    assert EQUIVALENT_PATTERNS[TIKTOKEN_GPT2_SPLIT_PATTERN] == "gpt2"
    assert EQUIVALENT_PATTERNS[TIKTOKEN_CL100K_SPLIT_PATTERN] == "gpt4"


@pytest.mark.parametrize(("ours", "encoding"), [(GPT2_SPLIT_PATTERN, "r50k_base"), (GPT4_SPLIT_PATTERN, "cl100k_base")],
                         ids=["gpt2", "gpt4"])
def test_registry_spelling_cuts_as_tiktokens(ours, encoding):
    """The same chunks as tiktoken's own spelling on real text and on texts ending in white space
    after a line break (where cl100k's ``\\s++$`` decides), in the regex module and the C scanner."""
    theirs = tiktoken_pattern(encoding)
    for text in TEXT:
        assert regex.findall(ours, text) == regex.findall(theirs, text) == chunk_splitter(ours)(text)


@pytest.mark.parametrize("spelling", [GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, TIKTOKEN_GPT2_SPLIT_PATTERN,
                                      TIKTOKEN_CL100K_SPLIT_PATTERN], ids=["gpt2", "gpt4", "tiktoken-r50k", "tiktoken-cl100k"])
def test_every_spelling_takes_the_c_scanner(spelling):
    """Encoding's fast path (one C call over the text's UTF-8) serves the registry's spelling, and
    tiktoken's (which files saved before carry) becomes it."""
    tok = RegexTokenizer(pattern=spelling)
    registry = NATIVE_PATTERNS[scanner_name(spelling)]
    assert tok.plain_pattern == tok.pattern == registry
    assert tok._scanner is not None and tok._scanner is native_scanner(spelling) is native_scanner(registry)
    assert tok.chunking.split is chunk_splitter(registry)


@pytest.mark.parametrize(("spelling", "name"), [(TIKTOKEN_GPT2_SPLIT_PATTERN, "gpt2"),
                                               (TIKTOKEN_CL100K_SPLIT_PATTERN, "gpt4"),
                                               (MINBPE_GPT4_SPLIT_PATTERN, "llama3")],
                         ids=["tiktoken-r50k", "tiktoken-cl100k", "minbpe-gpt4"])
def test_tokenizer_json_carries_the_registry_spelling(spelling, name, tmp_path):
    """A tokenizer made with another spelling is saved with the registry's (the same chunks), and
    a tokenizer.json written with tiktoken's spelling, as saved folders of the earlier registry
    hold it, reads back as the registry's pattern on the C scanner."""
    written, data = saved_split_regex(spelling, tmp_path)
    assert written == translate_pattern_for_onig(NATIVE_PATTERNS[name])
    old = tmp_path / "old.json"
    # as this version writes it, and as versions before portable anchors did (GPT-2's and cl100k's \s++$ as \s++\Z)
    earlier = translate_pattern_for_onig(spelling, portable_anchors=False)
    for regex_string in (translate_pattern_for_onig(spelling), earlier):
        data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = regex_string
        old.write_text(json.dumps(data), encoding="utf-8")
        back = conversion.from_tokenizer_json(old)
        assert back.plain_pattern == NATIVE_PATTERNS[name]
        assert back._scanner is not None


def test_tokenizer_json_with_gpt4s_earlier_anchor_reads_back_as_gpt4(tmp_path):
    """GPT-4's pattern as tokenizer.json files written before portable anchors hold it (``\\s+\\Z``)
    reads back as the registry's pattern, on the C scanner; this version writes its ``$`` as a
    lookahead that JavaScript reads too."""
    written, data = saved_split_regex("gpt4", tmp_path)
    assert r"\s+(?=\n?(?![\s\S]))|" in written and r"\Z" not in written
    earlier = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+\Z|\s*[\r\n]|\s+(?!\S)|\s"""
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = earlier
    (tmp_path / "old.json").write_text(json.dumps(data), encoding="utf-8")
    back = conversion.from_tokenizer_json(tmp_path / "old.json")
    assert back.plain_pattern == GPT4_SPLIT_PATTERN and back._scanner is not None


@pytest.mark.parametrize(("pattern", "ollama"), [(LLAMA3_SPLIT_PATTERN, "llama-bpe"), (QWEN2_SPLIT_PATTERN, "qwen2"),
                                                 (MINBPE_GPT4_SPLIT_PATTERN, "llama-bpe")],
                         ids=["llama3", "qwen2", "minbpe-gpt4"])
def test_ollama_recognises_the_saved_pattern(pattern, ollama, tmp_path):
    """Ollama's converter finds Llama 3's and Qwen2's pre-tokenizer by the Split regex we save
    (minbpe's GPT-4 spelling is saved as Llama 3's, whose chunks it cuts)."""
    _, data = saved_split_regex(pattern, tmp_path)
    assert OLLAMA_PRE_TOKENIZERS.get(ollama_digest(data)) == ollama


def test_saved_spellings_split_alike_in_javascripts_regexp():
    """Each built-in pattern as a tokenizer.json we write carries it, compiled by V8's own ``RegExp``
    as transformers.js 3.x compiles a Split regex (its ``(?i:...)`` groups written out; no Oniguruma
    rewriting, unlike tokenizers.js), cuts every document of mix-sample.txt (and texts ending in white
    space after a line break) into our pre-tokenizer's chunks."""
    saved = {name: translate_pattern_for_onig(pattern) for name, pattern in NATIVE_PATTERNS.items()}
    found = js_regexp_chunks(saved, TEXT_JS)
    for name, pattern in NATIVE_PATTERNS.items():
        assert not isinstance(found[name], str), f"{name}: {saved[name]!r} is refused by JavaScript: {found[name]}"
        split = chunk_splitter(pattern)
        assert [i for i, text in enumerate(TEXT_JS) if found[name][i] != split(text)] == [], name


def test_tiktoken_spellings_do_not_compile_in_javascripts_regexp():
    """Why the registry has its own spellings: tiktoken's possessive GPT-2 and cl100k strings (which
    tokenizer.json files saved by earlier versions carry) are a SyntaxError in JavaScript."""
    saved = {"r50k": translate_pattern_for_onig(TIKTOKEN_GPT2_SPLIT_PATTERN),
             "cl100k": translate_pattern_for_onig(TIKTOKEN_CL100K_SPLIT_PATTERN)}
    found = js_regexp_chunks(saved, ["x"])
    assert all(isinstance(error, str) and "Invalid regular expression" in error for error in found.values()), found
