"""Chat templates: where a saved folder keeps them, assistant masks, and the ChatML preset.

* the template is saved inline in ``tokenizer_config.json`` (TGI, transformers.js and Ollama's
  converter read it there) as well as in ``chat_template.jinja``; named templates too;
* ``BBPETokenizer.apply_chat_template(..., return_assistant_tokens_mask=True)`` gives the fast
  twin's mask (before, it raised inside transformers: no ``char_to_token`` on 4.57, no
  ``encodings`` on 5.x), one conversation or a padded, truncated batch of tensors;
* TRL's own ``assistant_only_loss`` checks and its SFTTrainer's labels (the real TRL);
* ``chat_preset="chatml"``: the special tokens, the ``{% generation %}`` markers, and
  ``<|im_end|>`` as an eos id in ``generation_config.json``.
Runs on 5.x and 4.57.
"""

from __future__ import annotations

import json

import pytest
from tests.support.hf import EOT, trained_engine
from transformers import AutoTokenizer, GenerationConfig

from hf_bbpe.hf.chat_presets import CHATML
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = pytest.mark.transformers_compat

CONVERSATIONS = [
    [{"role": "system", "content": "Du bist hilfreich."},
     {"role": "user", "content": "Wie heißt die Hauptstadt von Österreich?"},
     {"role": "assistant", "content": "Wien. 🇦🇹"},
     {"role": "user", "content": "И ещё: 東京は?"},
     {"role": "assistant", "content": "Tokyo is Japan's capital.\n\n```python\nprint('東京')\n```"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": " leading space, then <x> text"}],
]
SIMPLE_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


@pytest.fixture(scope="module")
def chatml() -> BBPETokenizer:
    tok = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>", chat_preset="chatml")
    tok.add_tokens(["<x>"])
    return tok


@pytest.fixture(scope="module")
def chatml_folder(chatml, tmp_path_factory):
    path = tmp_path_factory.mktemp("chatml")
    chatml.save_pretrained(path)
    return path


def test_the_template_is_saved_inline_and_in_the_jinja_file(tmp_path):
    BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, chat_template=SIMPLE_TEMPLATE).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == (tmp_path / "chat_template.jinja").read_text(encoding="utf-8") == SIMPLE_TEMPLATE
    (tmp_path / "chat_template.jinja").unlink()  # what a reader of tokenizer_config.json alone sees
    messages = CONVERSATIONS[1]
    for tok in (AutoTokenizer.from_pretrained(tmp_path), BBPETokenizer.from_pretrained(tmp_path)):
        assert tok.chat_template == SIMPLE_TEMPLATE
        assert tok.apply_chat_template(messages, tokenize=False) == "user: hi\nassistant:  leading space, then <x> text\n"


def test_named_templates_are_saved_inline_too(tmp_path):
    templates = {"default": SIMPLE_TEMPLATE, "tool_use": "{{ messages[0]['content'] }}"}
    BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, chat_template=templates).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == [{"name": name, "template": text} for name, text in templates.items()]
    for tok in (AutoTokenizer.from_pretrained(tmp_path), BBPETokenizer.from_pretrained(tmp_path)):
        assert tok.chat_template == templates


def _masks(tok, conversation, **options):
    out = tok.apply_chat_template(conversation, tokenize=True, return_dict=True, return_assistant_tokens_mask=True,
                                  **options)
    return {key: value.tolist() if hasattr(value, "tolist") else value for key, value in out.items()}


def test_assistant_masks_equal_the_fast_twins(chatml, chatml_folder):
    fast = AutoTokenizer.from_pretrained(chatml_folder)
    for conversation in CONVERSATIONS:
        ours = _masks(chatml, conversation)
        assert ours == _masks(fast, conversation)
        masked = [idx for idx, keep in zip(ours["input_ids"], ours["assistant_masks"]) if keep]
        assert chatml.decode(masked) == "".join(m["content"] + "<|im_end|>" for m in conversation
                                                if m["role"] == "assistant")
    for options in ({"padding": True, "return_tensors": "pt"}, {"padding": True, "truncation": True, "max_length": 40},
                    {"padding": "max_length", "truncation": True, "max_length": 30, "return_tensors": "np"}):
        ours = _masks(chatml, CONVERSATIONS, **options)
        assert ours == _masks(fast, CONVERSATIONS, **options), options
        assert any(any(row) for row in ours["assistant_masks"])
    # the call leaves no fast-tokenizer encodings behind, and asks nothing of other calls
    out = chatml.apply_chat_template(CONVERSATIONS[1], tokenize=True, return_dict=True,
                                     return_assistant_tokens_mask=True)
    assert not out.is_fast and "offset_mapping" not in out
    assert not chatml("plain text").is_fast


