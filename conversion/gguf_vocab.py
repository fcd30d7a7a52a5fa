"""GGUF (llama.cpp, Ollama): a saved folder's vocabulary as a GGUF file, and the name llama.cpp
knows its pre-tokenizer by.

llama.cpp stores no split regex in a GGUF: ``tokenizer.ggml.pre`` names one of the pre-tokenizers
compiled into ``llama-vocab.cpp``, and that name also fixes the BPE mode (``ignore_merges``: a
chunk that is a token is that token). Its converter, ``convert_hf_to_gguf.py``, finds the name by
hashing the ids a tokenizer gives a test text (:data:`CHKTXT`), so a tokenizer we train, or one
we extend, has a hash it does not know. Here the name comes from our pattern instead
(:data:`LLAMA_CPP_PRE_TOKENIZERS`), after checking that the mode the name implies gives our ids;
a pattern llama.cpp has no pre-tokenizer for is refused.

:func:`write_gguf_vocab` writes the vocabulary GGUF with the ``gguf`` package (llama.cpp's own
writer): tokens, token types, merges, bos/eos/pad ids, ``add_bos``/``add_eos``, chat template and
the pre-tokenizer name, as the converter writes them. ``llama-tokenize -m FILE`` reads it;
converting a model is the converter's job, run by :mod:`conversion.llama_cpp_convert` with this
folder's hash added to its table (``hf-bbpe gguf --llama-cpp``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import regex

from hf_bbpe.engine.files.atomic_write import write_bytes_atomic
from hf_bbpe.engine.chunking.patterns import isolated_scanner_name, scanner_name
from hf_bbpe.engine.tokenizer import Tokenizer
from hf_bbpe.hf.tokenizer_json_writer import token_past_a_line_break

from .errors import FormatError
from .llama_cpp_convert import CHKTXT, chkhsh, ids_hash
from .reading import read_json_object

__all__ = ["CHKTXT", "GGUFVocab", "LLAMA_CPP_HASH_NAMES", "LLAMA_CPP_PRE_TOKENIZERS", "gguf_vocab_of",
           "llama_cpp_pre_tokenizer", "pre_tokenizer_hash", "write_gguf_vocab"]

LLAMA_CPP_PRE_TOKENIZERS: dict[str, tuple[tuple[str, bool], ...]] = {
    "gpt2": (("gpt-2", False),),
    "gpt4": (("dbrx", False), ("llama-bpe", True)),
    "llama3": (("llama-bpe", True), ("dbrx", False)),
    "qwen2": (("qwen2", False),),
    "o200k": (("gpt-4o", False), ("llama4", False)),
    "tekken": (("tekken", True),),
}
"""Our built-in pattern -> llama.cpp's pre-tokenizers that split with it, each with the
``ignore_merges`` its name sets in ``llama-vocab.cpp``, preferred first (the name llama.cpp's own
hash table gives the family: ``dbrx`` for cl100k, ``llama-bpe`` for Llama 3). ``dbrx`` splits as
``llama-bpe`` without the whole-piece rule. GPT-4's pattern has no pre-tokenizer of its own:
llama.cpp splits cl100k tokenizers with Llama 3's regex, which differs only where a text ends in
a line break followed by spaces (:data:`GPT4_NOTE`). ``llama4`` is ``gpt-4o`` under Llama 4's
name (:data:`LLAMA_CPP_HASH_NAMES`)."""

SUPERBPE_NOTE = ("llama.cpp's 'superbpe' pre-tokenizer (made for the paper's released OLMo2 SuperBPE model) cuts "
                 "only numbers, in groups of three digits from the right, and leaves all other text whole")
"""What llama.cpp's ``superbpe`` (``LLAMA_VOCAB_PRE_TYPE_SUPERBPE`` in ``llama-vocab.cpp``: the
regexes ``\\p{N}+`` and ``(?=(\\d{3})+(?!\\d))``) splits: neither SuperBPE stage's pattern."""

