"""Known tokenizers by name, from local files: the owner's pattern and special tokens.

OpenAI's encodings (``gpt2``, ``r50k_base``, ``p50k_base``, ``cl100k_base``, ``o200k_base``, as
tiktoken defines them), OpenAI's Whisper (``whisper``: ``multilingual.tiktoken`` with 99
languages, every model but large-v3; ``whisper_v3``: the same file with 100 languages, large-v3
and large-v3-turbo; ``whisper_en``: ``gpt2.tiktoken``, the English-only ``.en`` models; special
tokens as ``whisper.tokenizer.get_encoding`` numbers them), Meta's ``llama3`` and ``llama4`` (the
rank file shipped as ``tokenizer.model``, with the special tokens llama_models' ``Tokenizer``
defines: 256 from id 128000 for Llama 3, 2048 from id 200000 for Llama 4) and Mistral's
``tekken`` (a Tekken JSON file, which names its own pattern and special tokens), and the two
tokenizers the SuperBPE paper released (Liu et al., COLM 2025; ``vocab.json`` + ``merges.txt``,
no special tokens): ``superbpe_t180k`` (200K tokens, superwords from the transition point t =
180K on, run with the paper's stage-2 pattern as an isolated Split) and ``superbpe_baseline``
(its plain-BPE 200K baseline, stage-1 pattern), as the paper's code runs them (``tokenizers``
with ``Split(pattern, "isolated")`` and ``ByteLevel(use_regex=False)``).

Each preset also carries its owner's token roles as the owner's Hugging Face tokenizer has them
(``Tokenizer.roles``: ``bos_token``, ``eos_token``, ``pad_token`` and whether BOS is added):
Llama 3 and Llama 4 add ``<|begin_of_text|>`` and end with ``<|end_of_text|>`` (the base
models' ``tokenizer_config.json``, as transformers' ``convert_llama_weights_to_hf.py`` and
``convert_llama4_weights_to_hf.py`` write it; the instruct models end turns with ``<|eot_id|>`` /
``<|eot|>`` instead), Llama 4 pads with ``<|finetune_right_pad|>`` (llama_models' ``pad_id``);
Tekken adds ``<s>`` and ends with ``</s>`` (Tekkenizer's bos and eos, as Mistral's Hugging Face
folders do); OpenAI's encodings and Whisper add nothing and name ``<|endoftext|>`` as bos and eos
(Whisper also as pad), as ``openai-community/gpt2`` and ``openai/whisper-*`` do.

``preset_loading.load_preset(name, path)`` never downloads. It checks the file's sha256 against the known
hashes (tiktoken's ``expected_hash`` for OpenAI's; the files openai-whisper 20250625,
llama-models 0.3.0 and mistral-common 1.13.1 ship for the others; Whisper's ``gpt2.tiktoken``
is byte for byte ``r50k_base.tiktoken``), so a wrong or damaged file is reported instead of
silently giving other ids (``check_hash=False`` skips that, e.g. for a deliberately edited file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hf_bbpe.engine.chunking.patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, LLAMA3_SPLIT_PATTERN, O200K_SPLIT_PATTERN, \
    SUPERBPE_STAGE1_SPLIT_PATTERN, SUPERBPE_STAGE2_SPLIT_PATTERN
from hf_bbpe.engine.encoding.special_tokens import TokenRoles
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError
from .reading import read_bytes
from .tekken import TEKKEN_ROLES


@dataclass(frozen=True)
class Preset:
    name: str
    pattern: str
    special_tokens: Mapping[str, int]
    files: tuple[str, ...]
    """File names, in the order ``path`` gives them when it is a tuple."""
    sha256: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    """Known sha256 of each file (tiktoken's ``expected_hash``), or the several known versions."""
    reader: str = "tiktoken"
    """How the file is read: "tiktoken" (a rank file), "gpt2" (encoder.json + vocab.bpe), "tekken"."""
    roles: TokenRoles = TokenRoles()
    """The owner's bos/eos/pad tokens and add-BOS rule (module doc)."""


_EOT = "<|endoftext|>"
OPENAI_ROLES = TokenRoles(bos_token=_EOT, eos_token=_EOT)
WHISPER_ROLES = TokenRoles(bos_token=_EOT, eos_token=_EOT, pad_token=_EOT)
LLAMA3_ROLES = TokenRoles(bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>", add_bos_token=True)
LLAMA4_ROLES = TokenRoles(bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                          pad_token="<|finetune_right_pad|>", add_bos_token=True)


def llama3_special_tokens() -> dict[str, int]:
    """Llama 3's 256 special tokens from id 128000, named as llama_models' Tokenizer names them."""
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
             "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
             "<|eot_id|>", "<|python_tag|>", "<|image|>"]
    names = named + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named))]
    return {token: 128000 + i for i, token in enumerate(names)}


