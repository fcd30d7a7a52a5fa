"""Lossless conversion between our tokenizers and other byte-level BPE formats.

Every format both ways, with the reference's ids::

    tok = conversion.from_gpt2_files("encoder.json", "vocab.bpe")      # OpenAI GPT-2
    conversion.to_gpt2_files(tok, "out_dir")
    tok = conversion.from_transformers_gpt2("folder")                   # vocab.json + merges.txt
    tok = conversion.from_tiktoken("cl100k_base.tiktoken", pattern="gpt4", special_tokens={...})
    tok = conversion.from_tiktoken(tiktoken_encoding)
    conversion.to_tiktoken(tok, "out.tiktoken")                         # force=True: see below
    tok = conversion.from_tokenizer_json("tokenizer.json")
    conversion.to_tokenizer_json(tok, "tokenizer.json")
    tok = conversion.from_minbpe("x.model"); conversion.to_minbpe(tok, "prefix")
    tok = conversion.from_tekken("tekken.json")                         # Mistral
    tok = conversion.load_preset("cl100k_base", "path/to/cl100k_base.tiktoken")
    tok = conversion.load_preset("llama3", "Meta-Llama-3/tokenizer.model")  # also llama4, tekken, whisper
    tok = conversion.load("any/file/or/folder")                         # the format read from the content
    tok = conversion.load(("vocab.bpe", "encoder.json"))                # GPT-2's two files, either order
    conversion.write_gguf_vocab("saved_folder", "vocab.gguf")           # llama.cpp / Ollama (needs gguf)

Every failure on bad input raises :class:`FormatError` (a ValueError) naming the file and the
line or token at fault, and nothing is written. ``to_tiktoken`` refuses merges that tiktoken's
rank-based BPE would apply differently (:class:`RepresentabilityError`, see
representability.py for the rule).
"""

from .errors import FormatError
from .gguf_vocab import gguf_vocab_of, llama_cpp_pre_tokenizer, pre_tokenizer_hash, write_gguf_vocab
from .gpt2_files import from_gpt2_files, from_transformers_gpt2, to_gpt2_files
from .loading import detect_format, gpt2_file_pair, load
from .minbpe_model import from_minbpe, to_minbpe
from .preset_loading import load_preset
from .presets import PRESETS
from .representability import RepresentabilityError, check_rank_representable
from .tekken import from_tekken
from .tiktoken_ranks import from_tiktoken, to_tiktoken
from .tokenizer_json import from_tokenizer_json, to_tokenizer_json

__all__ = [
    "FormatError",
    "RepresentabilityError",
    "PRESETS",
    "check_rank_representable",
    "detect_format",
    "from_gpt2_files",
    "from_minbpe",
    "from_tekken",
    "from_tiktoken",
    "from_tokenizer_json",
    "from_transformers_gpt2",
    "gpt2_file_pair",
    "gguf_vocab_of",
    "llama_cpp_pre_tokenizer",
    "load",
    "load_preset",
    "pre_tokenizer_hash",
    "to_gpt2_files",
    "to_minbpe",
    "to_tiktoken",
    "to_tokenizer_json",
    "write_gguf_vocab",
]
