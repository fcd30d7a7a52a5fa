"""Calling surgery again never wipes rows that training has filled (a re-run notebook cell).

For add_tokens_and_resize, resize_for_extension and extend_checkpoint, on tiny transformers
models built from configs: add or extend, train a few steps, call again, and every parameter is
bit-identical, while the call returns the same ids. A row that belongs to another token raises
and changes nothing; padding rows are still initialised; a model smaller than the base vocabulary
is refused.
"""

from __future__ import annotations

import copy
import re
import shutil
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from safetensors.torch import load_file  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
    PhiConfig,
    PhiForCausalLM,
)

from hf_bbpe import RegexTokenizer, surgery  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.transformers_compat]

DATA = Path(__file__).resolve().parents[1] / "data"
V = 50257  # GPT-2's vocabulary
CHAT = ["<|im_start|>", "<|im_end|>"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2tok")
    shutil.copy(DATA / "gpt2" / "encoder.json", folder / "vocab.json")
    shutil.copy(DATA / "gpt2" / "vocab.bpe", folder / "merges.txt")
    return folder


def fresh_tokenizer(tokenizer_dir):
    """GPT-2's tokenizer as loaded from its files: what a re-run cell that reloads it gets."""
    tok = GPT2TokenizerFast.from_pretrained(str(tokenizer_dir))
    assert len(tok) == V
    return tok


def make_model(arch: str, rows: int = V):
    torch.manual_seed(0)
    small = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=rows)
    if arch == "gpt2":  # tied head
        return GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=32, vocab_size=rows))
    if arch == "llama":  # untied head
        return LlamaForCausalLM(LlamaConfig(**small, num_key_value_heads=2, tie_word_embeddings=False))
    model = PhiForCausalLM(PhiConfig(**small))  # untied head with a bias
    with torch.no_grad():
        model.lm_head.bias.normal_(0, 0.5)
    return model


def train(model, ids, steps: int = 3) -> None:
    """A few AdamW steps on every parameter, on text that uses ``ids``: their rows move."""
    batch = torch.tensor([[ids[0], 11, 22, ids[-1], 33, ids[0], 44, ids[-1]]])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        model(batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()


def snapshot(model) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def assert_unchanged(model, before: dict[str, torch.Tensor]) -> None:
    after = model.state_dict()
    assert after.keys() == before.keys()
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), name


def embedding(model) -> torch.Tensor:
    return model.get_input_embeddings().weight.detach()


# ------------------------------------------------------------------- add_tokens_and_resize


