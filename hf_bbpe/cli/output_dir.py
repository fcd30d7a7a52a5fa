"""Output paths: checked before a command does any work, and folders written so that a failure
leaves nothing half written; the tokenizer folder that ``train``, ``extend`` and ``convert --to
hf`` write.

Every command that writes files calls :func:`check_output` on each output path first, so a bad
``--out`` fails at once instead of after training or converting.

Everything is written into a temporary folder beside the target; only when all files are there
is it switched in, whole, in one atomic step (atomic_write.replaced_folder), so that a killed run
leaves the old folder or the new one, never a mix.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..engine.files.atomic_write import replaced_folder, temp_dir_beside
from ..engine.tokenizer import Tokenizer
from ..hf.chat_presets import chat_preset
from ..hf.saved_folder import saved_files
from .arguments import apply_roles, register_new_specials
from .errors import CommandError
from .tokenizer_spec import MODEL_FILE_IN_FOLDER


def check_output(path: str | os.PathLike, *, folder: bool, make_parents: bool = False) -> Path:
    """Raise a CommandError now if ``path`` cannot be written as a folder (``folder=True``) or a file.

    A folder target may exist (its files are replaced) but not as a file; a file target may not be
    a folder. Its parent must be a writable folder, or, with ``make_parents`` (writers that create
    missing parents), the nearest existing ancestor must be.
    """
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise CommandError(f"{path}: exists and is not a folder")
    if not folder and path.is_dir():
        raise CommandError(f"{path}: is a folder (give a file name)")
    parent = path.parent
    while make_parents and not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "no such folder"
        raise CommandError(f"{parent}: {what} (the parent of {path})")
    try:  # the writers' own first step (os.access says yes to root, also on a read-only mount)
        os.rmdir(temp_dir_beside(parent / path.name))
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}") from None
    return path


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a new folder to fill; on success it replaces ``target`` whole, in one atomic step, with
    the files of ``target`` that are not a tokenizer's (saved_folder.saved_files) carried over
    (atomic_write.replaced_folder)."""
    target = check_output(target, folder=True)
    with replaced_folder(target, saved_files()) as stage:
        yield stage


def save_folder(tok: Tokenizer, out: str, *, chat: dict | None = None, remote_code: bool = False) -> list[str]:
    """Write the save_pretrained files (when transformers is there; the tokenizer's roles give its
    bos/eos/pad tokens and add-BOS rule) and ``tokenizer.model`` + ``.vocab`` into a new folder
    that replaces ``out`` whole (:func:`staged_folder`); returns the names written. ``chat`` is a ``--chat-template`` value
    (arguments.chat_template_value): a preset's special tokens become special tokens of ``tok``
    (next free ids), so ``tokenizer.model`` holds them too; ``remote_code``: ``--remote-code``."""
    prefix = MODEL_FILE_IN_FOLDER.removesuffix(".model")
    chat = chat or {}
    if "chat_preset" in chat:
        register_new_specials(tok, list(chat_preset(chat["chat_preset"]).special_tokens))
    with staged_folder(out) as stage:
        carried = set(os.listdir(stage))
        hf_class = transformers_class()
        if hf_class is not None:
            hf_class.from_engine(tok, **chat).save_pretrained(str(stage), remote_code=remote_code)
        elif chat:
            raise CommandError("--chat-template needs the transformers integration (hf_bbpe.hf.tokenization_bbpe)")
        tok.save(stage / prefix)
        names = sorted(name for name in os.listdir(stage) if name not in carried or name in saved_files())
    return names


def save_trained_folder(tok: Tokenizer, args: argparse.Namespace) -> list[str]:
    """What ``train`` and ``extend`` end with: register the ``--special`` tokens that are not
    special yet (next free ids), give the role options (:func:`apply_roles`), then
    :func:`save_folder` to ``--out``."""
    register_new_specials(tok, args.special)
    apply_roles(tok, args)
    return save_folder(tok, args.out, chat=args.chat_template, remote_code=args.remote_code)


def describe_folder(out: str, names: list[str]) -> str:
    """``out/ (N files: tokenizer.model + save_pretrained files)`` for the summary line."""
    kinds = ["tokenizer.model"] + (["save_pretrained files"] if "tokenizer_config.json" in names else [])
    return f"{out}/ ({len(names)} files: {' + '.join(kinds)})"


def transformers_class():
    """``BBPETokenizer`` if the transformers integration is importable, else None."""
    try:
        from ..hf.tokenization_bbpe import BBPETokenizer
    except ImportError:
        return None
    return BBPETokenizer
