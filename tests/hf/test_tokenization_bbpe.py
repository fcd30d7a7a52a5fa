"""BBPETokenizer behaves like a transformers tokenizer and gives the engine's ids (batches, padding, special tokens, pickling, datasets.map).

Runs on transformers 5.x and, through scripts/test.sh, on 4.57.
"""

from __future__ import annotations

import copy
import filecmp
import multiprocessing
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.hf import EOT, mix_docs, mix_text, trained_engine
from transformers import AddedToken, AutoTokenizer, BatchEncoding

from hf_bbpe.engine.chunking.byte_unicode import token_to_unicode
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def engine():
    return trained_engine()


@pytest.fixture()
def hf(engine):
    return BBPETokenizer.from_engine(engine, eos_token=EOT)


def _ids(encoding) -> list[int]:
    return encoding["input_ids"] if not isinstance(encoding, list) else encoding


def test_every_document_encodes_to_the_engine_ids(hf, engine):
    docs = mix_docs()
    expected = [engine.encode_ordinary(doc) for doc in docs]
    assert [hf(doc)["input_ids"] for doc in docs] == expected
    assert hf(docs)["input_ids"] == expected
    assert hf.encode(mix_text()) == engine.encode_ordinary(mix_text())


def test_the_direct_path_returns_what_prepare_for_model_returns(engine):
    # tokenizer(text) skips transformers' prepare_for_model; return_length=True takes it
    for hf in (BBPETokenizer.from_engine(engine, eos_token=EOT),
               BBPETokenizer.from_engine(engine, bos_token="<|bos|>", eos_token=EOT, add_bos_token=True,
                                         add_eos_token=True)):
        for doc in mix_docs()[:20] + [f"a{EOT}b"]:
            for options in ({}, {"return_attention_mask": False}, {"add_special_tokens": False}):
                direct = hf(doc, **options)
                general = hf(doc, return_length=True, **options)
                assert general.pop("length") == len(direct["input_ids"])
                assert type(direct) is type(general) and dict(direct) == dict(general)
                assert list(direct) == list(general)
                # the same object state as transformers' own constructor gives
                assert vars(direct) == vars(BatchEncoding(dict(direct)))
                assert direct.encodings is None and direct.n_sequences is None and direct.input_ids == direct["input_ids"]


def test_tokens_are_gpt2_spellings_and_every_view_agrees(hf, engine):
    for doc in mix_docs()[:40]:
        ids = engine.encode_ordinary(doc)
        tokens = hf.tokenize(doc)
        assert tokens == [token_to_unicode(engine.vocab[i]) for i in ids]
        assert hf.convert_tokens_to_ids(tokens) == ids
        assert hf.convert_ids_to_tokens(ids) == tokens
        assert hf.convert_tokens_to_string(tokens) == doc
        assert hf.decode(ids) == doc


def test_special_tokens_in_text_and_split_special_tokens(hf, engine):
    text = f"first document{EOT}second {EOT}{EOT} third"
    as_special = engine.encode(text, allowed_special="all")
    as_text = engine.encode(text, disallowed_special=())
    assert as_special.count(1030) == 3 and 1030 not in as_text
    assert hf(text)["input_ids"] == as_special
    assert hf.tokenize(text) == hf.convert_ids_to_tokens(as_special)
    # split_special_tokens is the switch for untrusted text, per call or per tokenizer
    assert hf(text, split_special_tokens=True)["input_ids"] == as_text
    assert hf([text, text], split_special_tokens=True)["input_ids"] == [as_text, as_text]
    assert hf.encode(text, split_special_tokens=True) == as_text
    assert hf.tokenize(text, split_special_tokens=True) == hf.convert_ids_to_tokens(as_text)
    untrusting = BBPETokenizer.from_engine(engine, eos_token=EOT, split_special_tokens=True)
    assert untrusting(text)["input_ids"] == as_text
    assert hf.decode(as_special) == text == hf.decode(as_text)
    assert hf.decode(as_special, skip_special_tokens=True) == text.replace(EOT, "")