LLAMA_CPP_UNMAPPED: dict[str, str] = {
    "superbpe_stage1": "it is o200k's without contractions, which none of llama.cpp's regexes is (its o200k regex keeps "
                       "contractions, its Tekken regex cuts digits one by one), and " + SUPERBPE_NOTE,
}
"""Our built-in patterns that llama.cpp has no pre-tokenizer for, with why (one clause each)."""

LLAMA_CPP_HASH_NAMES: dict[str, str] = {
    "3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454": "gpt-2",  # openai-community/gpt2
    "a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e": "dbrx",  # databricks/dbrx-base (cl100k)
    "ccc2ef013c104be7bae2965776d611e1d7a8a2a9c547dd93a682c9a9fc80352e": "gpt-4o",  # Xenova/gpt-4o (o200k)
    "0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5": "llama-bpe",  # Meta-Llama-3-8B
    "d353350c764d8c3b39c763113960e4fb4919bea5fbf208a0e3b22e8469dc7406": "llama4",  # Llama-4-Scout-17B-16E-Instruct
    "63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e": "tekken",  # Mistral-Nemo-Base-2407
}
"""The names llama.cpp's converter gives the families :mod:`conversion.presets` loads, by their
hash (its ``get_vocab_base_pre`` table, llama.cpp as vendored by llama-cpp-python 0.3.36): a
folder with one of these hashes gets the converter's own name, so that its GGUF holds what the
converter writes (Llama 4: ``llama4``, where the pattern alone says ``gpt-4o``). Any other folder's
name comes from its pattern."""

GPT4_NOTE = ("llama.cpp splits GPT-4's pattern as Llama 3's: a text that ends in a line break followed by spaces "
             "(e.g. a code prompt ending in an indent) gets the line break and the spaces as two chunks, where "
             "GPT-4's pattern keeps them in one")
"""Said only for a tokenizer with a token that spans that cut (:func:`_token_past_a_line_break`):
without one, the two chunks encode to the same ids as the one (cl100k has none)."""

MARKS_NOTE = ("llama.cpp's regex for o200k's and Tekken's patterns leaves combining marks (\\p{M}) out of words, "
              "where the patterns keep them in: text with them (Hindi, Thai, Khmer, ...) gets other chunks there, "
              "and other ids where a token holds a mark")
"""Said for an o200k- or Tekken-pattern tokenizer with a token that holds a combining mark
(llama.cpp's regexes for ``gpt-4o`` and ``tekken`` have ``(?=[\\p{L}])`` where the patterns have
``\\p{M}`` in their letter classes)."""

NORMALIZER_NOTE = ("llama.cpp does not normalize text: this tokenizer's NFC normalizer is dropped, so text that is "
                   "not in NFC tokenizes differently there")

NO_EOS_NOTE = ("the tokenizer has no eos_token: llama.cpp then takes id 11 as BOS and EOS (its default for BPE "
               "vocabularies), and generation stops at that token; save the folder with an eos_token")
"""Said when the folder has no EOS. With an EOS and no BOS, the EOS's id is written as BOS too:
llama.cpp has no "no BOS" for BPE vocabularies (``llama-vocab.cpp`` keeps its default, id 11, for an
absent or out-of-range ``tokenizer.ggml.bos_token_id``), and ``add_bos`` stays as the folder says."""

_MARK = regex.compile(r"\p{M}")
_TOKEN_NORMAL, _TOKEN_CONTROL, _TOKEN_USER_DEFINED, _TOKEN_UNUSED = 1, 3, 4, 5  # gguf.TokenType
_SPECIAL_ROLES = ("bos", "eos", "unk", "sep", "pad", "mask")  # the ids gguf.SpecialVocab writes (cls: none)


