"""``--chat-template PRESET|FILE`` on the commands that write a save_pretrained folder (``train``,
``extend``, ``convert --to hf``): the ChatML preset's tokens in tokenizer.model and the folder,
its template inline and in chat_template.jinja, <|im_end|> in generation_config.json."""

from __future__ import annotations

import json

from tests.support.cli import GPT2_DIR, MIX, assert_one_line_error, run_cli

from hf_bbpe import Tokenizer
from hf_bbpe.hf.chat_presets import CHATML
from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

MESSAGES = [{"role": "user", "content": "Grüß Gott"}, {"role": "assistant", "content": "Servus!"}]


def test_train_with_the_chatml_preset(tmp_path):
    out = tmp_path / "tok"
    run_cli("train", MIX, "--vocab-size", 400, "--special", "<|endoftext|>", "--eos-token", "<|endoftext|>",
            "--chat-template", "ChatML", "--out", out)
    engine = Tokenizer.from_file(out / "tokenizer.model")
    assert engine.special_tokens == {"<|endoftext|>": 400, "<|im_start|>": 401, "<|im_end|>": 402}
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == (out / "chat_template.jinja").read_text(encoding="utf-8") == CHATML.template
    assert config["stop_tokens"] == ["<|im_end|>"]
    assert json.loads((out / "generation_config.json").read_text(encoding="utf-8"))["eos_token_id"] == [402, 400]
    tok = BBPETokenizer.from_pretrained(out)
    masked = tok.apply_chat_template(MESSAGES, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    assert tok.decode([i for i, m in zip(masked["input_ids"], masked["assistant_masks"]) if m]) == "Servus!<|im_end|>"


def test_convert_with_a_template_file(tmp_path):
    template = tmp_path / "simple.jinja"
    template.write_text("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}", encoding="utf-8")
    out = tmp_path / "gpt2"
    run_cli("convert", GPT2_DIR, "--to", "hf", "-o", out, "--chat-template", template)
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == template.read_text(encoding="utf-8")
    assert not (out / "generation_config.json").exists()  # a template alone names no end-of-turn token
    tok = BBPETokenizer.from_pretrained(out)
    assert tok.apply_chat_template(MESSAGES, tokenize=False) == "[user] Grüß Gott\n[assistant] Servus!\n"


def test_bad_chat_template_values(tmp_path):
    proc = run_cli("train", MIX, "--vocab-size", 300, "--chat-template", "vicuna", "--out", tmp_path / "x", check=False)
    err = proc.stderr.decode("utf-8").strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1
    assert "'vicuna' is neither a preset (chatml) nor a file" in err
    proc = run_cli("convert", GPT2_DIR, "--to", "tiktoken", "-o", tmp_path / "x.tiktoken", "--chat-template", "chatml",
                   check=False)
    assert_one_line_error(proc, "--chat-template applies to --to hf with a folder OUTPUT")
