"""Special tokens, lone surrogates, decoding and bad ids behave as in tiktoken itself.

The reference is a ``tiktoken.Encoding`` built from the tokenizer's own ``mergeable_ranks()`` and
special tokens, so any difference is the engine's special-token or surrogate handling. minbpe's
``allowed_special`` values ("all", "none", "none_raise", a set) map onto tiktoken's arguments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_bbpe import DisallowedSpecialToken, RegexTokenizer, Tokenizer

TEXT_DIR = Path(__file__).resolve().parents[2] / "data" / "text"
SPECIALS = {"<|endoftext|>": 512, "<|fim_prefix|>": 513, "<|im_start|>": 600}  # 514..599: a hole


@pytest.fixture(scope="module")
def tok():
    tok = RegexTokenizer("gpt4")
    tok.train((TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n"), 512, progress=False)
    tok.register_special_tokens(SPECIALS)
    return tok


@pytest.fixture(scope="module")
def enc(tok):
    return tiktoken.Encoding(
        "hf_bbpe-test",
        pat_str=tok.pattern,
        mergeable_ranks=tok.mergeable_ranks(),
        special_tokens=dict(tok.special_tokens),
    )


# (our keyword arguments, tiktoken's keyword arguments for the same policy)
POLICIES = [
    ({}, {}),  # default: minbpe's "none_raise", tiktoken's allowed=set(), disallowed="all"
    ({"allowed_special": "none_raise"}, {}),
    ({"allowed_special": "all"}, {"allowed_special": "all"}),
    ({"allowed_special": "none"}, {"disallowed_special": ()}),
    ({"allowed_special": set()}, {"allowed_special": set()}),
    ({"allowed_special": {"<|endoftext|>"}}, {"allowed_special": {"<|endoftext|>"}}),
    ({"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
     {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()}),
    ({"disallowed_special": ()}, {"disallowed_special": ()}),
    ({"disallowed_special": {"<|im_start|>"}}, {"disallowed_special": {"<|im_start|>"}}),
    ({"allowed_special": "all", "disallowed_special": ()}, {"allowed_special": "all", "disallowed_special": ()}),
    ({"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": {"<|im_start|>"}},
     {"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": {"<|im_start|>"}}),
]


def outcome(encode, text, **kwargs):
    """("ids", ids) or ("raise", the special token the error names)."""
    try:
        return "ids", encode(text, **kwargs)
    except ValueError as exc:
        found = re.search(r"disallowed special token ('[^']*')", str(exc))
        return "raise", found and found.group(1)


FRAGMENTS = [*SPECIALS, "<|endof", "text|>", "<|", "|>", "hello", " world", "\n\n", "  ", "é", "日本", "🙂", "x"]
special_texts = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


@pytest.mark.parametrize("ours, theirs", POLICIES, ids=[repr(p[0]) for p in POLICIES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=special_texts)
def test_special_token_policies_equal_tiktoken(tok, enc, ours, theirs, text):
    assert outcome(tok.encode, text, **ours) == outcome(enc.encode, text, **theirs)


def test_default_raises_naming_the_token(tok):
    with pytest.raises(ValueError, match=re.escape("'<|im_start|>'")):
        tok.encode("hi <|im_start|> there <|endoftext|>", allowed_special={"<|endoftext|>"})


def test_minbpe_values(tok):
    text = "hello <|endoftext|> world"
    ordinary = tok.encode_ordinary
    assert tok.encode(text, allowed_special="all") == ordinary("hello ") + [512] + ordinary(" world")
    assert tok.encode(text, allowed_special="none") == tok.encode_ordinary(text)
    with pytest.raises(ValueError, match="endoftext"):
        tok.encode(text, allowed_special="none_raise")
    assert tok.encode(text, allowed_special={"<|endoftext|>"}) == tok.encode(text, allowed_special="all")


def test_bad_policy_values_are_errors(tok):
    with pytest.raises(ValueError, match="allowed_special"):
        tok.encode("x", allowed_special="some")
    with pytest.raises(ValueError, match=re.escape("'<|nope|>'")):
        tok.encode("x", allowed_special={"<|nope|>"})
    with pytest.raises(ValueError, match="disallowed_special"):
        tok.encode("x", disallowed_special="none")


def test_special_tokens_in_real_text_equal_tiktoken(tok, enc):
    docs = (TEXT_DIR / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")
    text = "<|endoftext|>".join(docs[:300]) + "<|im_start|>"
    ours = tok.encode(text, allowed_special="all")
    assert ours == enc.encode(text, allowed_special="all")
    assert ours.count(512) == 299 and ours[-1] == 600


def test_registering_taken_ids_is_an_error(tok):
    copy = RegexTokenizer("gpt4")
    copy.merges = tok.merges
    with pytest.raises(ValueError, match="already a normal token"):
        copy.register_special_tokens({"<|x|>": 300})
    copy.register_special_tokens({"<|a|>": 700})
    with pytest.raises(ValueError, match=re.escape("'<|a|>'")):
        copy.register_special_tokens({"<|b|>": 700})
    # registering a special token again under another id would leave a hole: refused
    with pytest.raises(ValueError, match=re.escape("special token '<|a|>' already has id 700, not 701")):
        copy.register_special_tokens({"<|a|>": 701})
    copy.register_special_tokens({"<|a|>": 700})  # the same id again is fine
    copy.special_tokens = {"<|a|>": 701}  # renumbering is explicit
    assert copy.special_tokens == {"<|a|>": 701}


def test_a_disallowed_special_token_raises_a_typed_error_naming_it(tok):
    """Callers (the CLI) catch the error by type and read the token, not the message."""
    import pickle

    from hf_bbpe import DisallowedSpecialToken

    with pytest.raises(DisallowedSpecialToken) as caught:
        tok.encode("a <|fim_prefix|> b <|endoftext|>", allowed_special={"<|endoftext|>"})
    assert caught.value.token == "<|fim_prefix|>"
    assert isinstance(caught.value, ValueError)
    again = pickle.loads(pickle.dumps(caught.value))  # as it comes back from an encode_batch worker
    assert again.token == "<|fim_prefix|>" and str(again) == str(caught.value)


@pytest.mark.parametrize("bad_id, problem", [
    (-1, "negative id -1"),
    (5.0, "5.0, which is not an int"),
    ("700", "'700', which is not an int"),
    (True, "True, which is not an int"),
    (2_000_000_000, "more than 2**20 above the largest normal id 511"),
])
def test_bad_special_ids_are_rejected_naming_the_token(tok, bad_id, problem):
    copy = RegexTokenizer("gpt4")
    copy.merges = tok.merges
    with pytest.raises(ValueError, match=re.escape(problem)) as caught:
        copy.register_special_tokens({"<|ok|>": 600, "<|bad|>": bad_id})
    assert "'<|bad|>'" in str(caught.value)
    assert copy.special_tokens == {}  # nothing registered
    with pytest.raises(ValueError, match=re.escape(problem)):
        RegexTokenizer.from_merges(tok.merges, pattern="gpt4", special_tokens={"<|bad|>": bad_id})


def test_the_bound_for_large_ids_and_its_override(tok):
    copy = RegexTokenizer("gpt4")
    copy.merges = tok.merges
    limit = 511 + 2**20
    copy.register_special_tokens({"<|edge|>": limit})  # the largest id allowed by default
    with pytest.raises(ValueError, match="allow_large_ids=True"):
        copy.register_special_tokens({"<|past|>": limit + 1})
    copy.register_special_tokens({"<|far|>": 2_000_000_000}, allow_large_ids=True)
    assert copy.special_tokens["<|far|>"] == 2_000_000_000
    copy.register_special_tokens({"<|u32|>": 2**32 - 1}, allow_large_ids=True)  # tiktoken's largest id
    assert copy.encode("a<|u32|>", allowed_special="all")[-1] == 2**32 - 1
    with pytest.raises(ValueError, match=r"'<\|u64\|>' has id 4294967296, above 4294967295 \(2\*\*32 - 1\): ids "
                                         r"are u32"):
        copy.register_special_tokens({"<|u64|>": 2**32}, allow_large_ids=True)
    import numpy as np

    copy.register_special_tokens({"<|np|>": np.int64(700)})  # numpy's integers are ints
    assert type(copy.special_tokens["<|np|>"]) is int


def test_a_bad_special_tokens_assignment_changes_nothing(tok):
    copy = RegexTokenizer("gpt4")
    copy.merges = tok.merges
    copy.special_tokens = {"<|a|>": 700}
    with pytest.raises(ValueError, match="already a normal token"):
        copy.special_tokens = {"<|b|>": 300}
    assert copy.special_tokens == {"<|a|>": 700}
    assert copy.encode("<|a|>", allowed_special="all") == [700]


def test_from_merges_and_from_file_build_the_class_they_are_called_on(tok, tmp_path):
    from hf_bbpe import BasicTokenizer, Tokenizer

    class MyTokenizer(RegexTokenizer):
        pass

    built = MyTokenizer.from_merges(tok.merges, pattern="gpt2")
    assert type(built) is MyTokenizer and built.pattern == RegexTokenizer("gpt2").pattern
    assert type(MyTokenizer.from_merges(tok.merges)) is MyTokenizer  # the class's default pattern
    assert type(BasicTokenizer.from_merges(tok.merges)) is BasicTokenizer
    with pytest.raises(ValueError, match="BasicTokenizer has no split pattern"):
        BasicTokenizer.from_merges(tok.merges, pattern="gpt4")
    assert type(Tokenizer.from_merges(tok.merges, pattern="gpt4")) is RegexTokenizer
    assert type(Tokenizer.from_merges(tok.merges)) is BasicTokenizer
    built.save(tmp_path / "mine")
    assert type(MyTokenizer.from_file(tmp_path / "mine.model")) is MyTokenizer
    assert type(Tokenizer.from_file(tmp_path / "mine.model")) is RegexTokenizer
    assert type(built.extend("hello hello", 2, progress=False)) is MyTokenizer


# ------------------------------------------------------------------- lone surrogates

SURROGATE_TEXTS = [
    "\ud800", "a\udfffb", "\ud83d\ude00", "x\ud83d", "\ude00\ud83d", "\ud83d<|endoftext|>\ude00", " \udc80\n",
]


@pytest.mark.parametrize("text", SURROGATE_TEXTS, ids=ascii)
def test_lone_surrogates_as_tiktoken(tok, enc, text):
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(whitelist_categories=("Cs", "Ll", "Zs", "Lo")), max_size=30)
       | st.lists(st.sampled_from(FRAGMENTS + ["\ud83d", "\ude00", "\udfff"]), max_size=10).map("".join))
def test_any_text_with_surrogates_as_tiktoken(tok, enc, text):
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert outcome(tok.encode, text, allowed_special="all") == outcome(enc.encode, text, allowed_special="all")


# -------------------------------------------------------------------------- decoding


def test_unknown_ids_are_named(tok):
    for bad in (tok.n_vocab, 10**6, 550, -1):  # past the end, far past, in the hole, negative
        named = rf"(?<![\w-]){re.escape(str(bad))}(?!\d)"
        for decode in (tok.decode, tok.decode_bytes):
            with pytest.raises(ValueError, match=named):
                decode([97, bad, 98])
        with pytest.raises(ValueError, match=named):
            tok.decode_single_token_bytes(bad)


def test_non_int_id_is_named(tok):
    with pytest.raises(ValueError, match="'a'"):
        tok.decode([97, "a"])


def test_decode_matches_tiktoken(tok, enc):
    assert tok.n_vocab == enc.n_vocab == 601
    for idx in [*range(512), *SPECIALS.values()]:
        assert tok.decode_single_token_bytes(idx) == enc.decode_single_token_bytes(idx)
    partial = [0xE6, 0x97]  # the first two bytes of a 3-byte character
    assert tok.decode(partial) == enc.decode(partial) == "\ufffd"
    assert tok.decode(partial + [0xA5]) == "日"
    with pytest.raises(UnicodeDecodeError):
        tok.decode(partial, errors="strict")
    ids = enc.encode("hello <|endoftext|> 日本", allowed_special="all")
    assert tok.decode(ids) == enc.decode(ids)
    assert tok.decode_bytes(ids) == enc.decode_bytes(ids)


def test_normalized_special_tokens_are_checked_and_follow_the_special_tokens(tok):
    """Only registered special tokens can be marked; replacing the special tokens drops the marks
    of tokens that are gone; with no normalizer a marked token is found as written, after the others."""
    import copy

    tok = copy.deepcopy(tok)
    with pytest.raises(ValueError, match=r"normalized special token '<\|nope\|>' is not a registered special token"):
        tok.normalized_special_tokens = {"<|nope|>"}
    tok.register_special_tokens({"<|a|>b": 601, "b<|c|>": 602})
    tok.normalized_special_tokens = {"<|a|>b", "<|im_start|>"}
    # "b<|c|>" is found first (the text as given), so the overlapping "<|a|>b" is not
    assert tok.encode("x<|a|>b<|c|>", allowed_special="all")[-1] == 602
    assert tok.encode("x<|a|>b<|c|>", allowed_special="all")[-2:] != [601, 602]
    assert tok.encode("<|a|>b <|im_start|>", allowed_special="all")[::2] == [601, 600]
    with pytest.raises(ValueError, match=r"'<\|a\|>b'"):
        tok.encode("x<|a|>by")
    tok.special_tokens = {"<|a|>b": 601}
    assert tok.normalized_special_tokens == {"<|a|>b"}


def test_the_same_policy_object_after_registering_tokens_sees_them():
    """A call keeps the last policy by the identity of its arguments; registering special tokens
    drops it, so that the same arguments then allow (or refuse) the new tokens."""
    tok = Tokenizer.from_ranks({bytes([i]): i for i in range(256)}, pattern="gpt4")
    policy = "all"
    assert tok.encode_to_numpy("a <|x|>", allowed_special=policy).tolist() == list(b"a <|x|>")
    assert tok.encode("a <|x|>", allowed_special=policy) == list(b"a <|x|>")
    tok.register_special_tokens({"<|x|>": 300})
    assert tok.encode_to_numpy("a <|x|>", allowed_special=policy).tolist() == [97, 32, 300]
    assert tok.encode("a <|x|>", allowed_special=policy) == [97, 32, 300]
    with pytest.raises(DisallowedSpecialToken, match=re.escape("<|x|>")):
        tok.encode_to_numpy("a <|x|>")