@dataclass
class GGUFVocab:
    """What a vocabulary GGUF holds, and how llama.cpp's converter sees the folder."""

    pre: str
    """``tokenizer.ggml.pre``: llama.cpp's name for the pre-tokenizer."""
    chkhsh: str
    """The hash ``convert_hf_to_gguf.py`` computes for the folder (:func:`pre_tokenizer_hash`)."""
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    special_ids: dict[str, int]
    add_bos: bool
    add_eos: bool
    add_sep: bool | None
    """``tokenizer.ggml.add_sep_token``, written where the converter writes it (None: not written)."""
    chat_template: str | None
    notes: list[str] = field(default_factory=list)
    """Where llama.cpp's ids can differ from ours, one sentence each (empty: nowhere known)."""


def pre_tokenizer_hash(folder: str | os.PathLike) -> str:
    """The hash llama.cpp's converter identifies the folder's tokenizer by, computed as it does:
    ``AutoTokenizer.from_pretrained(folder)`` (the fast twin, no remote code) encodes
    :data:`CHKTXT` with its special tokens (BOS/EOS as the folder says), and the sha256 of the
    list's ``str`` is the hash."""
    from transformers import AutoTokenizer

    return chkhsh(AutoTokenizer.from_pretrained(str(folder)))


def llama_cpp_pre_tokenizer(tok: Tokenizer, source: str = "tokenizer") -> tuple[str, list[str]]:
    """llama.cpp's pre-tokenizer name for ``tok`` and the notes on where its ids could differ.

    The name must split as ``tok``'s pattern does and imply a mode that gives ``tok``'s ids:
    ``ignore_merges`` (the whole-piece rule) agrees with our ``"ignore_merges"``/``"ranks"``
    modes, plain merges with ``"merges"``; either does where the rule changes no id (every
    token's bytes merge back into it). Anything else raises :class:`FormatError` in one line.
    """
    pattern = tok.plain_pattern
    if pattern is None:
        if isolated_scanner_name(tok.pre_tokenizer.split_pattern) == "superbpe_stage2":
            raise FormatError(f"{source}: llama.cpp has no pre-tokenizer for SuperBPE's stage-2 split (superwords): "
                              f"{SUPERBPE_NOTE}, where this one also cuts runs of punctuation and of spaces and "
                              "numbers in groups of three from the left")
        raise FormatError(f"{source}: llama.cpp has no pre-tokenizer for this pipeline "
                          f"({tok.pre_tokenizer.to_json()['type']}); it knows only single split patterns "
                          f"({', '.join(LLAMA_CPP_PRE_TOKENIZERS)})")
    if not pattern:
        raise FormatError(f"{source}: this tokenizer does not split text (no pattern, as minbpe's BasicTokenizer); "
                          "every llama.cpp pre-tokenizer splits")
    name = scanner_name(pattern)
    if name in LLAMA_CPP_UNMAPPED:
        raise FormatError(f"{source}: llama.cpp has no pre-tokenizer for the {name} pattern: "
                          f"{LLAMA_CPP_UNMAPPED[name]}; it knows these patterns: {', '.join(LLAMA_CPP_PRE_TOKENIZERS)}")
    if name is None or name not in LLAMA_CPP_PRE_TOKENIZERS:
        shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
        raise FormatError(f"{source}: llama.cpp has no pre-tokenizer for the split pattern {shown!r}; it knows "
                          f"these patterns: {', '.join(LLAMA_CPP_PRE_TOKENIZERS)}")
    notes = [GPT4_NOTE] if name == "gpt4" and _token_past_a_line_break(tok) is not None else []
    if name in ("o200k", "tekken") and any(_MARK.search(data.decode("utf-8", "ignore")) for data in tok.vocab.values()):
        notes.append(MARKS_NOTE)
    normalizer = tok.normalizer
    if normalizer is not None:
        kind = normalizer.to_json().get("type")
        if kind != "NFC":
            raise FormatError(f"{source}: llama.cpp does not normalize text, and this tokenizer's {kind} normalizer "
                              "changes common text; no GGUF pre-tokenizer gives its ids")
        notes.append(NORMALIZER_NOTE)
    ours = tok.mode != "merges"
    candidates = LLAMA_CPP_PRE_TOKENIZERS[name]
    miss = None
    for pre, ignore_merges in candidates:
        if ignore_merges == ours:
            return pre, notes
        if miss is None:
            miss = tok.merges_miss_token() if tok.mode == "merges" else tok.merge_list_mismatch()
            if miss is None:  # the whole-piece rule changes no id of this tokenizer
                return pre, notes
    rule = "encodes a chunk that is a token as that token" if not ours else "runs plain BPE over the merges"
    raise FormatError(f"{source}: llama.cpp's {' or '.join(repr(pre) for pre, _ in candidates)} for the {name} "
                      f"pattern {rule}, which encodes token {tok.vocab[miss]!r} (id {miss}) differently from this "
                      f"{tok.mode!r}-mode tokenizer")