@pytest.fixture(scope="module")
def module_hf(engine):
    return BBPETokenizer.from_engine(engine, eos_token=EOT)


@settings(max_examples=150, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_round_trips_with_the_engine_ids(module_hf, engine, text):
    ids = module_hf(text)["input_ids"]
    assert ids == engine.encode(text, allowed_special="all")
    assert module_hf.decode(ids) == text


def test_padding_needs_a_pad_token_and_then_pads_truncates_and_makes_tensors(engine):
    texts = ["a", "a longer text with more words in it than sixteen tokens, surely, yes, really"]
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    with pytest.raises(ValueError, match="pad"):
        hf(texts, padding=True)
    hf.pad_token = hf.eos_token  # GPT-2's story: reuse the end-of-text token
    assert hf(texts, padding=True)["input_ids"][0][-1] == 1030
    # or a real pad token: a new special token above the largest id
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT, pad_token="<|pad|>")
    assert hf.pad_token_id == 1031 and len(hf) == 1032 and hf.engine.special_tokens["<|pad|>"] == 1031
    rows = [engine.encode_ordinary(t)[:16] for t in texts]
    batch = hf(texts, padding=True, truncation=True, max_length=16)
    width = max(map(len, rows))
    assert batch["input_ids"] == [row + [1031] * (width - len(row)) for row in rows]
    assert batch["attention_mask"] == [[1] * len(row) + [0] * (width - len(row)) for row in rows]
    left = hf(texts, padding="max_length", max_length=20, truncation=True, padding_side="left")
    assert left["input_ids"][0] == [1031] * (20 - len(rows[0])) + rows[0]

    np_batch = hf(texts, padding=True, truncation=True, max_length=16, return_tensors="np")
    assert np_batch["input_ids"].shape == (2, width) and np_batch["input_ids"].tolist() == batch["input_ids"]
    torch = pytest.importorskip("torch")
    pt_batch = hf(texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
    assert isinstance(pt_batch["input_ids"], torch.Tensor) and pt_batch["input_ids"].tolist() == batch["input_ids"]
    assert pt_batch["attention_mask"].tolist() == batch["attention_mask"]


def test_bos_and_eos_follow_add_special_tokens(engine, tmp_path):
    hf = BBPETokenizer.from_engine(engine, bos_token="<|bos|>", eos_token=EOT, add_bos_token=True, add_eos_token=True)
    bos, eos = hf.bos_token_id, hf.eos_token_id
    assert (bos, eos) == (1031, 1030)
    a, b = engine.encode_ordinary("hello there"), engine.encode_ordinary("second part")
    assert hf("hello there")["input_ids"] == [bos] + a + [eos]
    assert hf("hello there", add_special_tokens=False)["input_ids"] == a
    pair = hf("hello there", "second part", return_special_tokens_mask=True)
    assert pair["input_ids"] == [bos] + a + [eos, bos] + b + [eos]
    assert pair["special_tokens_mask"] == [1] + [0] * len(a) + [1, 1] + [0] * len(b) + [1]
    truncated = hf("hello there " * 20, truncation=True, max_length=8)["input_ids"]
    assert len(truncated) == 8 and truncated[0] == bos and truncated[-1] == eos
    hf.save_pretrained(tmp_path)
    loaded = BBPETokenizer.from_pretrained(tmp_path)
    assert (loaded.add_bos_token, loaded.add_eos_token) == (True, True)
    assert loaded("hello there", "second part")["input_ids"] == pair["input_ids"]
    plain = BBPETokenizer.from_engine(engine, eos_token=EOT)
    assert plain("hello there")["input_ids"] == a  # GPT-2's default: nothing added
    with pytest.raises(ValueError, match="bos_token"):
        BBPETokenizer.from_engine(engine, add_bos_token=True)


def test_added_tokens_take_ids_above_the_largest_and_reach_the_engine():
    # specials at 1025 and 1027 leave holes at 1024 and 1026, which reserved special tokens fill;
    # new tokens go above them all
    engine = trained_engine(eot_id=None)
    engine.register_special_tokens({"<a>": 1025, "<b>": 1027})
    hf = BBPETokenizer.from_engine(engine)
    reserved = {"<|reserved_special_token_0|>": 1024, "<|reserved_special_token_1|>": 1026}
    assert len(hf) == len(hf.get_vocab()) == 1028
    assert hf.convert_tokens_to_ids(list(reserved)) == list(reserved.values())
    assert hf.add_tokens(["<x1>", "<x2>"]) == 2
    assert hf.convert_tokens_to_ids(["<x1>", "<x2>"]) == [1028, 1029]
    assert hf.add_tokens(["<x1>"]) == 0
    assert hf.add_special_tokens({"additional_special_tokens": ["<s1>"], "pad_token": "<pad>"}) == 2
    vocab = hf.get_vocab()
    assert len(set(vocab.values())) == len(vocab) == 1032 == len(hf)
    s1, pad = hf.convert_tokens_to_ids(["<s1>", "<pad>"])
    assert {s1, pad} == {1030, 1031} and hf.pad_token_id == pad
    assert hf.engine.special_tokens == {"<a>": 1025, "<b>": 1027, "<s1>": s1, "<pad>": pad, **reserved}
    assert "<x1>" not in hf.engine.special_tokens  # a normal added token is not an engine special
    text = "say <x1> and<s1>then <a>"
    ids = hf(text)["input_ids"]
    assert ids == (engine.encode_ordinary("say ") + [1028] + engine.encode_ordinary(" and") + [s1]
                   + engine.encode_ordinary("then ") + [1025])
    assert hf.decode(ids) == text
    assert hf.decode(ids, skip_special_tokens=True) == "say <x1> andthen "
    # split_special_tokens leaves added tokens that are not special alone, as tokenizers does
    assert hf(text, split_special_tokens=True)["input_ids"] == (
        engine.encode_ordinary("say ") + [1028] + engine.encode_ordinary(" and<s1>then <a>"))


def test_added_token_flags(engine):
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    hf.add_tokens([AddedToken("[L]", lstrip=True), AddedToken("[R]", rstrip=True),
                   AddedToken("word", single_word=True)])
    left, right, word = hf.convert_tokens_to_ids(["[L]", "[R]", "word"])
    assert hf("a  [L]b")["input_ids"] == engine.encode_ordinary("a") + [left] + engine.encode_ordinary("b")
    assert hf("a[R]  b")["input_ids"] == engine.encode_ordinary("a") + [right] + engine.encode_ordinary("b")
    assert hf("a word b")["input_ids"] == engine.encode_ordinary("a ") + [word] + engine.encode_ordinary(" b")
    assert hf("swordfish")["input_ids"] == engine.encode_ordinary("swordfish")


def test_chat_template_is_saved_and_applied(engine, tmp_path):
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT, additional_special_tokens=["<|im_start|>", "<|im_end|>"],
                                   chat_template=CHAT_TEMPLATE)
    messages = [{"role": "user", "content": "Wie spät ist es?"}, {"role": "assistant", "content": "Zeit für Tee."}]
    rendered = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == ("<|im_start|>user\nWie spät ist es?<|im_end|>\n<|im_start|>assistant\nZeit für Tee."
                        "<|im_end|>\n<|im_start|>assistant\n")
    expected = hf.engine.encode(rendered, allowed_special="all")
    assert expected.count(hf.convert_tokens_to_ids("<|im_start|>")) == 3
    assert _ids(hf.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)) == expected
    hf.save_pretrained(tmp_path)
    loaded = BBPETokenizer.from_pretrained(tmp_path)
    assert loaded.chat_template == CHAT_TEMPLATE
    assert _ids(loaded.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)) == expected
    fast = AutoTokenizer.from_pretrained(tmp_path)
    assert _ids(fast.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)) == expected