def test_trl_assistant_only_loss_checks_pass(chatml, chatml_folder):
    """TRL's checks before SFT with ``assistant_only_loss``: the template has generation markers,
    and the assistant's end-of-turn token is inside the mask (so the model learns to stop)."""
    from trl.chat_template_utils import has_generation_markers, is_chat_template_stop_token_trained

    for tok in (chatml, AutoTokenizer.from_pretrained(chatml_folder), BBPETokenizer.from_pretrained(chatml_folder)):
        assert has_generation_markers(tok.chat_template)
        assert is_chat_template_stop_token_trained(tok), type(tok).__name__


@pytest.mark.slow
@pytest.mark.torch
def test_trl_sft_trainer_trains_on_the_assistant_tokens_only(chatml, tmp_path):
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel
    from trl import SFTConfig, SFTTrainer

    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(chatml), n_embd=16, n_layer=1, n_head=1, n_positions=256,
                                       bos_token_id=chatml.eos_token_id, eos_token_id=chatml.eos_token_id))
    args = SFTConfig(output_dir=str(tmp_path), assistant_only_loss=True, max_steps=1, per_device_train_batch_size=2,
                     report_to=[], use_cpu=True, save_strategy="no", max_length=256)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list([{"messages": c} for c in CONVERSATIONS]),
                         processing_class=chatml)
    for row, conversation in zip(trainer.train_dataset, CONVERSATIONS):
        assert row["input_ids"] == chatml.apply_chat_template(conversation, tokenize=True, return_dict=True)["input_ids"]
        trained = [idx for idx in row["labels"] if idx != -100]
        assert chatml.decode(trained) == "".join(m["content"] + "<|im_end|>" for m in conversation
                                                 if m["role"] == "assistant")
    assert trainer.train().training_loss > 0


def test_the_chatml_preset(chatml, chatml_folder, tmp_path):
    start, end = chatml.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    assert (start, end) == (1032, 1033)  # above <|endoftext|> 1030 and <|pad|> 1031
    assert {"<|im_start|>", "<|im_end|>"} <= set(chatml.additional_special_tokens if hasattr(
        chatml, "additional_special_tokens") else chatml.extra_special_tokens)
    assert chatml.added_tokens_decoder[start].special and chatml.added_tokens_decoder[end].special
    assert chatml.chat_template == CHATML.template and chatml.stop_tokens == ["<|im_end|>"]
    text = chatml.apply_chat_template(CONVERSATIONS[1], tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n leading space, then <x> text<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = chatml(text)["input_ids"]
    assert ids[0] == start and ids.count(start) == 3 and ids.count(end) == 2

    generation = json.loads((chatml_folder / "generation_config.json").read_text(encoding="utf-8"))
    assert generation == {"eos_token_id": [end, 1030], "pad_token_id": 1031}
    assert GenerationConfig.from_pretrained(chatml_folder).eos_token_id == [end, 1030]
    config = json.loads((chatml_folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["stop_tokens"] == ["<|im_end|>"] and config["chat_template"] == CHATML.template
    again = BBPETokenizer.from_pretrained(chatml_folder)
    assert again.stop_tokens == ["<|im_end|>"] and again.chat_template == CHATML.template

    # saved into a model's folder: its generation settings stay, its eos ids come after ours
    model_folder = tmp_path / "model"
    model_folder.mkdir()
    (model_folder / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": 7, "temperature": 0.6, "do_sample": True}), encoding="utf-8")
    again.save_pretrained(model_folder)
    merged = GenerationConfig.from_pretrained(model_folder)
    assert merged.eos_token_id == [end, 1030, 7] and merged.temperature == 0.6 and merged.do_sample


def test_chat_preset_errors():
    with pytest.raises(ValueError, match=r"^unknown chat preset 'vicuna'; presets: chatml$"):
        BBPETokenizer.from_engine(trained_engine(), chat_preset="vicuna")
    with pytest.raises(ValueError, match="chat_template or chat_preset, not both"):
        BBPETokenizer.from_engine(trained_engine(), chat_preset="chatml", chat_template=SIMPLE_TEMPLATE)
    with pytest.raises(ValueError, match=r"stop token '<\|eot\|>' is not a token of this tokenizer"):
        BBPETokenizer.from_engine(trained_engine(), stop_tokens=["<|eot|>"])