def gguf_vocab_of(folder: str | os.PathLike, vocab_size: int | None = None) -> GGUFVocab:
    """The vocabulary GGUF content for a saved folder (one ``BBPETokenizer.from_pretrained`` reads).

    Tokens and types follow llama.cpp's converter (``get_vocab_base``): every id below
    ``vocab_size`` (the folder's ``config.json`` ``vocab_size`` when it has one, else the largest
    id + 1), a normal token spelled in GPT-2's byte-to-unicode alphabet (NORMAL), an added token as
    its text (CONTROL if special, else USER_DEFINED), an id without a token ``[PAD{id}]`` (UNUSED).
    Merges are the tokenizer.json's, which is what the converter copies. A folder with an EOS and
    no BOS gets the EOS as BOS (see :data:`NO_EOS_NOTE`).
    """
    from hf_bbpe.hf.saved_folder import fast_twin_json
    from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

    folder = Path(folder)
    hf_tok = BBPETokenizer.from_pretrained(str(folder))
    engine = hf_tok.engine
    pre, notes = llama_cpp_pre_tokenizer(engine, str(folder))
    data = fast_twin_json(hf_tok)
    config = read_json_object(folder / "config.json") if (folder / "config.json").is_file() else {}
    largest = max([*data["model"]["vocab"].values(), *(entry["id"] for entry in data["added_tokens"])])
    size = vocab_size or config.get("vocab_size") or largest + 1
    if size <= largest:
        raise FormatError(f"{folder}: vocab_size {size} leaves out id {largest}; the model needs at least "
                          f"{largest + 1} embedding rows")
    added = {entry["id"]: entry for entry in data["added_tokens"]}
    normal = {idx: text for text, idx in data["model"]["vocab"].items()}
    tokens, types = [], []
    for idx in range(size):
        if idx in added:
            tokens.append(added[idx]["content"])
            types.append(_TOKEN_CONTROL if added[idx].get("special") else _TOKEN_USER_DEFINED)
        elif idx in normal:
            tokens.append(normal[idx])
            types.append(_TOKEN_NORMAL)
        else:
            tokens.append(f"[PAD{idx}]")
            types.append(_TOKEN_UNUSED)
    merges = [pair if isinstance(pair, str) else " ".join(pair) for pair in data["model"]["merges"]]
    special_ids = {}
    for role in _SPECIAL_ROLES:
        token = getattr(hf_tok, f"{role}_token", None)
        idx = next((entry["id"] for entry in data["added_tokens"] if entry["content"] == token), None) if token else None
        if idx is None and isinstance(config.get(f"{role}_token_id"), int):
            idx = config[f"{role}_token_id"]
        if idx is not None and idx < size:
            special_ids[role] = idx
    add_bos, add_eos = bool(hf_tok.add_bos_token), bool(hf_tok.add_eos_token)
    if add_bos and "bos" not in special_ids:
        raise FormatError(f"{folder}: add_bos_token is set but the tokenizer has no bos_token")
    if "eos" not in special_ids:
        notes.append(NO_EOS_NOTE)
    if "bos" not in special_ids and "eos" in special_ids:
        # llama.cpp cannot hold "no BOS" for a BPE vocabulary (an absent or out-of-range id means
        # id 11, whatever token that is): the EOS is the BOS, as GPT-2's and OpenAI's folders say
        special_ids = {"bos": special_ids["eos"], **special_ids}
    template = hf_tok.chat_template
    if isinstance(template, dict):  # several named templates: llama.cpp reads the default one
        template = template.get("default")
    chkhsh = pre_tokenizer_hash(folder)
    ours = _engine_hash(engine, special_ids.get("bos") if add_bos else None, special_ids.get("eos") if add_eos else None)
    if chkhsh != ours:
        raise FormatError(f"{folder}: its tokenizer.json does not encode llama.cpp's test text as its tokenizer does "
                          f"(hash {chkhsh[:12]}..., the tokenizer's {ours[:12]}...); save the folder again")
    pre = _converter_name(chkhsh, pre)
    # The converter's gguf.SpecialVocab writes add_sep_token where tokenizer.json has a template
    # (add_bos or add_eos): False, as ours puts BOS/EOS between a pair's sequences, no separator.
    add_sep = False if add_bos or add_eos else None
    return GGUFVocab(pre=pre, chkhsh=chkhsh, tokens=tokens, token_types=types, merges=merges,
                     special_ids=special_ids, add_bos=add_bos, add_eos=add_eos, add_sep=add_sep,
                     chat_template=template, notes=notes)


