"""Grow the embedding / LM head of a safetensors checkpoint on disk, without loading the model.

Which tensors to touch comes from the config alone: the model class is built on the ``meta``
device (no memory, no weights) to read the parameter names of ``get_input_embeddings()`` and
``get_output_embeddings()`` and which names alias the same Parameter (tied weights). A checkpoint
stores a tied matrix once: GPT-2 has ``transformer.wte.weight`` and no ``lm_head.weight``; every
alias that is present is rewritten, identically.

Only the shards holding those tensors are rewritten (streamed, see ``safetensors_stream``); the
others are copied byte for byte (or hard-linked on request). Everything is written into a temporary
sibling of the output folder that is renamed into place at the end, so a failure leaves no output.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..engine.files.atomic_write import new_file_mode, replaced_folder, write_text_atomic
from .embedding_resize import SEED_OFFSETS
from .row_init import RowPlan, new_row_values, output_rows_for, plan_for_tokens
from .row_owners import checkpoint_row_owners, rows_to_keep
from .safetensors_stream import Growth, RowReader, SafetensorsHeader, read_header, rewrite_with_growth, torch_dtype
from .token_adding import (
    InitSpec,
    NewTokens,
    add_prepared_tokens,
    added_owners,
    check_pad_multiple,
    prepare_tokens,
    rows_needed,
)

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
CONFIG_FILE = "config.json"
GENERATION_CONFIG_FILE = "generation_config.json"

# Files the extended tokenizer replaces: copying the old ones could leave a stale tokenizer that
# AutoTokenizer would pick up instead of the new one.
TOKENIZER_FILES = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model",
}  # fmt: skip
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx")


@dataclass(frozen=True)
class CheckpointLayout:
    weight_map: dict[str, str]  # tensor name -> file name
    index: dict | None  # parsed index json (sharded) or None (single file)


@dataclass(frozen=True)
class TensorGroups:
    """Checkpoint keys to grow, by the matrix they hold; each group gets its own init seed."""

    embedding: list[str]
    head: list[str]
    head_bias: list[str]
    tied: bool = False  # the embedding is also the LM head

    def is_output(self, role: str) -> bool:
        """Whether the matrix of ``role`` produces logits (row_init.OutputRows applies to it)."""
        return role != "embedding" or self.tied

    def items(self) -> list[tuple[str, list[str]]]:
        return [("embedding", self.embedding), ("head", self.head), ("head_bias", self.head_bias)]


def read_layout(ckpt_dir: Path) -> CheckpointLayout:
    index_path, single_path = ckpt_dir / INDEX_FILE, ckpt_dir / SINGLE_FILE
    if index_path.is_file():
        index = json.loads(index_path.read_text(encoding="utf-8"))
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ValueError(f"{index_path}: no weight_map")
        return CheckpointLayout(dict(weight_map), index)
    if single_path.is_file():
        return CheckpointLayout({name: SINGLE_FILE for name in read_header(single_path).tensors}, None)
    found = sorted(p.name for p in ckpt_dir.iterdir()) if ckpt_dir.is_dir() else []
    raise FileNotFoundError(
        f"{ckpt_dir}: no {SINGLE_FILE} or {INDEX_FILE} (found {found}); only safetensors checkpoints are "
        "supported: re-save with save_pretrained(..., safe_serialization=True)"
    )


def _meta_model(config: Any) -> torch.nn.Module:
    import transformers

    classes = [getattr(transformers, name, None) for name in (getattr(config, "architectures", None) or [])]
    cls = next((c for c in classes if c is not None), None)
    with torch.device("meta"):
        if cls is not None:
            return cls(config)
        try:
            return transformers.AutoModelForCausalLM.from_config(config)
        except ValueError as exc:
            raise ValueError(
                f"cannot build {getattr(config, 'architectures', None) or config.model_type} from its config "
                f"to find the embedding tensors ({exc})"
            ) from None


def tensor_groups(config: Any, keys: set[str]) -> tuple[TensorGroups, int, int]:
    """Checkpoint keys of the embedding / head / head bias, and the expected (rows, width).

    Names come from the model built on the meta device; a checkpoint saved from the base model
    (keys without the ``base_model_prefix``) is recognised too. ValueError if nothing matches.
    """
    model = _meta_model(config)
    emb = model.get_input_embeddings()
    head = model.get_output_embeddings()
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output embeddings: not a causal LM checkpoint")
    names_by_id: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names_by_id.setdefault(id(param), []).append(name)
    prefix = getattr(model, "base_model_prefix", "") or ""

    def present(param: torch.Tensor | None) -> list[str]:
        found = []
        for name in names_by_id.get(id(param), []) if param is not None else []:
            if name in keys:
                found.append(name)
            elif prefix and name.startswith(prefix + ".") and name[len(prefix) + 1 :] in keys:
                found.append(name[len(prefix) + 1 :])
        return sorted(set(found))

    rows, width = emb.weight.shape
    tied = head.weight is emb.weight
    bias = getattr(head, "bias", None)
    groups = TensorGroups(
        embedding=present(emb.weight),
        head=[] if tied else present(head.weight),
        head_bias=present(bias) if isinstance(bias, torch.Tensor) else [],
        tied=tied,
    )
    expected = {
        "embedding": names_by_id.get(id(emb.weight), []),
        "head": [] if tied else names_by_id.get(id(head.weight), []),
        "head_bias": names_by_id.get(id(bias), []) if isinstance(bias, torch.Tensor) else [],
    }
    for role, found in groups.items():
        if expected[role] and not found:
            similar = sorted(k for k in keys if any(part in k for part in ("embed", "wte", "lm_head", "head")))
            raise ValueError(
                f"checkpoint tensor names do not match the config ({type(model).__name__}): none of "
                f"{expected[role]} (the {role.replace('_', ' ')}) is in the checkpoint; similar names: {similar[:10]}"
            )
    return groups, rows, width


def _validate_shapes(groups: TensorGroups, headers: Mapping[str, SafetensorsHeader], rows: int, width: int) -> None:
    for role, names in groups.items():
        expected = (rows,) if role == "head_bias" else (rows, width)
        dtypes = set()
        for name in names:
            header = headers[name]
            if name not in header.tensors:
                raise ValueError(f"the index puts {name!r} in {header.path.name}, but that file does not contain it")
            info = header.tensors[name]
            if info.shape != expected:
                raise ValueError(
                    f"tensor {name!r} in {header.path.name} has shape {list(info.shape)}, but config.json "
                    f"implies {list(expected)} (vocab_size={rows}, hidden={width})"
                )
            torch_dtype(header, name)
            dtypes.add(info.dtype)
        if len(dtypes) > 1:
            raise ValueError(f"tied tensors {names} have different dtypes {sorted(dtypes)}")


def _text_config_key(config: Any) -> str | None:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if text is config:
        return None
    return next((key for key, value in vars(config).items() if value is text), None)


def _updated_config(path: Path, config: Any, rows: int, role_ids: Mapping[str, int]) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    key = _text_config_key(config)
    targets = [data] if key is None or not isinstance(data.get(key), dict) else [data[key], data]
    targets[0]["vocab_size"] = rows
    for target in targets:
        for role, token_id in role_ids.items():
            target[f"{role}_token_id"] = token_id
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _copy_other_files(src: Path, dst: Path, shards: set[str], tokenizer: Any, link: bool) -> None:
    skip = TOKENIZER_FILES | set(getattr(tokenizer, "vocab_files_names", {}).values())
    skip |= {CONFIG_FILE, GENERATION_CONFIG_FILE, INDEX_FILE} | shards
    for entry in sorted(src.iterdir()):
        if entry.name in skip:
            continue
        if not entry.is_file():
            reason = "a folder may not match the new vocabulary"
        elif entry.name.endswith(WEIGHT_SUFFIXES) or entry.name.endswith(".tiktoken"):
            reason = "weights or vocabularies outside the safetensors set would be stale"
        else:
            _copy_file(entry, dst / entry.name, link)
            continue
        warnings.warn(f"not copying {entry.name!r} from {src}: {reason}", stacklevel=4)


def _copy_file(src: Path, dst: Path, link: bool) -> None:
    if link:
        with contextlib.suppress(OSError):
            os.link(src, dst)
            return
    shutil.copyfile(src, dst)


def _normal_permissions(tmp: Path) -> None:
    """Files from mkstemp are 0600; give the ones we wrote (not hard links into ckpt_dir) the umask's mode."""
    mode = new_file_mode()
    for entry in tmp.iterdir():
        if entry.is_file() and entry.stat().st_nlink == 1:
            os.chmod(entry, mode)


