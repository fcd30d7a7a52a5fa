"""The model card (``README.md``) that a tokenizer pushed to the Hub gets, and the push itself.

transformers' ``push_to_hub`` uploads a stub card with ``library_name`` only; the Hub then shows
no base model, no task and no snippet. The card here carries the metadata the Hub reads
(``library_name: transformers``, ``base_model`` when known, ``pipeline_tag``, tags, ``license``
when given) and a "Use in Transformers" section. A card that already exists (the repository's,
or a ``README.md`` of the user's folder) keeps its text: only metadata it lacks is added, and
the push says so.

This module is part of the remote code (remote_code.py): its imports are relative, and of
third-party libraries only those transformers already needs.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..engine.chunking.patterns import pattern_name
from ..engine.encoding.special_tokens import is_reserved_token
from ..engine.files.atomic_write import write_text_atomic
from .remote_code import wants_remote_code

CARD_TAGS = ("tokenizer", "bpe", "byte-level-bpe", "hf_bbpe")
DEFAULT_PIPELINE_TAG = "text-generation"
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def card_metadata(tok: Any, repo_id: str, *, base_model: str | None = None, license: str | None = None,
                  tags: Iterable[str] = (), pipeline_tag: str | None = DEFAULT_PIPELINE_TAG) -> dict[str, Any]:
    """The Hub metadata of ``tok``'s card. ``base_model`` defaults to the Hub repository ``tok`` was
    loaded from, when that is another repository than ``repo_id``."""
    if base_model is None:
        source = str(getattr(tok, "name_or_path", "") or "")
        if _REPO_ID.fullmatch(source) and not os.path.exists(source) and source != repo_id:
            base_model = source
    metadata: dict[str, Any] = {"library_name": "transformers",
                                "tags": list(dict.fromkeys([*CARD_TAGS, *tags]))}
    for key, value in (("base_model", base_model), ("license", license), ("pipeline_tag", pipeline_tag)):
        if value:
            metadata[key] = value
    return metadata


def tokenizer_card(tok: Any, repo_id: str, metadata: Mapping[str, Any], remote_code: bool = False) -> str:
    """A new card for ``tok`` pushed to ``repo_id``: ``metadata`` as its YAML header, a short
    description and the snippets that load and use it; ``remote_code``: the folder carries the code."""
    from huggingface_hub import ModelCard, ModelCardData

    specials = [token for token in tok.all_special_tokens if not is_reserved_token(token)]
    reserved = sum(1 for token in tok.added_tokens_decoder.values() if is_reserved_token(token.content))
    engine = getattr(tok, "engine", None)
    pattern = engine.plain_pattern if engine is not None else tok.init_kwargs.get("pattern")
    split = pattern_name(pattern) if pattern else None
    lines = [
        f"# {repo_id.split('/')[-1]}",
        "",
        f"A byte-level BPE tokenizer of {len(tok):,} ids"
        + (f", split with the {split} pattern" if split else ", with its own split pattern" if pattern else "")
        + ", saved by hf_bbpe as a transformers tokenizer.",
        "",
    ]
    if specials:
        shown = ", ".join(f"`{token}`" for token in specials[:12]) + (" ..." if len(specials) > 12 else "")
        lines += [f"Special tokens: {shown}."
                  + (f" {reserved} unused ids hold `<|reserved_special_token_N|>`." if reserved else ""), ""]
    lines += [
        "## Use in Transformers",
        "",
        "```python",
        "from transformers import AutoTokenizer",
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{repo_id}")',
        'print(tokenizer("Hello world")["input_ids"])',
        "```",
        "",
    ] + ([
        "Without `trust_remote_code`, transformers loads `tokenizer.json` in its fast class; with",
        "`trust_remote_code=True`, the folder's own `BBPETokenizerFast` (what vLLM and SGLang load), or",
        "`BBPETokenizer`, the Python engine, with `use_fast=False` on transformers 4.57. All give the same ids.",
    ] if remote_code else [
        "transformers loads `tokenizer.json` in its fast class, with or without `trust_remote_code`. With",
        "hf_bbpe installed, `BBPETokenizer.from_pretrained` gives its Python engine, with the same ids.",
    ]) + [
        "",
    ]
    if tok.chat_template:
        lines += [
            "## Chat",
            "",
            "```python",
            'messages = [{"role": "user", "content": "Hi!"}]',
            "ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)",
            "```",
            "",
        ]
    card = ModelCard(f"---\n{ModelCardData(**metadata).to_yaml()}\n---\n" + "\n".join(lines))
    return str(card)


def with_metadata(text: str, metadata: Mapping[str, Any]) -> tuple[str, list[str]]:
    """An existing card's ``text`` with the keys of ``metadata`` it lacks added (tags merged);
    its own values and text are kept. Returns the card and the keys added."""
    from huggingface_hub import ModelCard

    card = ModelCard(text)
    added = []
    for key, value in metadata.items():
        current = getattr(card.data, key, None)
        if key == "tags":
            merged = list(dict.fromkeys([*(current or []), *value]))
            if merged != list(current or []):
                card.data.tags = merged
                added.append(key)
        elif current in (None, "", []):
            setattr(card.data, key, value)
            added.append(key)
    return str(card), added


def push_with_card(tok: Any, repo_id: str, *, model_card: str | None = None,
                   model_card_name: str = "the given README.md", base_model: str | None = None,
                   license: str | None = None, tags: Iterable[str] | None = None,
                   pipeline_tag: str | None = DEFAULT_PIPELINE_TAG, commit_message: str | None = None,
                   commit_description: str | None = None, private: bool | None = None,
                   token: bool | str | None = None, revision: str | None = None,
                   create_pr: bool = False, remote_code: bool | None = None) -> tuple[Any, str]:
    """Save ``tok`` to a temporary folder with a model card and upload it to ``repo_id`` (created
    if needed). The card: ``model_card`` (a README.md's text, e.g. the user's) if given, else the one
    already in the repository, else a new one (:func:`tokenizer_card`); an existing card keeps its
    text and gets the metadata it lacks. One commit, as transformers' ``push_to_hub`` makes it.
    Returns the commit info (its str is the commit's URL) and one line saying which card
    went up (``model_card_name`` names ``model_card`` there). ``remote_code`` is
    ``save_pretrained``'s (None: as the folder ``tok`` was loaded from)."""
    from huggingface_hub import CommitOperationAdd, HfApi, ModelCard
    from huggingface_hub.errors import EntryNotFoundError

    remote_code = wants_remote_code(tok, remote_code)

    api = HfApi()
    repo_id = api.create_repo(repo_id, private=private, token=token, exist_ok=True).repo_id
    metadata = card_metadata(tok, repo_id, base_model=base_model, license=license, tags=tags or (),
                             pipeline_tag=pipeline_tag)
    card, source = model_card, model_card_name
    if card is None:
        try:
            card = str(ModelCard.load(repo_id, token=token))
            source = f"the model card already in {repo_id}"
        except EntryNotFoundError:
            pass
    if card is None:
        text, note = tokenizer_card(tok, repo_id, metadata, remote_code), f"wrote a model card ({', '.join(metadata)})"
    else:
        text, added = with_metadata(card, metadata)
        note = f"kept {source}" + (f", added metadata: {', '.join(added)}" if added else " unchanged")
    with tempfile.TemporaryDirectory() as staging:
        # the commit is made from a complete folder: the whole save and the card, then one commit
        folder = Path(staging, "upload")
        tok.save_pretrained(folder, remote_code=remote_code)
        write_text_atomic(folder / "README.md", text)
        if revision is not None and not revision.startswith("refs/pr"):
            api.create_branch(repo_id, branch=revision, token=token, exist_ok=True)
        files = sorted(path for path in Path(folder).rglob("*") if path.is_file())
        operations = [CommitOperationAdd(path_in_repo=path.relative_to(folder).as_posix(), path_or_fileobj=str(path))
                      for path in files]
        info = api.create_commit(repo_id=repo_id, operations=operations,
                                 commit_message=commit_message or "Upload tokenizer",
                                 commit_description=commit_description, token=token, revision=revision,
                                 create_pr=create_pr)
    return info, note