def write_gguf_vocab(folder: str | os.PathLike, path: str | os.PathLike, *, vocab_size: int | None = None,
                     architecture: str = "llama") -> GGUFVocab:
    """Write the folder's vocabulary GGUF (:func:`gguf_vocab_of`) to ``path`` atomically, with the
    ``gguf`` package; ``architecture`` is ``general.architecture`` (llama.cpp loads a vocabulary
    only for an architecture it knows; the tokenizer does not depend on it)."""
    try:
        import gguf
    except ImportError:
        raise FormatError("writing GGUF needs the gguf package: pip install 'hf_bbpe[gguf]'") from None
    vocab = gguf_vocab_of(folder, vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "vocab.gguf"
        writer = gguf.GGUFWriter(scratch, architecture)
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre(vocab.pre)
        writer.add_token_list(vocab.tokens)
        writer.add_token_types(vocab.token_types)
        writer.add_token_merges(vocab.merges)
        for role, idx in vocab.special_ids.items():
            getattr(writer, f"add_{role}_token_id")(idx)
        writer.add_add_bos_token(vocab.add_bos)
        writer.add_add_eos_token(vocab.add_eos)
        if vocab.add_sep is not None:
            writer.add_add_sep_token(vocab.add_sep)
        if vocab.chat_template:
            writer.add_chat_template(vocab.chat_template)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        write_bytes_atomic(path, scratch.read_bytes())
    return vocab


def _token_past_a_line_break(tok: Tokenizer) -> int | None:
    """A token across the cut where Llama 3's split differs from GPT-4's, or None
    (:func:`hf_bbpe.hf.tokenizer_json_writer.token_past_a_line_break`)."""
    return token_past_a_line_break(tok.vocab)


def _converter_name(chkhsh: str, pre: str) -> str:
    """The name llama.cpp's converter gives a folder with hash ``chkhsh`` if it knows the hash and
    the name is another for the same pre-tokenizer as ``pre`` (same split, same mode); else ``pre``."""
    known = LLAMA_CPP_HASH_NAMES.get(chkhsh)
    for candidates in LLAMA_CPP_PRE_TOKENIZERS.values():
        modes = dict(candidates)
        if known in modes and pre in modes and modes[known] == modes[pre]:
            return known
    return pre


def _engine_hash(engine: Tokenizer, bos: int | None, eos: int | None) -> str:
    ids = ([bos] if bos is not None else []) + engine.encode_ordinary(CHKTXT) + ([eos] if eos is not None else [])
    return ids_hash(ids)
