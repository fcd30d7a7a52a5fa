"""Which token a row of the embedding already belongs to, so that surgery never re-initialises it.

Re-running a notebook cell that adds tokens or resizes for an extension must not wipe rows that
training has filled since the first run. A row that surgery would initialise for a new id, but
that the model already has, is one of:

* a padding row (an id no tokenizer ever gave): initialised, as documented;
* the row of the same token, from an earlier call: left exactly as it is (a re-run is a no-op
  for the model);
* the row of another token: ValueError, before the tokenizer or the model changes.

What tells them apart is a record of who owns which row:

* in memory, the record that surgery keeps on the model object (:func:`record_row_owners`): every
  row it initialised, with the bytes of the token it belongs to;
* on disk, the added tokens of the tokenizer saved in a checkpoint folder (``tokenizer.json``,
  ``tokenizer_config.json``, ``added_tokens.json``): :func:`folder_row_owners`, used by
  ``extend_checkpoint`` and, for a model loaded from a local folder, by the in-memory calls too.

A row that no record names is taken for padding. A token is identified by its bytes (an added
token by its UTF-8 text), so the same string added as a token or learned as a merge is one token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# The record lives on the model object (not in its config, which would carry it into every
# config.json): it survives copy.deepcopy and .to(), not save_pretrained/from_pretrained.
_RECORD_ATTRIBUTE = "_hf_bbpe_row_owners"

Owners = Mapping[int, bytes]
"""Row id -> the bytes of the token that row belongs to."""


def recorded_row_owners(model: Any) -> dict[int, bytes]:
    """The rows earlier surgery calls initialised on this model object, with their tokens' bytes."""
    return dict(getattr(model, _RECORD_ATTRIBUTE, None) or {})


def record_row_owners(model: Any, owners: Owners) -> None:
    """Add ``owners`` (row id -> token bytes) to the model's record."""
    record = recorded_row_owners(model)
    record.update(owners)
    setattr(model, _RECORD_ATTRIBUTE, record)


def folder_row_owners(folder: str | Path) -> dict[int, bytes]:
    """The added tokens of the tokenizer saved in ``folder``, by id (empty if it holds none).

    transformers 5 lists them in ``tokenizer.json`` only; 4.57 in ``tokenizer_config.json``'s
    ``added_tokens_decoder`` and ``added_tokens.json`` too; a slow tokenizer may have no
    ``tokenizer.json``. A file that is present but malformed raises ValueError naming it.
    """
    folder = Path(folder)
    owners: dict[int, bytes] = {}
    data = _json_file(folder / "tokenizer.json")
    for entry in data.get("added_tokens") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int) and isinstance(entry.get("content"), str):
            owners[entry["id"]] = entry["content"].encode("utf-8")
    decoder = _json_file(folder / "tokenizer_config.json").get("added_tokens_decoder") or {}
    for key, entry in decoder.items() if isinstance(decoder, dict) else ():
        if str(key).isdigit() and isinstance(entry, dict) and isinstance(entry.get("content"), str):
            owners.setdefault(int(key), entry["content"].encode("utf-8"))
    for content, token_id in _json_file(folder / "added_tokens.json").items():
        if isinstance(token_id, int):
            owners.setdefault(token_id, content.encode("utf-8"))
    return owners


def checkpoint_row_owners(folder: str | Path) -> dict[int, tuple[bytes, str]]:
    """:func:`folder_row_owners`, each owner with where it was found (for error messages)."""
    where = f"the tokenizer saved in {folder} says so"
    return {i: (token, where) for i, token in folder_row_owners(folder).items()}


def model_row_owners(model: Any) -> dict[int, tuple[bytes, str]]:
    """The in-memory record over the added tokens of the local folder the model was loaded from,
    each owner with where it was found (for error messages)."""
    config = getattr(model, "config", None)
    source = getattr(config, "name_or_path", None) if config is not None else None
    owners = {}
    if isinstance(source, str) and source and Path(source).is_dir():
        owners = checkpoint_row_owners(source)
    where = "an earlier surgery call on this model initialised it"
    owners.update({i: (token, where) for i, token in recorded_row_owners(model).items()})  # the newer word
    return owners


def rows_to_keep(
    requested: Owners, num_rows: int, read_owners: Callable[[], Mapping[int, tuple[bytes, str]]]
) -> set[int]:
    """The requested ids whose rows exist and already belong to the same token: to be left alone.

    ``requested`` maps each id a call is about to initialise to its token's bytes;
    ``read_owners()`` gives the record, ``{id: (token bytes, where that was found)}``, and is only
    called if some requested id has a row already. Raises ValueError if such a row belongs to
    another token. Rows no record names are padding: not kept.
    """
    existing = {i: token for i, token in requested.items() if i < num_rows}
    owners = read_owners() if existing else {}
    keep = set()
    for token_id, token in sorted(existing.items()):
        if token_id not in owners:
            continue
        owner, where = owners[token_id]
        if owner != token:
            raise ValueError(
                f"row {token_id} of the model already belongs to token {_shown(owner)} ({where}); refusing to "
                f"re-initialise it for {_shown(token)}. Pass the tokenizer that goes with this model."
            )
        keep.add(token_id)
    return keep


def _shown(token: bytes) -> str:
    try:
        return repr(token.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(token)


def _json_file(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data
