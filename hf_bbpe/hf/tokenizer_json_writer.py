"""Engine -> tokenizer.json: the ``tokenizers`` file (a byte-level BPE model) for a tokenizer of ours.

The file runs in the Rust ``tokenizers`` library with the same ids as the engine:

* model: ``BPE`` with the vocabulary spelled in GPT-2's byte-to-unicode alphabet under the
  tokenizer's real ids (holes in the id space and permuted byte ids are kept) and the merges in
  merge order, so the Rust BPE (lowest merge rank first) is the engine's algorithm;
  ``ignore_merges`` is true in the engine's ``"ignore_merges"`` and ``"ranks"`` modes (a
  pre-token that is a token is that token), and a ``"ranks"``-mode tokenizer with tokens that
  no merge builds lists every split of every token into two tokens, by the token's id, as
  transformers' ``TikTokenConverter`` does, so that the Rust BPE merges like tiktoken;
* normalizer: the tokenizer's own (NFC/NFD/NFKC/NFKD/Sequence), or none;
* pre-tokenizer: ``Split(Regex(pattern), "isolated")`` then ``ByteLevel(use_regex=False)``, where
  the pattern is translated for Oniguruma (see :mod:`onig_regex`); a pipeline is written step by
  step (its regexes translated), with ``ByteLevel(use_regex=False)`` added at the end if it has no
  ByteLevel step; GPT-4's pattern is written as Llama 3's where that gives the same ids
  (:func:`split_pattern_spelling`);
* decoder ``ByteLevel``; special tokens as ``added_tokens`` with their real ids (also listed in
  the model vocabulary, which is what makes ``tokenizers`` keep ids above or between the ranks);
* post-processor ``ByteLevel``, followed by a ``TemplateProcessing`` that puts the BOS / EOS token
  around each sequence when the tokenizer's roles add them (``Tokenizer.roles``: Llama 3's
  ``<|begin_of_text|>``), as the owners' own tokenizer.json files do.

This module is also copied into model folders as remote code next to ``tokenization_bbpe.py``:
it may import only flat sibling modules, relatively, and third-party libraries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..engine.chunking.byte_unicode import spell_vocab
from ..engine.chunking.onig_regex import translate_pattern_for_onig
from ..engine.chunking.patterns import GPT4_SPLIT_PATTERN, LLAMA3_SPLIT_PATTERN, canonical_pattern
from ..engine.encoding.encoder import UNMERGEABLE_ID

if TYPE_CHECKING:
    from ..engine.chunking.pre_tokenizers import PreTokenizer
    from ..engine.encoding.special_tokens import TokenRoles
    from ..engine.tokenizer import Tokenizer


def token_past_a_line_break(vocab: Mapping[int, bytes]) -> int | None:
    """The id of a token with bytes after its last line break (e.g. ``b"\\n    "``), or None.

    GPT-4's and Llama 3's patterns cut every text alike but one that ends in white space holding a
    line break followed by other white space (a code prompt ending in an indent): GPT-4's
    ``\\s+$`` keeps that tail whole, Llama 3's ``\\s*[\\r\\n]+`` cuts it after its last line
    break. Only a token across that cut can make the ids differ (BPE merges nothing across it
    otherwise, so the two chunks encode to the ids of the one); such a token has bytes after its
    last line break.
    """
    return next((idx for idx, data in vocab.items()
                 if (cut := max(data.rfind(b"\n"), data.rfind(b"\r"))) != -1 and cut < len(data) - 1), None)


def llama3_split_gives_gpt4s_ids(tok: Tokenizer) -> bool:
    """Whether Llama 3's split pattern gives ``tok`` (a GPT-4-pattern tokenizer) its ids on every
    text. The two patterns cut alike but a text's trailing white space after a line break, which
    GPT-4's keeps as one chunk T and Llama 3's cuts after its last line break into A and B; BPE
    merges T as A and B apart unless a merge crosses the cut (:func:`token_past_a_line_break`),
    and in the ``"ranks"`` and ``"ignore_merges"`` modes a chunk that is a token is that token,
    so A or B may also be a token that merging its bytes alone does not give: there, only a
    tokenizer whose every token's bytes merge back into it (``merge_list_mismatch()`` is None,
    as for cl100k_base) qualifies."""
    specials = set(tok.special_tokens.values())
    vocab = {idx: data for idx, data in tok.vocab.items() if idx not in specials}
    return token_past_a_line_break(vocab) is None and tok.merge_list_mismatch() is None


def split_pattern_spelling(pattern: str, tok: Tokenizer) -> str:
    """The split pattern a tokenizer.json carries for ``pattern`` (a ``regex`` pattern of ``tok``'s
    pre-tokenizer): the registry's spelling of a built-in pattern, translated for Oniguruma;
    GPT-4's is written as Llama 3's where that gives the same ids (:func:`llama3_split_gives_gpt4s_ids`:
    no token spans the one cut between them; cl100k_base has none).

    Why: Llama 3's string is also the one transformers' ``TikTokenConverter`` writes for cl100k, and
    the runtimes that know patterns by their string know it and no spelling of GPT-4's: snaptokens
    (0.2.6) reads only the strings of its table and refuses any other ("unsupported pre-tokenizer
    configuration"), Ollama's converter names it ``llama-bpe`` (GPT-4's falls back to its default
    split). ``tokenizers``, fastokens and tokenizers.js compile either. A tokenizer that the cut
    changes keeps GPT-4's own spelling: exact ids where the regex is compiled, and a refusal, not
    other ids, from snaptokens.
    """
    pattern = canonical_pattern(pattern)
    if pattern == GPT4_SPLIT_PATTERN and llama3_split_gives_gpt4s_ids(tok):
        pattern = LLAMA3_SPLIT_PATTERN
    return translate_pattern_for_onig(pattern)


def _pre_tokenizer_json(tok: Tokenizer, byte_level: dict[str, Any]) -> dict[str, Any]:
    """The pipeline for tokenizer.json: ``tok``'s steps with Oniguruma regexes
    (:func:`split_pattern_spelling`), ending in the byte-level step the engine does implicitly
    when the pipeline has none."""
    pre = tok.pre_tokenizer
    if pre is None:
        return dict(byte_level)
    data = pre.to_json(lambda pattern: split_pattern_spelling(pattern, tok))
    if any(step.to_json()["type"] == "ByteLevel" for step in pre.steps()):
        return data
    steps = data["pretokenizers"] if data["type"] == "Sequence" else [data]
    return {"type": "Sequence", "pretokenizers": [*steps, dict(byte_level)]}


def token_splits(vocab: Mapping[int, bytes], ids: Iterable[int]) -> list[tuple[int, int, int]]:
    """``(left id, right id, token id)`` for every split of every token of ``ids`` into two
    tokens of ``ids`` (``vocab`` gives their bytes), by token id, then left and right id.

    These are the pairs that tiktoken's rule merges (``"ranks"`` mode), in the order that makes
    ``tokenizers``' merge-list BPE agree with it (transformers' ``TikTokenConverter`` order). The
    token of id 2**32 - 1 has none: tiktoken never makes it by a merge (engine/encoding/encoder.py).
    """
    token_id: dict[bytes, int] = {}
    for idx in sorted(ids, reverse=True):  # a byte string listed twice is its lowest id
        token_id[vocab[idx]] = idx
    splits = []
    for data, idx in token_id.items():
        if idx == UNMERGEABLE_ID:
            continue
        found = []
        for k in range(1, len(data)):
            a = token_id.get(data[:k])
            if a is not None:
                b = token_id.get(data[k:])
                if b is not None:
                    found.append((a, b, idx))
        splits += found
    splits.sort(key=lambda split: (split[2], split[0], split[1]))
    return splits


_ADDED_TOKEN_DEFAULTS = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}


def _added_token(content: str, idx: int, **fields: Any) -> dict[str, Any]:
    entry = {"id": int(idx), "content": content}
    for key, default in _ADDED_TOKEN_DEFAULTS.items():
        entry[key] = bool(fields.get(key, default))
    return entry


def tokenizer_json_dict(
    tok: Tokenizer,
    *,
    added_tokens_extra: Iterable[Mapping[str, Any]] | None = None,
    trim_offsets: bool = False,
    roles: TokenRoles | None = None,
) -> dict[str, Any]:
    """The whole tokenizer.json for ``tok`` as a dict (``json.dumps`` it to write the file).

    ``added_tokens_extra``: more ``added_tokens`` entries, as dicts with ``id`` and ``content``
    and optionally ``single_word``, ``lstrip``, ``rstrip``, ``normalized``, ``special`` (default
    False for these extras), e.g. tokens added through transformers' ``add_tokens``. An id or a
    string used twice raises ValueError. ``trim_offsets`` goes to the ByteLevel post-processor
    (True strips the leading space from each token's offsets, as GPT-2 fast tokenizers do).
    ``roles`` (default ``tok.roles``) say which BOS / EOS token the post-processor adds; they may
    name an extra added token.
    """
    specials = dict(tok.special_tokens)
    special_ids = set(specials.values())
    spelled = spell_vocab(tok.vocab, skip=special_ids)
    vocab = {text: idx for idx, text in spelled.items()}
    if tok.mode == "ranks" and any(tok.unmerged_tokens.values()):
        pairs = [(a, b) for a, b, _ in token_splits(tok.vocab, set(spelled))]
    else:
        pairs = list(tok.merges)
    merges = [[spelled[a], spelled[b]] for a, b in pairs]

    normalized = tok.normalized_special_tokens
    added = [_added_token(content, idx, normalized=content in normalized) for content, idx in specials.items()]
    for extra in added_tokens_extra or ():
        fields = {k: v for k, v in extra.items() if k in _ADDED_TOKEN_DEFAULTS}
        fields.setdefault("special", False)
        fields.setdefault("normalized", not fields["special"])
        added.append(_added_token(str(extra["content"]), int(extra["id"]), **fields))
    seen_ids: dict[int, str] = {}
    seen_content: set[str] = set()
    for entry in added:
        idx, content = entry["id"], entry["content"]
        if idx in seen_ids or content in seen_content:
            raise ValueError(f"added token {content!r} (id {idx}) repeats an id or a string")
        if idx in spelled:
            raise ValueError(f"added token {content!r}: id {idx} is already the normal token {spelled[idx]!r}")
        if content in vocab:
            raise ValueError(f"added token {content!r} (id {idx}) spells the normal token {vocab[content]}")
        seen_ids[idx] = content
        seen_content.add(content)
    added.sort(key=lambda entry: entry["id"])
    # Listing added tokens in the model vocabulary too makes tokenizers keep their ids; without
    # it, ids above a hole are renumbered to follow the vocabulary.
    for entry in added:
        vocab[entry["content"]] = entry["id"]

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": trim_offsets, "use_regex": False}
    roles = tok.roles if roles is None else roles
    bos = roles.bos_token if roles.add_bos_token else None
    eos = roles.eos_token if roles.add_eos_token else None
    post_processor = dict(byte_level)
    if bos or eos:
        post_processor = {"type": "Sequence", "processors": [post_processor, _template_processing(bos, eos, vocab)]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None if tok.normalizer is None else tok.normalizer.to_json(),
        "pre_tokenizer": _pre_tokenizer_json(tok, byte_level),
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": tok.mode != "merges",
            "vocab": vocab,
            "merges": merges,
        },
    }


def _template_processing(bos: str | None, eos: str | None, ids: Mapping[str, int]) -> dict[str, Any]:
    """``tokenizers``' TemplateProcessing that puts ``bos`` before and ``eos`` after each sequence
    (``ids``: every token's id, added tokens included)."""
    def side(type_id: int, sequence: str) -> list[dict[str, Any]]:
        items = [{"SpecialToken": {"id": bos, "type_id": type_id}}] if bos else []
        items.append({"Sequence": {"id": sequence, "type_id": type_id}})
        if eos:
            items.append({"SpecialToken": {"id": eos, "type_id": type_id}})
        return items

    missing = next((token for token in (bos, eos) if token and token not in ids), None)
    if missing is not None:
        raise ValueError(f"the token {missing!r} to put around each sequence is not in the vocabulary")
    return {
        "type": "TemplateProcessing",
        "single": side(0, "A"),
        "pair": side(0, "A") + side(1, "B"),
        "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                           for token in (bos, eos) if token},
    }


def template_bos_eos(post_processor: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The special tokens that a tokenizer.json ``post_processor`` puts before and after a single
    sequence (``TemplateProcessing``, alone or in a ``Sequence``), or None: what
    :func:`_template_processing` writes, read back."""
    processor = post_processor or {}
    processors = (processor.get("processors") or []) if processor.get("type") == "Sequence" else [processor]
    for item in processors:
        if isinstance(item, Mapping) and item.get("type") == "TemplateProcessing":
            single = item.get("single") or []

            def token(piece: Any) -> str | None:
                special = piece.get("SpecialToken") if isinstance(piece, Mapping) else None
                return special.get("id") if isinstance(special, Mapping) else None

            return (token(single[0]), token(single[-1])) if single else (None, None)
    return None, None
