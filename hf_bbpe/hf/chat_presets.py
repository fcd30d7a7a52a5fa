"""Chat-template presets: a template together with the special tokens it writes and the token
that ends a turn, so that a tokenizer gets all three at once (``BBPETokenizer.from_engine(tok,
chat_preset="chatml")``, ``hf-bbpe train ... --chat-template chatml``).

A preset's template marks what the assistant says with ``{% generation %}`` ...
``{% endgeneration %}``, which transformers' ``apply_chat_template(...,
return_assistant_tokens_mask=True)`` turns into a mask (TRL's ``assistant_only_loss``); the
end-of-turn token is inside the marked part, so a model learns to emit it, and it is written to
``generation_config.json`` as an eos id, so generation stops there (transformers, vLLM).

This module is also copied into model folders as remote code: it imports only the standard library.
"""

from __future__ import annotations

from typing import NamedTuple


class ChatPreset(NamedTuple):
    name: str
    template: str
    special_tokens: tuple[str, ...]  # registered as special tokens (next free ids) when missing
    end_of_turn: str  # written to generation_config.json as an eos id


CHATML = ChatPreset(
    name="chatml",
    template=(
        "{%- for message in messages %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' }}"
        "{%- if message['role'] == 'assistant' %}"
        "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
        "{{- '\\n' }}"
        "{%- else %}"
        "{{- message['content'] + '<|im_end|>' + '\\n' }}"
        "{%- endif %}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    ),
    special_tokens=("<|im_start|>", "<|im_end|>"),
    end_of_turn="<|im_end|>",
)
"""OpenAI's ChatML, as Qwen and many fine-tunes write it: ``<|im_start|>role\\ncontent<|im_end|>\\n``."""

CHAT_PRESETS = {preset.name: preset for preset in (CHATML,)}


def chat_preset(name: str) -> ChatPreset:
    """The preset called ``name`` (any letter case); ValueError listing the presets otherwise."""
    preset = CHAT_PRESETS.get(name.lower())
    if preset is None:
        raise ValueError(f"unknown chat preset {name!r}; presets: {', '.join(CHAT_PRESETS)}")
    return preset