def llama4_special_tokens() -> dict[str, int]:
    """Llama 4's 2048 special tokens from id 200000, named as llama_models' llama4 Tokenizer names them."""
    def reserved(kind: str, count: int, start: int = 0) -> list[str]:
        return [f"<|{kind}_reserved_special_token_{i}|>" for i in range(start, start + count)]

    text = ["<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>", *reserved("text_post_train", 6),
            "<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>", *reserved("text_post_train", 61, 8)]
    vision = ["<|image_start|>", "<|image_end|>", *reserved("vision", 2), "<|tile_x_separator|>",
              "<|tile_y_separator|>", *reserved("vision", 4, 2), "<|image|>", *reserved("vision", 1, 6), "<|patch|>",
              *reserved("vision", 1041, 7)]
    reasoning = [*reserved("reasoning", 8), "<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>"]
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
             *text, *vision, *reasoning]
    names += [f"<|reserved_special_token_{i}|>" for i in range(2048 - len(names))]
    return {token: 200000 + i for i, token in enumerate(names)}

WHISPER_LANGUAGES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml "
    "cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am "
    "yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()
"""Whisper's language codes in its token order (``whisper.tokenizer.LANGUAGES``)."""


def whisper_special_tokens(first_id: int, num_languages: int = 99) -> dict[str, int]:
    """Whisper's special tokens, numbered from ``first_id`` (the number of ranks in its file) in
    the order ``whisper.tokenizer.get_encoding`` gives them: end of text, start of transcript,
    ``num_languages`` language tokens, the task and control tokens, then 1501 timestamps
    ``<|0.00|>`` .. ``<|30.00|>``."""
    names = ["<|endoftext|>", "<|startoftranscript|>", *[f"<|{code}|>" for code in WHISPER_LANGUAGES[:num_languages]],
             "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
             "<|notimestamps|>", *[f"<|{i * 0.02:.2f}|>" for i in range(1501)]]
    return {token: first_id + i for i, token in enumerate(names)}


_WHISPER_MULTILINGUAL = {"multilingual.tiktoken": "b34b360dbb493e781e479794586d661700670d65564001f23024971d1f2fa126"}