def test_get_vocab_spells_every_token_once(hf, engine):
    vocab = hf.get_vocab()
    # the engine's ids, and the unused ids 1024..1029 below its <|endoftext|> (1030) filled
    assert len(vocab) == len(engine.vocab) + 6 == len(set(vocab.values())) == len(hf) == 1031
    for idx, token in engine.vocab.items():
        spelled = token.decode() if idx in engine.special_tokens.values() else token_to_unicode(token)
        assert vocab[spelled] == idx
    assert [vocab[f"<|reserved_special_token_{n}|>"] for n in range(6)] == list(range(1024, 1030))
    assert hf.vocab_size == 1024


def test_pickling_and_a_process_pool(engine):
    hf = BBPETokenizer.from_engine(engine, eos_token=EOT, pad_token="<|pad|>")
    hf.add_tokens(["<x>"])
    docs = mix_docs()[:60] + ["with <x> and " + EOT]
    expected = [hf(doc)["input_ids"] for doc in docs]
    for clone in (pickle.loads(pickle.dumps(hf)), copy.deepcopy(hf)):
        assert [clone(doc)["input_ids"] for doc in docs] == expected
        assert len(clone) == len(hf) and clone.get_vocab() == hf.get_vocab()
    # a pool pickles the bound method, hence the tokenizer, for each batch of tasks (fork or not)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        assert pool.map(hf.encode, docs, chunksize=8) == expected