@pytest.mark.parametrize("arch", ["gpt2", "llama", "phi"])
def test_add_tokens_again_after_training_changes_no_row(arch, tokenizer_dir):
    model, tok = make_model(arch), fresh_tokenizer(tokenizer_dir)
    new_ids = surgery.add_tokens_and_resize(model, tok, CHAT, special=True)
    initialised = embedding(model)[new_ids].clone()
    train(model, new_ids)
    assert not torch.equal(embedding(model)[new_ids], initialised)  # training moved the new rows
    before = snapshot(model)

    # the same tokenizer object (a re-run cell): the tokens this model got before come back with
    # their ids, for train_only_new_tokens, without a warning; the rows stay
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = surgery.add_tokens_and_resize(model, tok, CHAT, special=True)
    assert list(again) == list(new_ids) and again.tokens == CHAT and again.skipped == {}
    assert again.num_rows == V + 2 and len(tok) == V + 2
    assert_unchanged(model, before)
    # a token of the base vocabulary is still skipped, with a warning, and not given back
    with pytest.warns(UserWarning, match="already in the vocabulary"):
        mixed = surgery.add_tokens_and_resize(model, tok, ["<|endoftext|>", *CHAT])
    assert list(mixed) == list(new_ids) and mixed.skipped == {"<|endoftext|>": V - 1}
    assert_unchanged(model, before)

    # a re-run cell that reloaded the tokenizer: the tokens get their old ids, the rows stay
    reloaded = fresh_tokenizer(tokenizer_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = surgery.add_tokens_and_resize(model, reloaded, CHAT, special=True, init="zeros")
    assert list(again) == list(new_ids) and again.num_rows == V + 2
    assert reloaded.convert_tokens_to_ids(CHAT) == list(new_ids)
    assert_unchanged(model, before)


def test_a_row_of_another_token_raises_and_changes_nothing(tokenizer_dir):
    model = make_model("llama")
    new_ids = surgery.add_tokens_and_resize(model, fresh_tokenizer(tokenizer_dir), CHAT, special=True)
    train(model, new_ids)
    before = snapshot(model)
    reloaded = fresh_tokenizer(tokenizer_dir)
    message = re.escape(f"row {V} of the model already belongs to token '<|im_start|>'")
    with pytest.raises(ValueError, match=message):
        surgery.add_tokens_and_resize(model, reloaded, ["<tool>"])
    assert len(reloaded) == V
    assert_unchanged(model, before)


def test_padding_rows_are_still_initialised_next_to_kept_rows(tokenizer_dir):
    """Rows padded by pad_to_multiple_of belong to no token: a later token gets one, initialised."""
    model = make_model("llama")
    first = surgery.add_tokens_and_resize(model, fresh_tokenizer(tokenizer_dir), ["<a>"], pad_to_multiple_of=64)
    rows = model.get_input_embeddings().weight.shape[0]
    assert rows % 64 == 0 and rows > V + 2
    train(model, first)
    before = snapshot(model)
    again = surgery.add_tokens_and_resize(model, fresh_tokenizer(tokenizer_dir), ["<a>", "<b>"], init="zeros")
    assert list(again) == [V, V + 1] and again.num_rows == rows
    after = model.state_dict()
    for name, tensor in before.items():
        if tensor.shape[:1] == (rows,):  # embedding and head: row V kept, row V + 1 initialised
            assert torch.equal(after[name][: V + 1], tensor[: V + 1]), name
            assert torch.equal(after[name][V + 1], torch.zeros_like(tensor[V + 1])), name
            assert torch.equal(after[name][V + 2 :], tensor[V + 2 :]), name
        else:
            assert torch.equal(after[name], tensor), name


def test_a_model_loaded_from_its_folder_keeps_its_rows(tokenizer_dir, tmp_path):
    """No in-memory record after from_pretrained: the tokenizer saved beside the model says whose
    rows they are."""
    model, tok = make_model("gpt2"), fresh_tokenizer(tokenizer_dir)
    new_ids = surgery.add_tokens_and_resize(model, tok, CHAT, special=True)
    train(model, new_ids)
    model.save_pretrained(tmp_path / "trained")
    tok.save_pretrained(tmp_path / "trained")
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "trained")
    before = snapshot(loaded)
    again = surgery.add_tokens_and_resize(loaded, fresh_tokenizer(tokenizer_dir), CHAT, special=True)
    assert list(again) == list(new_ids)
    assert_unchanged(loaded, before)
    other = AutoModelForCausalLM.from_pretrained(tmp_path / "trained")
    with pytest.raises(ValueError, match=re.escape(f"the tokenizer saved in {tmp_path / 'trained'} says so")):
        surgery.add_tokens_and_resize(other, fresh_tokenizer(tokenizer_dir), ["<tool>"])
    assert_unchanged(other, before)


def test_the_record_follows_a_deep_copy(tokenizer_dir):
    model = make_model("gpt2")
    new_ids = surgery.add_tokens_and_resize(model, fresh_tokenizer(tokenizer_dir), CHAT, special=True)
    train(model, new_ids)
    twin = copy.deepcopy(model)
    before = snapshot(twin)
    surgery.add_tokens_and_resize(twin, fresh_tokenizer(tokenizer_dir), CHAT, special=True)
    assert_unchanged(twin, before)


# -------------------------------------------------------------------- resize_for_extension


@pytest.fixture(scope="module")
def base() -> RegexTokenizer:
    tok = RegexTokenizer("gpt4")
    tok.train((DATA / "text" / "taylorswift.txt").read_text(encoding="utf-8"), 256 + 200)
    return tok