PRESETS: dict[str, Preset] = {
    "gpt2": Preset(
        "gpt2", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("encoder.json", "vocab.bpe"),
        {"encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
         "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"},
        reader="gpt2", roles=OPENAI_ROLES,
    ),
    "r50k_base": Preset(
        "r50k_base", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("r50k_base.tiktoken",),
        {"r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"}, roles=OPENAI_ROLES,
    ),
    "p50k_base": Preset(
        "p50k_base", GPT2_SPLIT_PATTERN, {_EOT: 50256}, ("p50k_base.tiktoken",),
        {"p50k_base.tiktoken": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"}, roles=OPENAI_ROLES,
    ),
    "cl100k_base": Preset(
        "cl100k_base", GPT4_SPLIT_PATTERN,
        {_EOT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         "<|endofprompt|>": 100276},
        ("cl100k_base.tiktoken",),
        {"cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
        roles=OPENAI_ROLES,
    ),
    "o200k_base": Preset(
        "o200k_base", O200K_SPLIT_PATTERN, {_EOT: 199999, "<|endofprompt|>": 200018}, ("o200k_base.tiktoken",),
        {"o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
        roles=OPENAI_ROLES,
    ),
    "whisper": Preset(
        "whisper", GPT2_SPLIT_PATTERN, whisper_special_tokens(50257), ("multilingual.tiktoken",), _WHISPER_MULTILINGUAL,
        roles=WHISPER_ROLES,
    ),
    "whisper_v3": Preset(
        "whisper_v3", GPT2_SPLIT_PATTERN, whisper_special_tokens(50257, 100), ("multilingual.tiktoken",),
        _WHISPER_MULTILINGUAL, roles=WHISPER_ROLES,
    ),
    "whisper_en": Preset(
        "whisper_en", GPT2_SPLIT_PATTERN, whisper_special_tokens(50256), ("gpt2.tiktoken",),
        {"gpt2.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"},  # = r50k_base.tiktoken
        roles=WHISPER_ROLES,
    ),
    "llama3": Preset(
        "llama3", LLAMA3_SPLIT_PATTERN, llama3_special_tokens(), ("tokenizer.model",),
        {"tokenizer.model": "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"}, roles=LLAMA3_ROLES,
    ),
    "llama4": Preset(
        "llama4", O200K_SPLIT_PATTERN, llama4_special_tokens(), ("tokenizer.model",),
        {"tokenizer.model": "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed"}, roles=LLAMA4_ROLES,
    ),
    "superbpe_t180k": Preset(
        "superbpe_t180k", SUPERBPE_STAGE2_SPLIT_PATTERN, {}, ("vocab.json", "merges.txt"),
        {"vocab.json": "865e3969581012582f4a50a26cf1eee7c435e1da88bce135f3b5a31eb543540b",
         "merges.txt": "cede7a33d67ce8320f0a34badf05fac8ce4378b8e0a28ff85ce07d6f0cd02e1a"},
        reader="gpt2",
    ),
    "superbpe_baseline": Preset(
        "superbpe_baseline", SUPERBPE_STAGE1_SPLIT_PATTERN, {}, ("vocab.json", "merges.txt"),
        {"vocab.json": "9e1453bb94b2176bf19096858b531b7080c8b6ca7cfb4c5c95419de77ae73461",
         "merges.txt": "21eac1bdee8270f9f86baeba38afddc2b15d936ad51fc57d616e317702e3513e"},
        reader="gpt2",
    ),
    "tekken": Preset(
        "tekken", "", {}, ("tekken.json",),
        {"tekken.json": ("eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",  # tekken_240718
                         "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316")},  # tekken_240911
        reader="tekken", roles=TEKKEN_ROLES,
    ),
}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(read_bytes(path)).hexdigest()


def _known(hashes: str | tuple[str, ...]) -> tuple[str, ...]:
    return (hashes,) if isinstance(hashes, str) else tuple(hashes)


def check_sha256(path: Path, expected: str | tuple[str, ...], *, preset: str | None = None) -> None:
    """Raise FormatError if ``path``'s sha256 is not ``expected`` (or one of them); when it is
    another preset's known file, the message names that preset (``preset`` is the one asked for)."""
    actual = file_sha256(path)
    expected = _known(expected)
    if actual in expected:
        return
    asked = next((f"{preset}'s {name}" for name, known in PRESETS[preset].sha256.items() if _known(known) == expected),
                 f"{preset}'s file") if preset in PRESETS else "the expected file"
    for other in PRESETS.values():
        for file_name, known in other.sha256.items():
            if actual in _known(known) and other.name != preset:
                where = "its folder" if len(other.files) > 1 else "this file"
                raise FormatError(f"{path}: this is {other.name}'s {file_name} (by its sha256), not {asked}; "
                                  f"load it with load_preset({other.name!r}, {where})")
    raise FormatError(f"{path}: sha256 {actual} is not the known {' or '.join(expected)} ({asked}); this is not the "
                      "reference file (pass check_hash=False to load it anyway)", option="check_hash")


def preset_of_file(path: Path) -> str | None:
    """The name of the single-file preset whose known file ``path`` is (by sha256), else None."""
    return preset_of_files([path])


def preset_of_files(paths: list[Path] | tuple[Path, ...]) -> str | None:
    """The name of the preset whose known files ``paths`` are, in the order of its ``files`` (by
    sha256), else None."""
    actual = [file_sha256(path) for path in paths]
    for preset in PRESETS.values():
        if len(preset.files) == len(actual) and \
                all(digest in _known(preset.sha256.get(name, ())) for digest, name in zip(actual, preset.files)):
            return preset.name
    return None
