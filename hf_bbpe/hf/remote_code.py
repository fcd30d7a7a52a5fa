"""Remote code, on request: the modules ``trust_remote_code=True`` needs, flattened into a folder.

A saved folder is standard by default: tokenizer files only, which every transformers version
loads without this package. ``save_pretrained(..., remote_code=True)`` adds the code of
``BBPETokenizer`` so that ``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)``
gives our classes where hf_bbpe is not installed.

What is copied is computed at save time: the import closure of tokenization_bbpe.py, following
its relative imports, those inside functions and under ``if TYPE_CHECKING`` too (transformers
4.57 copies what those name).
The closure's modules keep their file names and lose their folders; each relative import is
rewritten to name a sibling. transformers 4.57 copies only the modules that the entry file
imports directly, so the entry file gets one line per module that it does not import itself.

The same works on a folder that is itself flat remote code (a ``BBPETokenizerFast`` loaded with
``trust_remote_code`` and saved again): its modules are siblings already.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

from ..engine.files.atomic_write import write_text_atomic

ENTRY_MODULE = "tokenization_bbpe"
"""The file ``auto_map`` names (``tokenization_bbpe.BBPETokenizer``)."""


class RemoteCodeError(RuntimeError):
    """The modules cannot be flattened: two share a file name, or one imports a package's own code."""


def _relative_imports(path: Path) -> list[tuple[ast.ImportFrom, list[Path], bool]]:
    """Each relative import of the module at ``path``, with the module files it names
    and whether it names one module (``from .x import name``) or modules of a package."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        target = base.joinpath(*node.module.split(".")) if node.module else base
        one_module = target.with_suffix(".py").is_file()
        if one_module:
            files = [target.with_suffix(".py")]
        elif target.is_dir():  # "from ..chunking import patterns": each name is a module of the package
            files = [target / f"{alias.name}.py" for alias in node.names]
            missing = [str(file) for file in files if not file.is_file()]
            if missing:
                raise RemoteCodeError(f"{path}, line {node.lineno}: remote code imports modules, not a package's "
                                      f"names; no module {', '.join(missing)}")
        else:
            continue  # a compiled kernel (``._chunk_bpe``): the flat copy takes the Python path
        found.append((node, files, one_module))
    return found


def module_closure(entry: str | os.PathLike) -> list[Path]:
    """The module files that ``entry`` needs, itself first, through relative imports."""
    order = [Path(entry).resolve()]
    seen = set(order)
    for path in order:
        for _, files, _ in _relative_imports(path):
            for file in files:
                file = file.resolve()
                if file not in seen:
                    seen.add(file)
                    order.append(file)
    names: dict[str, Path] = {}
    for path in order:
        if path.name in names:
            raise RemoteCodeError(f"remote code needs two modules named {path.name}: {names[path.name]} and {path}")
        names[path.name] = path
    return order


def flattened_source(path: Path) -> str:
    """The source of ``path`` with every relative import naming a sibling module instead."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for node, files, one_module in sorted(_relative_imports(path), key=lambda item: item[0].lineno, reverse=True):
        sibling = "." + files[0].stem if one_module else "."
        line = lines[node.lineno - 1]
        start = line.index("from", len(line.encode()[: node.col_offset].decode())) + len("from")
        written = "." * node.level + (node.module or "")
        at = line.index(written, start)
        lines[node.lineno - 1] = line[:at] + sibling + line[at + len(written):]
    return "".join(lines)


def remote_code_files(entry: str | os.PathLike) -> dict[str, str]:
    """``{file name: source}`` of the flattened closure of ``entry``; the entry file names every
    module of the closure that it does not import itself (transformers 4.57 copies only those)."""
    closure = module_closure(entry)
    files = {path.name: flattened_source(path) for path in closure}
    entry = closure[0].name
    direct = set(re.findall(r"^\s*(?:from|import)\s+\.(\w+)", files[entry], flags=re.MULTILINE))
    others = [path.stem for path in closure[1:] if path.stem not in direct]
    if others:
        block = ["\n\nimport typing\n\nif typing.TYPE_CHECKING:  # transformers 4.57 copies only the modules this file imports\n"]
        block += [f"    from .{name} import __doc__  # noqa: F401\n" for name in others]
        files[entry] = files[entry].rstrip("\n") + "\n" + "".join(block)
    return files


def wants_remote_code(tok: object, remote_code: bool | None) -> bool:
    """``save_pretrained``'s ``remote_code``: None keeps what the folder ``tok`` was loaded from
    had (an ``auto_map``), so a new tokenizer gets no code."""
    if remote_code is None:
        return bool(getattr(tok, "init_kwargs", {}).get("auto_map"))
    return remote_code


@functools.lru_cache(maxsize=4)
def remote_code_names(entry: str | os.PathLike) -> frozenset[str]:
    """The file names :func:`write_remote_code` writes for ``entry``."""
    return frozenset(path.name for path in module_closure(entry))


def write_remote_code(folder: str | os.PathLike, entry: str | os.PathLike) -> list[str]:
    """Write the flattened closure of ``entry`` (tokenization_bbpe.py) into ``folder``."""
    written = []
    for name, source in remote_code_files(entry).items():
        target = Path(folder) / name
        write_text_atomic(target, source)
        written.append(str(target))
    return written
