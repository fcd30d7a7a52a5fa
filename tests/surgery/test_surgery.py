"""In-memory surgery: adding tokens grows embedding and LM head, keeps every old value, inits the
new rows as asked, and train_only_new_tokens moves nothing but the new rows (AdamW included)."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2Model,
    GPT2TokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
    PhiConfig,
    PhiForCausalLM,
)

from hf_bbpe import surgery  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.transformers_compat]

GPT2_DATA = Path(__file__).resolve().parents[1] / "data" / "gpt2"
REPO = Path(__file__).resolve().parents[2]
V = 50257  # GPT-2 vocabulary size
CHAT = ["<|im_start|>", "<|im_end|>"]


@pytest.fixture(scope="module")
def base_tokenizer(tmp_path_factory):
    # transformers 5 ignores GPT2TokenizerFast(vocab_file=..., merges_file=...); from_pretrained works in both.
    folder = tmp_path_factory.mktemp("gpt2tok")
    shutil.copy(GPT2_DATA / "encoder.json", folder / "vocab.json")
    shutil.copy(GPT2_DATA / "vocab.bpe", folder / "merges.txt")
    tok = GPT2TokenizerFast.from_pretrained(str(folder))
    assert len(tok) == V
    return tok


@pytest.fixture
def tokenizer(base_tokenizer):
    return copy.deepcopy(base_tokenizer)


def make_model(arch: str, vocab_size: int = V):
    torch.manual_seed(0)
    if arch == "gpt2":  # tied head
        config = GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=64, vocab_size=vocab_size,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # fmt: skip
        model = GPT2LMHeadModel(config)
    elif arch == "llama":  # untied head
        config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                             num_key_value_heads=2, vocab_size=vocab_size, tie_word_embeddings=False)  # fmt: skip
        model = LlamaForCausalLM(config)
    else:  # untied head with a bias
        config = PhiConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           vocab_size=vocab_size, resid_pdrop=0.0, embd_pdrop=0.0)  # fmt: skip
        model = PhiForCausalLM(config)
        with torch.no_grad():  # a random bias, so that "unchanged" and "mean" mean something
            model.lm_head.bias.normal_(0, 0.5)
    return model.eval()


ARCHS = ["gpt2", "llama", "phi"]


def matrices(model):
    """name -> tensor of the matrices that grow (the tied head counts once)."""
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    out = {"embedding": emb.weight.detach().clone()}
    if head.weight is not emb.weight:
        out["head"] = head.weight.detach().clone()
    if getattr(head, "bias", None) is not None:
        out["bias"] = head.bias.detach().clone()
    return out


def other_params(model):
    grown = {id(t) for t in (model.get_input_embeddings().weight, model.get_output_embeddings().weight,
                             getattr(model.get_output_embeddings(), "bias", None))}  # fmt: skip
    return {n: p.detach().clone() for n, p in model.named_parameters() if id(p) not in grown}


@pytest.mark.parametrize("arch", ARCHS)
def test_shapes_old_rows_config_and_ties(arch, tokenizer):
    model = make_model(arch)
    before, others = matrices(model), other_params(model)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT, special=True)

    assert list(new_ids) == [V, V + 1] and new_ids.tokens == CHAT and new_ids.skipped == {}
    assert len(tokenizer) == V + 2 == new_ids.num_rows == model.config.vocab_size
    after = matrices(model)
    assert after.keys() == before.keys()
    for name, old in before.items():
        assert after[name].shape[0] == V + 2
        assert torch.equal(after[name][:V], old), name
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    assert (head.weight is emb.weight) == (arch == "gpt2")
    assert emb.num_embeddings == head.out_features == V + 2
    now = other_params(model)
    assert now.keys() == others.keys() and all(torch.equal(now[n], others[n]) for n in now)
    assert tokenizer.convert_tokens_to_ids(CHAT) == [V, V + 1]


def readme_logits_tolerance() -> float:
    """The tolerance the docs state for logits over the old vocabulary after surgery."""
    text = " ".join((REPO / "docs" / "extension.md").read_text(encoding="utf-8").split())
    found = re.search(r"logits over the old vocabulary equal the old ones within ([0-9.e-]+) times the "
                      r"largest \|logit\|", text)
    assert found, "docs/extension.md no longer states the logits tolerance of surgery"
    assert "old rows of the embedding, the head and its bias, and every other parameter, stay bit-identical" in text
    return float(found.group(1))


@pytest.mark.parametrize("arch", ARCHS)
def test_logits_of_old_tokens_within_readme_tolerance(arch, base_tokenizer):
    """What the README claims: rows bit-identical (test_shapes_old_rows_config_and_ties), logits over
    the old vocabulary equal within the stated tolerance, for 1-token inputs too (the head's matrix
    product on the new shape may take another BLAS kernel: about 1e-8 apart in float32)."""
    tolerance = readme_logits_tolerance()
    for text in ["Hello", "Hello world", "Hello world, this is a test of old tokens."]:
        tokenizer = copy.deepcopy(base_tokenizer)
        model = make_model(arch)
        ids = torch.tensor([tokenizer.encode(text)])
        with torch.no_grad():
            before = model(ids).logits
        surgery.add_tokens_and_resize(model, tokenizer, CHAT, special=True, init="normal")
        with torch.no_grad():
            after = model(ids).logits
        assert after.shape[-1] == V + 2
        assert (after[..., :V] - before).abs().max() <= tolerance * before.abs().max(), (arch, text)


@pytest.mark.parametrize("arch", ["llama", "phi"])
def test_init_mean_uses_each_matrix_own_rows(arch, tokenizer):
    model = make_model(arch)
    before = matrices(model)
    surgery.add_tokens_and_resize(model, tokenizer, CHAT, init="mean")
    for name, new in matrices(model).items():
        old = before[name].double()
        expected = old.mean(0).to(before[name].dtype)
        assert torch.equal(new[V], expected) and torch.equal(new[V + 1], expected), name


def test_init_subtoken_mean(tokenizer):
    model = make_model("llama")
    before = matrices(model)
    pieces = {t: tokenizer.encode(t) for t in ["<|im_start|>", " photosynthesis"]}
    assert all(len(p) > 1 for p in pieces.values())
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, list(pieces), init="subtoken_mean")
    after = matrices(model)
    for (token, ids), new_id in zip(pieces.items(), new_ids, strict=True):
        for name in ("embedding", "head"):
            expected = before[name][ids].double().mean(0).float()
            assert torch.equal(after[name][new_id], expected), (token, name)
    assert surgery.subtoken_sources(tokenizer, [" photosynthesis"]) == {" photosynthesis": [new_ids[1]]}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("init", ["subtoken_scaled", "subtoken_damped"])
def test_damped_subtoken_inits_treat_input_and_output_rows_apart(arch, init, tokenizer):
    # An untied input embedding gets the plain sub-token mean; the output matrices (LM head and its
    # bias, or GPT-2's tied embedding) get it scaled or pulled toward the mean row.
    model = make_model(arch)
    before = matrices(model)
    rule = surgery.SUBTOKEN_OUTPUT_ROWS[init]
    tokens = [" photosynthesis", " Kernspaltung", "<|im_start|>"]
    pieces = [tokenizer.encode(t) for t in tokens]
    assert all(len(p) > 1 for p in pieces)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, tokens, init=init)
    after = matrices(model)
    tied = arch == "gpt2"
    for name, old in before.items():
        old64 = old.double()
        output = name != "embedding" or tied
        for ids, new_id in zip(pieces, new_ids, strict=True):
            plain = old64[ids].mean(0)
            expected = rule.scale * ((1 - rule.mean_share) * plain + rule.mean_share * old64.mean(0)) if output else plain
            assert torch.equal(after[name][new_id], expected.to(old.dtype)), (name, new_id)
            assert torch.equal(after[name][new_id], plain.to(old.dtype)) == (not output), (name, new_id)
        assert torch.equal(after[name][:V], old), name
    assert (model.get_output_embeddings().weight is model.get_input_embeddings().weight) == tied


def test_init_explicit_sources_and_fallback_mean(tokenizer):
    model = make_model("phi")
    before = matrices(model)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, ["<m>", "<x>"], init={"<m>": [10, 20, 20]})
    after = matrices(model)
    for name, old in before.items():
        assert torch.equal(after[name][new_ids[0]], old[[10, 20, 20]].double().mean(0).to(old.dtype)), name
        assert torch.equal(after[name][new_ids[1]], old.double().mean(0).to(old.dtype)), name


def test_init_normal_is_seeded_with_the_old_std(tokenizer):
    tokens = [f"<n{i}>" for i in range(64)]
    results = []
    for seed in (0, 0, 1):
        model = make_model("llama")
        surgery.add_tokens_and_resize(model, copy.deepcopy(tokenizer), tokens, init="normal", seed=seed)
        results.append(matrices(model))
    old_std = matrices(make_model("llama"))["embedding"].double().std().item()
    new_rows = results[0]["embedding"][V:]
    assert torch.equal(results[0]["embedding"], results[1]["embedding"])
    assert torch.equal(results[0]["head"], results[1]["head"])
    assert not torch.equal(results[0]["embedding"][V:], results[2]["embedding"][V:])
    assert not torch.equal(results[0]["embedding"][V:], results[0]["head"][V:])  # own draws per matrix
    assert abs(new_rows.double().std().item() / old_std - 1) < 0.1
    assert abs(new_rows.double().mean().item()) < 0.1 * old_std


def test_init_zeros(tokenizer):
    model = make_model("phi")
    surgery.add_tokens_and_resize(model, tokenizer, CHAT, init="zeros")
    for name, tensor in matrices(model).items():
        assert torch.equal(tensor[V:], torch.zeros_like(tensor[V:])), name


def test_pad_to_multiple_of_pads_with_the_mean(tokenizer):
    model = make_model("llama")
    before = matrices(model)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT, init="subtoken_mean", pad_to_multiple_of=64)
    rows = -(-(V + 2) // 64) * 64
    assert new_ids.num_rows == rows == model.config.vocab_size and len(tokenizer) == V + 2
    after = matrices(model)
    for name, old in before.items():
        assert after[name].shape[0] == rows
        mean = old.double().mean(0).float()
        assert all(torch.equal(after[name][r], mean) for r in range(V + 2, rows)), name
        assert not torch.equal(after[name][V], mean)  # the real new tokens got their subtoken mean


def test_padding_rows_of_the_model_are_reused(tokenizer):
    # Models often have more rows than tokens; a new token takes the first unused row, which is
    # re-initialised (from the rows of real tokens only) while every other row stays as it was.
    model = make_model("llama", vocab_size=V + 7)
    before = matrices(model)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, ["<new>"], init="mean")
    assert list(new_ids) == [V] and new_ids.num_rows == V + 7
    for name, new in matrices(model).items():
        old = before[name]
        assert new.shape == old.shape
        assert torch.equal(new[V], old[:V].double().mean(0).float()), name
        assert torch.equal(new[:V], old[:V]) and torch.equal(new[V + 1 :], old[V + 1 :]), name


def test_existing_token_is_skipped_with_a_warning(tokenizer):
    model = make_model("gpt2")
    with pytest.warns(UserWarning, match=re.escape("'<|endoftext|>' is already in the vocabulary (id 50256)")):
        new_ids = surgery.add_tokens_and_resize(model, tokenizer, ["<|endoftext|>", "<|im_start|>"])
    assert list(new_ids) == [V] and new_ids.tokens == ["<|im_start|>"]
    assert new_ids.skipped == {"<|endoftext|>": V - 1}
    assert len(tokenizer) == V + 1 == model.get_input_embeddings().weight.shape[0]


def test_roles_set_tokenizer_config_and_generation_config(tokenizer):
    model = make_model("llama")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declaring a role on an existing token is no skip
        new_ids = surgery.add_tokens_and_resize(
            model, tokenizer, CHAT, special=True, roles={"pad": "<|pad|>", "eos": "<|im_end|>", "bos": "<|endoftext|>"}
        )
    assert new_ids.tokens == CHAT + ["<|pad|>"] and list(new_ids) == [V, V + 1, V + 2]
    assert new_ids.role_ids == {"pad": V + 2, "eos": V + 1, "bos": V - 1}
    assert (tokenizer.pad_token, tokenizer.eos_token, tokenizer.bos_token) == ("<|pad|>", "<|im_end|>", "<|endoftext|>")
    for config in (model.config, model.generation_config):
        assert (config.pad_token_id, config.eos_token_id, config.bos_token_id) == (V + 2, V + 1, V - 1)


def test_special_tokens_are_atomic_and_skippable(tokenizer):
    model = make_model("gpt2")
    special = surgery.add_tokens_and_resize(model, tokenizer, ["<|im_start|>"], special=True)
    plain = surgery.add_tokens_and_resize(model, tokenizer, ["<plain>"], special=False)
    ids = tokenizer.encode("<|im_start|>hi<plain>")
    assert ids == [special[0], tokenizer.encode("hi")[0], plain[0]]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "hi<plain>"
    assert model.get_input_embeddings().weight.shape[0] == V + 2


def test_bad_input_changes_nothing(tokenizer):
    model = make_model("llama")
    before = matrices(model)
    cases = [
        (dict(init="median"), "unknown init 'median'"),
        (dict(init={"<zz>": [1]}), "init names token '<zz>'"),
        (dict(init={"<a>": [V + 5]}), f"token '<a>': source id {V + 5} has no row"),
        (dict(roles={"sep": "<a>"}), "unknown role 'sep'"),
        (dict(pad_to_multiple_of=0), "pad_to_multiple_of must be a positive int"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            surgery.add_tokens_and_resize(model, tokenizer, ["<a>", "<b>"], **kwargs)
        assert len(tokenizer) == V
    with pytest.raises(ValueError, match="no output embeddings"):
        base_model = GPT2Model(GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=V))
        surgery.add_tokens_and_resize(base_model, tokenizer, ["<a>"])
    assert len(tokenizer) == V
    after = matrices(model)
    assert all(torch.equal(after[n], before[n]) for n in before)


def test_python_tokenizer_works_too(base_tokenizer):
    # GPT2Tokenizer is the pure-Python ("slow") tokenizer on transformers 4.57 (an alias of the fast
    # one on 5.x); the project's own BBPETokenizer is a PreTrainedTokenizer like it.
    from transformers import GPT2Tokenizer

    slow = GPT2Tokenizer.from_pretrained(base_tokenizer.name_or_path)
    model = make_model("llama")
    before = matrices(model)
    with pytest.warns(UserWarning, match="already in the vocabulary"):
        new_ids = surgery.add_tokens_and_resize(
            model, slow, ["<|endoftext|>", "<|im_start|>", " photosynthesis"], special=True,
            init="subtoken_mean", roles={"pad": "<|pad|>"},
        )  # fmt: skip
    assert list(new_ids) == [V, V + 1, V + 2] and len(slow) == V + 3 == model.config.vocab_size
    assert slow.encode("<|im_start|> photosynthesis<|pad|>") == [V, V + 1, V + 2]
    pieces = base_tokenizer.encode(" photosynthesis")
    assert torch.equal(matrices(model)["embedding"][V + 1], before["embedding"][pieces].double().mean(0).float())
    assert model.config.pad_token_id == V + 2 and slow.pad_token == "<|pad|>"


def test_clear_import_error_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"  # makes `import torch` fail, as without the extra
        "import hf_bbpe\n"
        "try:\n    from hf_bbpe import surgery\nexcept ImportError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hf_bbpe.surgery needs PyTorch: pip install 'hf_bbpe[torch]'" in proc.stdout


def test_resize_embeddings_by_row_id():
    model = make_model("phi", vocab_size=300)
    before = matrices(model)
    surgery.resize_embeddings(model, 304, sources={300: [1, 2], 301: [], 299: [7]}, init="zeros")
    after = matrices(model)
    for name, old in before.items():
        assert torch.equal(after[name][:299], old[:299])
        assert torch.equal(after[name][299], old[7])  # re-initialised from its sources
        assert torch.equal(after[name][300], old[[1, 2]].double().mean(0).float())
        assert torch.equal(after[name][301:], torch.zeros_like(after[name][301:]))
    assert model.config.vocab_size == 304
    with pytest.raises(ValueError, match="cannot shrink"):
        surgery.resize_embeddings(model, 10)


# --- training only the new rows ------------------------------------------------------------------


def train(model, batch, steps=3, params=None, weight_decay=0.1):
    optimizer = torch.optim.AdamW(params or model.parameters(), lr=1e-2, weight_decay=weight_decay)
    for _ in range(steps):
        model(batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


@pytest.mark.parametrize("arch", ARCHS)
def test_train_only_new_tokens_keeps_everything_else_bit_identical(arch, tokenizer):
    model = make_model(arch)
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT, special=True)
    before, others = matrices(model), other_params(model)
    batch = torch.tensor([[new_ids[0], 11, 22, 33, new_ids[1], 44]])

    handle = surgery.train_only_new_tokens(model, new_ids)
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert {id(p) for p in trainable} == {id(p) for p in handle.parameters()}
    assert sum(p.numel() for p in trainable) == len(new_ids) * sum(1 if n == "bias" else 32 for n in before)
    train(model, batch)  # over model.parameters(): frozen ones included, weight decay on
    with torch.no_grad():
        logits_during = model(batch).logits
    handle.remove()

    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    assert (head.weight is emb.weight) == (arch == "gpt2")
    assert all(p.requires_grad for p in model.parameters())
    with torch.no_grad():
        assert torch.equal(model(batch).logits, logits_during)
    after = matrices(model)
    for name, old in before.items():
        assert torch.equal(after[name][:V], old[:V]), name
        moved = (after[name][new_ids] != old[new_ids]).reshape(len(new_ids), -1).any(1)
        assert moved.all(), name
    now = other_params(model)
    assert all(torch.equal(now[n], others[n]) for n in others)


def test_stale_gradients_from_before_freezing_move_nothing(tokenizer):
    """AdamW updates every parameter whose grad is not None, frozen or not: a backward pass made
    before freezing (or zero_grad(set_to_none=False)) must not leak into the frozen weights."""
    model = make_model("llama")
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT, special=True)
    batch = torch.tensor([[new_ids[0], 11, 22, new_ids[1]]])
    model(batch, labels=batch).loss.backward()  # every parameter now holds a grad
    before, others = matrices(model), other_params(model)
    with surgery.train_only_new_tokens(model, new_ids):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        for _ in range(2):
            model(batch, labels=batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
    after, now = matrices(model), other_params(model)
    for name, old in before.items():
        assert torch.equal(after[name][:V], old[:V]), name
    assert all(torch.equal(now[n], others[n]) for n in others)


def test_remove_restores_normal_training_and_previous_flags(tokenizer):
    model = make_model("llama")
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT)
    frozen = model.model.layers[0].mlp.up_proj.weight
    frozen.requires_grad_(False)  # the user's own choice must survive
    with surgery.train_only_new_tokens(model, new_ids):
        assert not model.get_input_embeddings().parametrizations.weight.original.requires_grad
    assert not frozen.requires_grad
    assert sum(not p.requires_grad for p in model.parameters()) == 1
    before = matrices(model)
    train(model, torch.tensor([[1, 2, 3, new_ids[0]]]), steps=1)
    assert not torch.equal(matrices(model)["embedding"][:V], before["embedding"][:V])


def test_state_dict_while_training_looks_like_a_plain_model(tmp_path, tokenizer):
    model = make_model("gpt2")
    new_ids = surgery.add_tokens_and_resize(model, tokenizer, CHAT, special=True)
    plain_keys = set(model.state_dict())
    handle = surgery.train_only_new_tokens(model, new_ids)
    train(model, torch.tensor([[new_ids[0], 5, new_ids[1]]]))
    state = model.state_dict()
    assert set(state) == plain_keys
    assert state["lm_head.weight"] is state["transformer.wte.weight"]  # still one tied tensor
    model.save_pretrained(tmp_path / "mid")
    snapshot = {k: v.clone() for k, v in state.items()}

    # Loading a plain state dict while training sets the original and the new rows alike.
    changed = {k: v.clone() for k, v in state.items()}
    changed["transformer.wte.weight"][new_ids[0]] += 1.0
    changed["lm_head.weight"] = changed["transformer.wte.weight"]  # tied, as in the model's own state dict
    model.load_state_dict(changed)
    assert torch.equal(model.state_dict()["transformer.wte.weight"], changed["transformer.wte.weight"])
    model.load_state_dict(snapshot)
    handle.remove()

    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "mid")
    final = model.state_dict()
    assert all(torch.equal(reloaded.state_dict()[k], final[k]) for k in final)
    assert all(torch.equal(final[k], snapshot[k]) for k in final)


def test_train_only_new_tokens_rejects_bad_ids():
    model = make_model("gpt2", vocab_size=100)
    with pytest.raises(ValueError, match=r"ids \[100\] have no row"):
        surgery.train_only_new_tokens(model, [99, 100])
    with pytest.raises(ValueError, match="empty"):
        surgery.train_only_new_tokens(model, [])
    assert all(p.requires_grad for p in model.parameters())
    handle = surgery.train_only_new_tokens(model, [99])
    with pytest.raises(RuntimeError, match="already has parametrizations"):
        surgery.train_only_new_tokens(model, [98])
    handle.remove()


def test_tokenizer_with_ids_past_the_embedding_limit_is_refused_naming_the_token(tmp_path):
    """tiktoken ranks reach 2**32 - 1, and such a tokenizer loads and encodes exactly, but no model
    has 2**31 embedding rows: surgery refuses, naming the token and the limit, and changes nothing."""
    import base64

    import conversion
    from hf_bbpe import BBPETokenizer

    o200k = Path(__file__).resolve().parents[1] / "data" / "tiktoken" / "o200k_base.tiktoken"
    lines = o200k.read_bytes().splitlines(keepends=True)[:1000]
    path = tmp_path / "wide.tiktoken"
    path.write_bytes(b"".join(lines) + base64.b64encode(b" hfbbpe") + b" " + str(2**32 - 2).encode() + b"\n")
    tok = BBPETokenizer.from_engine(conversion.from_tiktoken(path, pattern="o200k"))
    assert tok(" hfbbpe")["input_ids"] == [2**32 - 2] and len(tok) == 2**32 - 1
    model = make_model("gpt2", vocab_size=1000)
    before = {name: t.clone() for name, t in matrices(model).items()}
    with pytest.raises(ValueError, match=r"token 'Ġhfbbpe' has id 4294967294, so a model would need 4294967295 embedding "
                                         r"rows; surgery takes at most 2147483647 \(2\*\*31 - 1\)"):
        surgery.add_tokens_and_resize(model, tok, CHAT)
    assert len(tok) == 2**32 - 1 and "<|im_start|>" not in tok.get_vocab()
    assert all(torch.equal(before[name], t) for name, t in matrices(model).items())
