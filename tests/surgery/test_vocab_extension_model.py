"""The model side of vocabulary extension: surgery.resize_for_extension grows a model for the new
merges, each row initialised from its parents (or its old sub-tokens), old rows untouched, and
the model then agrees with the extended tokenizer wrapped for transformers."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from transformers import GPT2Config, GPT2LMHeadModel, PhiConfig, PhiForCausalLM  # noqa: E402

from hf_bbpe import RegexTokenizer, surgery  # noqa: E402
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer  # noqa: E402

pytestmark = pytest.mark.torch

DATA = Path(__file__).resolve().parents[1] / "data" / "text"
ENGLISH = (DATA / "taylorswift.txt").read_text(encoding="utf-8")
MIXED_DOCS = (DATA / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n")


@pytest.fixture(scope="module")
def base() -> RegexTokenizer:
    tok = RegexTokenizer("gpt4")
    tok.train(ENGLISH, 256 + 200)
    tok.register_special_tokens({"<|endoftext|>": 456})
    return tok


@pytest.fixture(scope="module")
def extended(base):
    ext = base.extend(MIXED_DOCS, 150)
    ext.register_special_tokens({"<|im_start|>": ext.n_vocab})
    return ext


def make_model(arch: str, rows: int):
    torch.manual_seed(0)
    if arch == "gpt2":  # tied head
        return GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=32, vocab_size=rows))
    model = PhiForCausalLM(PhiConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, vocab_size=rows))  # untied head with a bias
    with torch.no_grad():
        model.lm_head.bias.normal_(0, 0.5)
    return model


def grown(model) -> dict[str, torch.Tensor]:
    head = model.get_output_embeddings()
    out = {"embedding": model.get_input_embeddings().weight.detach().double()}
    if head.weight is not model.get_input_embeddings().weight:
        out["head"] = head.weight.detach().double()
    if head.bias is not None:
        out["bias"] = head.bias.detach().double()
    return out


def parents_mix(ext, base, idx: int) -> dict[int, float]:
    """The old ids behind a new token and their weights, by walking its merge tree (halving per level)."""
    parents = {new: pair for pair, new in ext.merges.items() if new not in base.vocab}
    if idx not in parents:
        return {idx: 1.0}
    mix: dict[int, float] = {}
    for parent in parents[idx]:
        for src, w in parents_mix(ext, base, parent).items():
            mix[src] = mix.get(src, 0.0) + w / 2
    return mix


@pytest.mark.parametrize("arch", ["gpt2", "phi"])
def test_parents_init_and_agreement_with_the_extended_tokenizer(base, extended, arch):
    hf_old = BBPETokenizer.from_engine(base)
    model = make_model(arch, len(hf_old))
    before = {name: t.clone() for name, t in grown(model).items()}
    new_ids = surgery.resize_for_extension(model, base, extended, init="parents")

    hf_new = BBPETokenizer.from_engine(extended)
    assert new_ids == sorted(set(extended.vocab) - set(base.vocab))
    assert len(hf_new) == model.get_input_embeddings().weight.shape[0] == model.config.vocab_size
    after = grown(model)
    old_rows = len(hf_old)
    new_merged = [i for i in new_ids if i not in extended.special_tokens.values()]
    deep = [i for i in new_merged if any(p in new_merged for pair, m in extended.merges.items() if m == i for p in pair)]
    assert deep, "the corpus should give merges built on new merges"
    for name, old in before.items():
        assert torch.equal(after[name][:old_rows], old), name
        for idx in new_merged:
            mix = parents_mix(extended, base, idx)
            expected = sum(old[src] * w for src, w in mix.items())
            assert torch.allclose(after[name][idx], expected, atol=1e-6), (name, idx)
        special = extended.special_tokens["<|im_start|>"]
        assert torch.allclose(after[name][special], old[:old_rows].mean(0), atol=1e-6)
    # the extended tokenizer's ids run through the grown model
    ids = hf_new("some new text: def tokenize(self): return 1", return_tensors="pt")["input_ids"]
    assert int(ids.max()) >= old_rows
    with torch.no_grad():
        assert model(ids).logits.shape[-1] == len(hf_new)


def test_subtoken_mean_uses_the_old_segmentation(base, extended):
    model = make_model("gpt2", len(BBPETokenizer.from_engine(base)))
    old = model.get_input_embeddings().weight.detach().clone().double()
    new_ids = surgery.resize_for_extension(model, base, extended, init="subtoken_mean")
    weight = model.get_input_embeddings().weight.detach().double()
    for idx in new_ids:
        if idx in extended.special_tokens.values():
            continue
        pieces = base.encode_single_piece(extended.vocab[idx])
        assert len(pieces) >= 2 and base.decode_bytes(pieces) == extended.vocab[idx]
        assert torch.allclose(weight[idx], old[pieces].mean(0), atol=1e-6), idx


@pytest.mark.parametrize("arch", ["gpt2", "phi"])
@pytest.mark.parametrize("init", surgery.SUBTOKEN_INITS)
def test_subtoken_inits_damp_only_the_output_rows(base, extended, arch, init):
    # Input rows (Phi's untied embedding): the mean of the old sub-tokens' rows (FVT). Output rows
    # (Phi's head and bias, GPT-2's tied embedding): that mean, damped by the init's OutputRows.
    # The new special token has no sub-tokens: the plain mean of the old rows everywhere.
    hf_old = BBPETokenizer.from_engine(base)
    model = make_model(arch, len(hf_old))
    before = {name: t.clone() for name, t in grown(model).items()}
    new_ids = surgery.resize_for_extension(model, base, extended, init=init)
    rule = surgery.SUBTOKEN_OUTPUT_ROWS[init]
    after = grown(model)
    old_rows = len(hf_old)
    special = extended.special_tokens["<|im_start|>"]
    assert special in new_ids
    for name, old in before.items():
        output = name != "embedding" or arch == "gpt2"
        mean = old[:old_rows].mean(0)
        assert torch.equal(after[name][:old_rows], old), name
        assert torch.allclose(after[name][special], mean, atol=1e-6), name
        for idx in new_ids:
            if idx == special:
                continue
            pieces = base.encode_single_piece(extended.vocab[idx])
            expected = old[pieces].mean(0)
            if output:
                expected = rule.scale * ((1 - rule.mean_share) * expected + rule.mean_share * mean)
            assert torch.allclose(after[name][idx], expected, atol=1e-6), (name, idx)
    if arch == "gpt2":
        assert model.get_output_embeddings().weight is model.get_input_embeddings().weight


def test_not_an_extension_is_refused(base):
    other = RegexTokenizer("gpt4")
    other.train(" ".join(MIXED_DOCS), 256 + 50)
    model = make_model("gpt2", 500)
    with pytest.raises(ValueError, match="not an extension of base"):
        surgery.resize_for_extension(model, base, other)
    with pytest.raises(ValueError, match="unknown init"):
        surgery.resize_for_extension(model, base, base, init="parent")
    assert model.get_input_embeddings().weight.shape[0] == 500


def test_llama3_extension_grows_a_llama_model():
    """Llama 3 (tiktoken ranks, 678 tokens no merge builds) extended with new merges: the model
    grows by the new ids only, old rows untouched, new rows the mean of their parents' rows,
    and the extended tokenizer's ids run through it."""
    from tests.support.families import LLAMA3_MODEL
    from transformers import LlamaConfig, LlamaForCausalLM

    import conversion

    base = conversion.load(LLAMA3_MODEL)
    code = [doc for doc in MIXED_DOCS if "def " in doc]
    extended = base.extend(code, 20, progress=False)
    hf_old = BBPETokenizer.from_engine(base)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=1, num_key_value_heads=1, vocab_size=len(hf_old)))
    before = {name: t.clone() for name, t in grown(model).items()}
    new_ids = surgery.resize_for_extension(model, base, extended, init="parents")
    assert new_ids == sorted(set(extended.vocab) - set(base.vocab)) and len(new_ids) == 20
    assert new_ids[0] == len(hf_old) == 128256
    after = grown(model)
    for name, old in before.items():
        assert torch.equal(after[name][: len(hf_old)], old), name
        for idx in new_ids:
            mix = parents_mix(extended, base, idx)
            assert torch.allclose(after[name][idx], sum(old[src] * w for src, w in mix.items()), atol=1e-6)
    hf_new = BBPETokenizer.from_engine(extended)
    text = next(doc for doc in code if set(extended.encode_ordinary(doc)) & set(new_ids))
    ids = hf_new(text, return_tensors="pt")["input_ids"]
    assert int(ids.max()) >= len(hf_old)
    with torch.no_grad():
        assert model(ids).logits.shape[-1] == len(hf_new)


def test_readme_documents_every_init_and_the_measured_default():
    """The docs' "Which init" table (docs/extension.md) has a row for every init of add_tokens_and_resize and
    resize_for_extension, and marks each function's default where the code has it."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "extension.md").read_text(encoding="utf-8")
    table = readme.split("## Which `init`", 1)[1].split("\n\n| ", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0].strip('`"')] = cells
    assert set(surgery.EXTENSION_INIT_METHODS) | set(surgery.TOKEN_INIT_METHODS) <= set(rows)
    add_default = [name for name, cells in rows.items() if cells[2] == "**default**"]
    extension_default = [name for name, cells in rows.items() if cells[3] == "**default**"]
    assert extension_default == [surgery.EXTENSION_DEFAULT_INIT]
    assert add_default == [surgery.add_tokens_and_resize.__kwdefaults__["init"]]
    for name, cells in rows.items():
        assert (cells[2] != "no") == (name in surgery.TOKEN_INIT_METHODS or name.startswith("{")), name
        assert (cells[3] != "no") == (name in surgery.EXTENSION_INIT_METHODS), name