def test_datasets_map_with_two_processes(engine):
    import datasets

    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    docs = mix_docs()[:40]
    mapped = datasets.Dataset.from_dict({"text": docs}).map(lambda row: hf(row["text"]), num_proc=2)
    assert mapped["input_ids"] == [engine.encode_ordinary(doc) for doc in docs]


def test_a_batch_call_goes_the_engine_batch_path_and_returns_what_transformers_returns(engine, monkeypatch):
    """tokenizer(list of str) encodes its texts in one engine batch (threads, no GIL) and returns
    what transformers' general path returns (return_length=True takes that path), with added
    tokens, special tokens, empty texts and both split_special_tokens settings."""
    from hf_bbpe import Tokenizer

    hf = BBPETokenizer.from_engine(engine, bos_token="<|bos|>", eos_token=EOT, add_bos_token=True)
    hf.add_tokens(["<x>"])
    calls = []
    batch = Tokenizer.encode_batch
    monkeypatch.setattr(Tokenizer, "encode_batch", lambda self, texts, **o: calls.append(len(texts)) or batch(self, texts, **o))
    docs = mix_docs()[:30] + ["with <x> and " + EOT, "x" + EOT]
    for texts in (docs, docs + [""], tuple(docs)):
        for options in ({}, {"return_attention_mask": False}, {"add_special_tokens": False},
                        {"split_special_tokens": True}):
            calls.clear()
            direct = hf(texts, **options)
            assert calls and sum(calls) >= len(docs) - 2  # the plain texts went through one batch
            general = hf(texts, return_length=True, **options)
            general.pop("length")
            assert dict(direct) == dict(general) and list(direct) == list(general)
            assert direct["input_ids"] == [hf(text, **options)["input_ids"] if text else general["input_ids"][i]
                                           for i, text in enumerate(texts)]


def test_a_batch_call_leaves_the_garbage_collector_as_it_found_it(engine):
    """The batch path pauses Python's cyclic collector while it builds its lists (they hold only
    ints) and gives it back as it was: on when it was on, off when the caller had turned it off;
    the result is the general path's."""
    import gc

    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    docs = mix_docs()[:20]
    assert gc.isenabled()
    direct = hf(docs)
    assert gc.isenabled()
    gc.disable()
    try:
        assert dict(hf(docs)) == dict(direct)
        assert not gc.isenabled()
    finally:
        gc.enable()
    general = hf(docs, return_length=True)
    general.pop("length")
    assert dict(direct) == dict(general)