@pytest.fixture(scope="module")
def mixed_docs() -> list[str]:
    return (DATA / "text" / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")


@pytest.fixture(scope="module")
def extended(base, mixed_docs):
    ext = base.extend(mixed_docs, 120)
    ext.register_special_tokens({"<|im_start|>": ext.n_vocab})
    return ext


@pytest.mark.parametrize("arch", ["gpt2", "phi"])
@pytest.mark.parametrize("init", ["parents", "subtoken_scaled", "zeros"])
def test_resize_for_extension_again_after_training_changes_no_row(base, extended, arch, init):
    model = make_model(arch, rows=base.n_vocab)
    new_ids = surgery.resize_for_extension(model, base, extended, init=init)
    train(model, new_ids)
    before = snapshot(model)
    parameter = model.get_input_embeddings().weight
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = surgery.resize_for_extension(model, base, extended, init=init)
    assert again == new_ids
    assert_unchanged(model, before)
    assert model.get_input_embeddings().weight is parameter  # an optimizer's references stay valid


def test_another_extension_on_the_same_rows_raises(base, extended, mixed_docs):
    model = make_model("gpt2", rows=base.n_vocab)
    new_ids = surgery.resize_for_extension(model, base, extended)
    train(model, new_ids)
    before = snapshot(model)
    other = base.extend(mixed_docs[::-1][:5], 120)  # other text: other merges under the same ids
    with pytest.raises(ValueError, match="already belongs to token .*an earlier surgery call on this model"):
        surgery.resize_for_extension(model, base, other)
    assert_unchanged(model, before)


def test_a_model_loaded_after_extension_is_left_alone_with_a_warning(base, extended, tmp_path):
    model = make_model("gpt2", rows=base.n_vocab)
    new_ids = surgery.resize_for_extension(model, base, extended)
    train(model, new_ids)
    model.save_pretrained(tmp_path / "extended")
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "extended")
    before = snapshot(loaded)
    with pytest.warns(UserWarning, match="taking the model to be extended already"):
        assert surgery.resize_for_extension(loaded, base, extended) == new_ids
    assert_unchanged(loaded, before)


def test_padding_rows_of_a_base_model_are_initialised(base, extended):
    """A base model with spare rows (as GPT-2 models padded to 50,304): new ids on them get the init."""
    rows = base.n_vocab + 7
    model = make_model("gpt2", rows=rows)
    new_ids = surgery.resize_for_extension(model, base, extended, init="zeros")
    weight = embedding(model)
    assert new_ids[0] == base.n_vocab and weight.shape[0] == max(extended.vocab) + 1
    assert torch.equal(weight[new_ids], torch.zeros(len(new_ids), weight.shape[1]))


def test_a_model_smaller_than_base_is_refused(base, extended):
    model = make_model("gpt2", rows=base.n_vocab - 1)
    with pytest.raises(ValueError, match=f"the model has {base.n_vocab - 1} embedding rows, but base uses ids up to"):
        surgery.resize_for_extension(model, base, extended)
    assert embedding(model).shape[0] == base.n_vocab - 1


# ------------------------------------------------------------------------ extend_checkpoint


def tensors(folder: Path) -> dict[str, torch.Tensor]:
    out = {}
    for path in sorted(folder.glob("*.safetensors")):
        out.update(load_file(path))
    return out


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_extend_checkpoint_again_after_training_changes_no_row(arch, tokenizer_dir, tmp_path):
    make_model(arch).save_pretrained(tmp_path / "base")
    fresh_tokenizer(tokenizer_dir).save_pretrained(tmp_path / "base")
    result = surgery.extend_checkpoint(tmp_path / "base", tmp_path / "extended", fresh_tokenizer(tokenizer_dir),
                                       CHAT, special=True)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "extended")
    initialised = embedding(model)[list(result)].clone()
    train(model, list(result))
    assert not torch.equal(embedding(model)[list(result)], initialised)
    model.save_pretrained(tmp_path / "trained")
    result.tokenizer.save_pretrained(tmp_path / "trained")
    trained = tensors(tmp_path / "trained")

    # with the checkpoint's own tokenizer: nothing to add
    own = AutoTokenizer.from_pretrained(tmp_path / "trained")
    with pytest.warns(UserWarning, match="already in the vocabulary"):
        again = surgery.extend_checkpoint(tmp_path / "trained", tmp_path / "again", own, CHAT, special=True)
    assert list(again) == []
    assert tensors(tmp_path / "again").keys() == trained.keys()
    assert all(torch.equal(tensors(tmp_path / "again")[k], v) for k, v in trained.items())

    # with the base tokenizer of the first call (a re-run cell): same ids, the trained rows stay
    again = surgery.extend_checkpoint(tmp_path / "trained", tmp_path / "rerun", fresh_tokenizer(tokenizer_dir),
                                      CHAT, special=True, init="zeros")
    assert list(again) == list(result)
    rerun = tensors(tmp_path / "rerun")
    assert rerun.keys() == trained.keys() and all(torch.equal(rerun[k], v) for k, v in trained.items())
    assert AutoTokenizer.from_pretrained(tmp_path / "rerun").convert_tokens_to_ids(CHAT) == list(result)

    # a token that the checkpoint's rows do not belong to: refused, nothing written
    with pytest.raises(ValueError, match=re.escape(f"the tokenizer saved in {tmp_path / 'trained'} says so")):
        surgery.extend_checkpoint(tmp_path / "trained", tmp_path / "other", fresh_tokenizer(tokenizer_dir), ["<x>"])
    assert not (tmp_path / "other").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "base", "extended", "rerun", "trained"]
