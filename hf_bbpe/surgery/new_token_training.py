"""Train only the rows of new tokens (the gist-token recipe), everything else bit-identical.

Design: the new rows live in their own small ``nn.Parameter`` and the embedding / LM head weight
(and head bias) become ``torch.nn.utils.parametrize`` views ``original.index_put(ids, rows)``.
Every other parameter, the original matrices included, gets ``requires_grad=False``.

Why not mask gradients, or restore old rows after each optimizer step:
* Masking gradients is not enough: AdamW's decoupled weight decay (and momentum from earlier steps)
  moves rows whose gradient is zero.
* Restoring after each step needs a hook on every optimizer (custom or wrapped optimizers escape
  it), keeps a full copy of the matrices, and still pays optimizer state for the whole vocabulary.
* A separate parameter is safe by construction: the optimizer never sees an old row (frozen
  parameters have ``grad is None`` and torch optimizers skip them, weight decay included), its
  state is [n_new, hidden] instead of [vocab, hidden], and a tied head shares the one
  parametrization, so embedding and head stay the same tensor. The bias gets its own small one.

While active, ``state_dict()`` reports plain merged ``weight``/``bias`` keys (so ``save_pretrained``
and Trainer checkpoints look like a normal model) and ``load_state_dict`` accepts them.
``remove()`` writes the trained rows into the original Parameters (same objects, so ties and
optimizer references survive) and restores every ``requires_grad`` flag.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from .embedding_resize import embedding_modules


class _NewRows(nn.Module):
    """Parametrization ``original -> original with rows ids replaced by self.rows``."""

    def __init__(self, ids: torch.Tensor, rows: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("ids", ids, persistent=False)
        self.rows = nn.Parameter(rows.detach().clone())
        self._merged: tuple[tuple[int, int, int], torch.Tensor] | None = None

    def forward(self, original: torch.Tensor) -> torch.Tensor:
        return original.index_put((self.ids,), self.rows)

    def merged(self, original: torch.Tensor) -> torch.Tensor:
        """Detached merged tensor, cached so tied aliases get the same object in one state_dict."""
        key = (id(original), original._version, self.rows._version)
        if self._merged is None or self._merged[0] != key:
            with torch.no_grad():
                self._merged = (key, original.detach().index_put((self.ids,), self.rows.detach()))
        return self._merged[1]


def _register_state_dict_post_hook(module: nn.Module, hook: Any) -> Any:
    if hasattr(module, "register_state_dict_post_hook"):
        return module.register_state_dict_post_hook(hook)
    return module._register_state_dict_hook(hook)  # torch < 2.2


class NewTokenTraining:
    """Handle returned by :func:`train_only_new_tokens`; ``remove()`` ends it (also a context manager)."""

    def __init__(self, model: nn.Module, new_ids: Iterable[int]) -> None:
        emb, head = embedding_modules(model, need_head=False)
        rows = emb.weight.shape[0]
        ids = sorted({int(i) for i in new_ids})
        if not ids:
            raise ValueError("new_ids is empty: there are no rows to train")
        bad = [i for i in ids if not 0 <= i < rows]
        if bad:
            raise ValueError(f"ids {bad} have no row in the embedding ({rows} rows): resize the model first")
        if any(parametrize.is_parametrized(m) for m in model.modules()):
            raise RuntimeError(
                "the model already has parametrizations (an active train_only_new_tokens?); remove them first"
            )

        self.model = model
        self.new_ids = ids
        self._flags = [(p, p.requires_grad) for p in model.parameters()]
        self._registered: list[tuple[nn.Module, str]] = []
        self._hooks: list[Any] = []
        self._parametrizations: list[tuple[_NewRows, torch.Tensor]] = []

        index = torch.tensor(ids, dtype=torch.long, device=emb.weight.device)
        targets = [emb.weight]
        if head is not None:
            targets.append(head.weight)
            bias = getattr(head, "bias", None)
            if isinstance(bias, torch.Tensor) and bias.dim() == 1 and bias.shape[0] == rows:
                targets.append(bias)

        for p in model.parameters():
            p.requires_grad_(False)
            # optimizers skip a parameter only when its grad is None: a stale grad (an earlier
            # backward, zero_grad(set_to_none=False)) would still get momentum and weight decay
            p.grad = None
        try:
            seen: set[int] = set()
            for original in targets:
                if id(original) in seen:  # tied head: the embedding's parametrization covers it
                    continue
                seen.add(id(original))
                rows_param = _NewRows(index.to(original.device), original.detach()[index.to(original.device)])
                self._parametrizations.append((rows_param, original))
                for module, name in self._holders(original):
                    parametrize.register_parametrization(module, name, rows_param)
                    self._registered.append((module, name))
            for module in {id(m): m for m, _ in self._registered}.values():
                # Fresh functions: torch marks post hooks with an attribute, which bound methods refuse.
                self._hooks.append(_register_state_dict_post_hook(module, lambda *a: self._merge_state_dict(*a)))
                self._hooks.append(
                    module._register_load_state_dict_pre_hook(lambda *a: self._split_state_dict(*a), with_module=True)
                )
        except BaseException:
            self.remove()
            raise

    def _holders(self, tensor: torch.Tensor) -> list[tuple[nn.Module, str]]:
        """Every (module, attribute) holding ``tensor`` directly: the module itself and its tied aliases."""
        return [
            (module, name)
            for module in self.model.modules()
            for name, param in module._parameters.items()
            if param is tensor
        ]

    def parameters(self) -> list[nn.Parameter]:
        """The trainable new-row parameters (build the optimizer from these or from model.parameters())."""
        return [p.rows for p, _ in self._parametrizations]

    def _merge_state_dict(self, module: nn.Module, state_dict: dict, prefix: str, local_metadata: Any) -> None:
        for name, plist in module.parametrizations.items():
            original_key = f"{prefix}parametrizations.{name}.original"
            if original_key not in state_dict or not isinstance(plist[0], _NewRows):
                continue
            del state_dict[original_key]
            state_dict.pop(f"{prefix}parametrizations.{name}.0.rows", None)
            state_dict[f"{prefix}{name}"] = plist[0].merged(plist.original)

    def _split_state_dict(self, module: nn.Module, state_dict: dict, prefix: str, *args: Any) -> None:
        for name, plist in module.parametrizations.items():
            key = f"{prefix}{name}"
            if key in state_dict and isinstance(plist[0], _NewRows):
                value = state_dict.pop(key)
                state_dict[f"{prefix}parametrizations.{name}.original"] = value
                state_dict[f"{prefix}parametrizations.{name}.0.rows"] = value[plist[0].ids.to(value.device)]

    def remove(self) -> None:
        """Write the trained rows into the original weights, drop the parametrizations, restore flags."""
        with torch.no_grad():
            for rows_param, original in self._parametrizations:
                original.index_put_((rows_param.ids,), rows_param.rows.detach())
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        for module, name in self._registered:
            if parametrize.is_parametrized(module, name):
                parametrize.remove_parametrizations(module, name, leave_parametrized=False)
        self._registered.clear()
        self._parametrizations.clear()
        for param, flag in self._flags:
            param.requires_grad_(flag)
        self._flags.clear()

    def __enter__(self) -> NewTokenTraining:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def train_only_new_tokens(model: nn.Module, new_ids: Sequence[int]) -> NewTokenTraining:
    """Freeze ``model`` except the embedding / LM head (and head bias) rows of ``new_ids``.

    Build the optimizer afterwards, from ``handle.parameters()`` or ``model.parameters()`` (the
    frozen ones are skipped). However many steps of any torch optimizer (AdamW with weight decay
    included), every old row and every other parameter stays bit-identical. ``state_dict()``,
    ``save_pretrained`` and ``load_state_dict`` see a plain model meanwhile. ``handle.remove()``
    (or leaving ``with train_only_new_tokens(...)``) merges the rows back and restores training of
    everything; do it before resizing again or calling ``model.tie_weights()``.
    """
    return NewTokenTraining(model, new_ids)