def write_grown_checkpoint(
    ckpt: Path,
    tmp: Path,
    layout: CheckpointLayout,
    groups: TensorGroups,
    headers: Mapping[str, SafetensorsHeader],
    plan: RowPlan,
    seed: int,
    link: bool,
) -> None:
    """Write every shard into ``tmp``: grown ones rewritten, the others copied; update the index."""
    growths_by_file: dict[str, dict[str, Growth]] = {}
    for role, names in groups.items():
        for name in names:
            header = headers[name]
            with RowReader(header, name) as reader:
                values = new_row_values(reader, plan, reader.width, reader.dtype, seed + SEED_OFFSETS[role],
                                        output=groups.is_output(role))
            growth = Growth(plan.new_rows, tuple(plan.target_rows), values)
            growths_by_file.setdefault(layout.weight_map[name], {})[name] = growth
    added_bytes = 0
    for filename in sorted(set(layout.weight_map.values())):
        if filename in growths_by_file:
            header = next(h for n, h in headers.items() if layout.weight_map[n] == filename)
            added_bytes += rewrite_with_growth(header, tmp / filename, growths_by_file[filename])
        else:
            _copy_file(ckpt / filename, tmp / filename, link)
    if layout.index is not None:
        index = copy.deepcopy(layout.index)
        metadata = index.setdefault("metadata", {})
        if isinstance(metadata.get("total_size"), int):
            metadata["total_size"] += added_bytes
        if isinstance(metadata.get("total_parameters"), int):
            added_rows = plan.new_rows - plan.old_rows
            per_row = sum(math.prod(headers[n[0]].tensors[n[0]].shape[1:]) for _, n in groups.items() if n)
            metadata["total_parameters"] += added_rows * per_row
        write_text_atomic(tmp / INDEX_FILE, json.dumps(index, indent=2, sort_keys=True) + "\n")


