"""Make ``AutoTokenizer`` know ``BBPETokenizer`` by name once hf_bbpe is imported.

``AutoTokenizer.register`` maps a config class to tokenizer classes and records the tokenizer
classes by name; the name is what matters here (``tokenizer_class: "BBPETokenizer"`` in a
model's ``config.json`` or ``tokenizer_config.json``), so the config class is a placeholder no
model uses. The keyword ``slow_tokenizer_class=`` works on transformers 4.57 and 5.x alike
(5.x's preferred ``tokenizer_class=`` does not exist in 4.57).

Importing ``AutoTokenizer`` imports torch when it is installed (seconds), so ``import hf_bbpe``
should not do it: :func:`register_when_auto_tokenizer_loads` registers at once if transformers'
auto-tokenizer module is already loaded, and otherwise right after it loads.

Folders that :class:`BBPETokenizer` saves name ``PreTrainedTokenizerFast`` instead, so that
``AutoTokenizer`` loads them without hf_bbpe (see tokenization_bbpe.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

AUTO_TOKENIZER_MODULE = "transformers.models.auto.tokenization_auto"


class BBPETokenizerConfig:
    """Placeholder config class: ``AutoTokenizer.register`` needs one as a key; no model uses it."""


def register_auto_tokenizer(auto_tokenizer: type | None = None) -> None:
    """Register :class:`BBPETokenizer` with ``AutoTokenizer`` now (idempotent)."""
    if auto_tokenizer is None:
        from transformers import AutoTokenizer as auto_tokenizer

    from .tokenization_bbpe import BBPETokenizer

    auto_tokenizer.register(BBPETokenizerConfig, slow_tokenizer_class=BBPETokenizer, exist_ok=True)


def register_when_auto_tokenizer_loads() -> None:
    """Register now if ``AutoTokenizer``'s module is loaded, else as soon as it finishes loading."""
    if AUTO_TOKENIZER_MODULE in sys.modules:
        register_auto_tokenizer()
    elif not any(isinstance(finder, _RegisterAfterLoad) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterLoad())


class _RegisterAfterLoad(MetaPathFinder):
    """One-shot import hook: lets the usual finder find the auto-tokenizer module, then wraps
    its loader so that registration runs right after the module's code."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != AUTO_TOKENIZER_MODULE:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _RegisteringLoader(spec.loader)
                return spec
        return None


class _RegisteringLoader:
    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        register_auto_tokenizer(module.AutoTokenizer)

    def __getattr__(self, name: str):
        return getattr(self._loader, name)