def test_datasets_map_batched_and_a_stable_fingerprint(engine):
    """datasets.map(batched=True) through the batch path; the tokenizer hashes the same every time
    (datasets pickles it for the fingerprint of the map function) and its spelled vocabulary,
    which is remade after unpickling, is not part of what is pickled."""
    import datasets
    from datasets.fingerprint import Hasher

    hf = BBPETokenizer.from_engine(engine, eos_token=EOT)
    docs = mix_docs()[:80]
    mapped = datasets.Dataset.from_dict({"text": docs}).map(lambda batch: hf(batch["text"]), batched=True,
                                                             batch_size=16)
    assert mapped["input_ids"] == [engine.encode_ordinary(doc) for doc in docs]
    before = Hasher.hash(hf)
    hf.convert_ids_to_tokens([1, 2, 3])  # makes the spelled vocabulary
    fresh = BBPETokenizer.from_engine(engine, eos_token=EOT)
    fresh(docs[0])  # in the same state otherwise (its added-token matcher made by a first call)
    assert Hasher.hash(hf) == before == Hasher.hash(fresh)
    clone = pickle.loads(pickle.dumps(hf))
    assert clone.get_vocab() == hf.get_vocab() and clone.convert_ids_to_tokens([1, 2, 3]) == hf.convert_ids_to_tokens([1, 2, 3])


def test_save_load_save_gives_identical_files(engine, tmp_path):
    hf = BBPETokenizer.from_engine(engine, bos_token="<|bos|>", eos_token=EOT, pad_token="<|pad|>",
                                   add_bos_token=True, chat_template=CHAT_TEMPLATE, model_max_length=4096,
                                   additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    hf.add_tokens(["<x>", AddedToken("[L]", lstrip=True)])
    first, second = tmp_path / "first", tmp_path / "second"
    hf.save_pretrained(first)
    loaded = BBPETokenizer.from_pretrained(first)
    loaded.save_pretrained(second)
    names = sorted(path.name for path in first.iterdir())
    assert names == sorted(path.name for path in second.iterdir())
    assert {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"} <= set(names)
    assert "added_tokens.json" not in names and not [name for name in names if name.endswith(".py")]
    mismatch = filecmp.cmpfiles(first, second, names, shallow=False)[1]
    assert mismatch == []
    text = "<|im_start|>user [L] <x> hello<|im_end|>"
    assert loaded(text)["input_ids"] == hf(text)["input_ids"]
    assert loaded.get_vocab() == hf.get_vocab() and len(loaded) == len(hf)


def test_bad_folders_raise_errors_naming_the_file_and_line(engine, tmp_path):
    BBPETokenizer.from_engine(engine).save_pretrained(tmp_path)
    merges = tmp_path / "merges.txt"
    lines = merges.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5] + " extra"
    merges.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges\.txt, line 6: expected two tokens"):
        BBPETokenizer.from_pretrained(tmp_path)
    lines[5] = "Ġzzzq Ġqqqz"
    merges.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 6: token 'Ġzzzq' is not in .*vocab\.json"):
        BBPETokenizer.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="vocab_file and merges_file"):
        BBPETokenizer()


def test_a_vocabulary_with_two_equal_tokens_is_refused():
    from hf_bbpe import Tokenizer

    # (a, bc) and (ab, c) both make "abc": fine for the engine, impossible in vocab.json
    tok = Tokenizer.from_merges({(97, 98): 256, (98, 99): 257, (256, 99): 258, (97, 257): 259}, pattern="gpt4")
    with pytest.raises(ValueError, match="tokens 258 and 259 are the same bytes b'abc'"):
        BBPETokenizer.from_engine(tok)


def test_saved_folder_has_no_private_paths(engine, tmp_path):
    BBPETokenizer.from_engine(engine).save_pretrained(tmp_path)
    config = (tmp_path / "tokenizer_config.json").read_text(encoding="utf-8")
    assert str(Path.home()) not in config and str(tmp_path) not in config
