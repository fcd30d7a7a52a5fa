"""hf_bbpe: byte-level BPE (GPT-2 / GPT-4 / minbpe) as a first-class Hugging Face tokenizer."""

from .byte_unicode import bytes_to_unicode, unicode_to_bytes
from .patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, O200K_SPLIT_PATTERN, SPLIT_PATTERNS, resolve_pattern
from .tokenizer import BasicTokenizer, RegexTokenizer, Tokenizer

__version__ = "0.1.0"

__all__ = [
    "BasicTokenizer",
    "RegexTokenizer",
    "Tokenizer",
    "GPT2_SPLIT_PATTERN",
    "GPT4_SPLIT_PATTERN",
    "O200K_SPLIT_PATTERN",
    "SPLIT_PATTERNS",
    "resolve_pattern",
    "bytes_to_unicode",
    "unicode_to_bytes",
]
