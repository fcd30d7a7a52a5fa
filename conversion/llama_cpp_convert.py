"""Run llama.cpp's own ``convert_hf_to_gguf.py`` on a model whose tokenizer it does not know yet.

The converter recognises a BPE pre-tokenizer only by the sha256 of the ids its tokenizer gives
:data:`CHKTXT` (``get_vocab_base_pre``); any other hash stops the conversion ("BPE pre-tokenizer
was not recognized"). llama.cpp's fix is a new line in that table, ``if chkhsh == HASH: res =
NAME``; this script adds that one line at run time and runs the converter unchanged::

    python llama_cpp_convert.py LLAMA_CPP_DIR CHKHSH NAME MODEL_DIR [converter options...]

Only the given hash is answered with the given name: every other tokenizer goes through llama.cpp's
table as before. ``hf-bbpe gguf --llama-cpp`` runs it with the hash and name it computed for the
folder (:mod:`conversion.gguf_vocab`).

It is run by path in its own process and imports nothing of hf_bbpe: llama.cpp's converter has a
package named ``conversion`` too, which must be the one imported there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

CHKTXT = (
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 "
    "33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на "
    "Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make "
    "it, 'D you like some tea? We'Ve a'lL"
)
"""The test text whose ids llama.cpp hashes, character for character as ``chktxt`` in its
``get_vocab_base_pre`` (llama.cpp's ``conversion/base.py``, as vendored by llama-cpp-python 0.3.36;
the same text since llama.cpp PR 6920)."""


def chkhsh(tokenizer) -> str:
    """The hash ``get_vocab_base_pre`` computes: sha256 of ``str(tokenizer.encode(CHKTXT))``."""
    return ids_hash(tokenizer.encode(CHKTXT))


def ids_hash(ids: list[int]) -> str:
    """sha256 of ``str(ids)``: how the converter hashes the ids of :data:`CHKTXT`."""
    return hashlib.sha256(str(ids).encode()).hexdigest()


def _load_converter(llama_cpp: Path):
    """Import llama.cpp's ``convert_hf_to_gguf.py`` as a module (its ``main`` not run)."""
    script = llama_cpp / "convert_hf_to_gguf.py"
    if not script.is_file():
        raise SystemExit(f"{script}: no such file (give the llama.cpp source folder)")
    sys.path[:0] = [str(llama_cpp)]
    for name in [name for name in sys.modules if name == "conversion" or name.startswith("conversion.")]:
        del sys.modules[name]  # another package of that name (hf_bbpe's) must not shadow llama.cpp's
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["convert_hf_to_gguf"] = module
    spec.loader.exec_module(module)
    return module, script


def _add_hash(modules: list, known: str, name: str) -> int:
    """Answer ``known`` with ``name`` in every class that defines ``get_vocab_base_pre``."""
    patched = 0
    for module in modules:
        for cls in list(vars(module).values()):
            if isinstance(cls, type) and "get_vocab_base_pre" in vars(cls):
                original = vars(cls)["get_vocab_base_pre"]

                def get_vocab_base_pre(self, tokenizer, _original=original):
                    if chkhsh(tokenizer) == known:
                        return name
                    return _original(self, tokenizer)

                cls.get_vocab_base_pre = get_vocab_base_pre
                patched += 1
    return patched


def main(argv: list[str]) -> None:
    if len(argv) < 4:
        raise SystemExit("usage: llama_cpp_convert.py LLAMA_CPP_DIR CHKHSH NAME MODEL_DIR [converter options...]")
    llama_cpp, known, name, *rest = argv
    module, script = _load_converter(Path(llama_cpp))
    modules = [module, *(sys.modules[m] for m in ("conversion.base",) if m in sys.modules)]
    if not _add_hash(modules, known, name):
        raise SystemExit(f"{script}: found no get_vocab_base_pre to extend (an unknown llama.cpp layout)")
    sys.argv = [str(script), *rest]
    module.main()


if __name__ == "__main__":
    main(sys.argv[1:])