# The keywords repeat add_tokens_and_resize's: this is its on-disk twin, and both hand them to token_adding.
def extend_checkpoint(
    ckpt_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    tokenizer: Any,
    tokens: Sequence[Any],
    *,
    special: bool = False,
    init: InitSpec = "mean",
    pad_to_multiple_of: int | None = None,
    roles: Mapping[str, str] | None = None,
    seed: int = 0,
    overwrite: bool = False,
    link: bool = False,
) -> NewTokens:
    """``surgery.add_tokens_and_resize`` on a safetensors checkpoint folder, without loading the model.

    Reads ``config.json`` and ``model.safetensors`` (or the shards of
    ``model.safetensors.index.json``), rewrites only the embedding / LM head / head bias tensors
    (and their tied aliases), updates ``config.json``, ``generation_config.json`` (roles) and the
    index, copies the other shards byte for byte (``link=True``: hard links, which share the inode
    with ``ckpt_dir``: never write into those files in place), and saves the extended tokenizer.
    Peak memory is a few chunks of a matrix, whatever the model size. The result loads with
    ``from_pretrained`` and equals in-memory surgery with the same arguments.

    ``tokenizer`` must be the checkpoint's tokenizer; it is not modified (the extended copy is the
    result's ``.tokenizer`` and is saved into ``out_dir``). Output is written into a temporary
    sibling folder renamed into place at the end; an existing ``out_dir`` is an error unless
    ``overwrite=True``. Other top-level files are copied; old tokenizer files, stray weight files
    and subfolders are not (a warning names the latter two).

    Rows that already belong to a token by the tokenizer saved in ``ckpt_dir`` are never
    re-initialised: a token that ``tokenizer`` lacks but the checkpoint's tokenizer has at the
    same id keeps its row, trained or not; a row of another token raises ValueError.
    """
    from transformers import AutoConfig

    ckpt, out = Path(ckpt_dir), Path(out_dir)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    check_pad_multiple(pad_to_multiple_of)
    if not (ckpt / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"{ckpt}: no {CONFIG_FILE}")
    layout = read_layout(ckpt)
    config = AutoConfig.from_pretrained(str(ckpt))
    groups, rows, width = tensor_groups(config, set(layout.weight_map))
    header_by_file: dict[str, SafetensorsHeader] = {}
    headers: dict[str, SafetensorsHeader] = {}
    for _, names in groups.items():
        for name in names:
            filename = layout.weight_map[name]
            if filename not in header_by_file:
                header_by_file[filename] = read_header(ckpt / filename)
            headers[name] = header_by_file[filename]
    _validate_shapes(groups, headers, rows, width)

    new_tokenizer = copy.deepcopy(tokenizer)  # the caller's tokenizer is left as it was
    prepared = prepare_tokens(new_tokenizer, tokens, special=special, init=init, roles=roles, num_rows=rows)
    added = add_prepared_tokens(new_tokenizer, prepared)
    keep = rows_to_keep(added_owners(added), rows, lambda: checkpoint_row_owners(ckpt))
    new_rows = rows_needed(new_tokenizer, added.ids, rows, pad_to_multiple_of)
    to_init = [i for i in added.ids if i not in keep]
    plan = plan_for_tokens(rows, new_rows, min(rows, added.old_len), prepared.method, to_init, added.sources_by_id,
                           output_rows_for(prepared.init))

    # built beside ``out`` and switched in whole (atomic_write.replaced_folder); an old ``out`` is
    # replaced, not merged: nothing of it is carried over
    with replaced_folder(out, carry_over=False) as tmp:
        write_grown_checkpoint(ckpt, tmp, layout, groups, headers, plan, seed, link)
        write_text_atomic(tmp / CONFIG_FILE, _updated_config(ckpt / CONFIG_FILE, config, new_rows, added.role_ids))
        generation_config = ckpt / GENERATION_CONFIG_FILE
        if generation_config.is_file():
            data = json.loads(generation_config.read_text(encoding="utf-8"))
            data.update({f"{role}_token_id": i for role, i in added.role_ids.items()})
            write_text_atomic(tmp / GENERATION_CONFIG_FILE, json.dumps(data, indent=2, sort_keys=True) + "\n")
        _copy_other_files(ckpt, tmp, set(layout.weight_map.values()), new_tokenizer, link)
        new_tokenizer.save_pretrained(str(tmp))
        _normal_permissions(tmp)
    return NewTokens(added, new_rows, new_tokenizer)
