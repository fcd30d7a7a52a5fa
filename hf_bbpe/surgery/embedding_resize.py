"""Grow a loaded model's input embedding and LM head in place, old rows copied bit for bit.

We do not call ``model.resize_token_embeddings``: with ``mean_resizing=True`` it samples from a
covariance that costs seconds on a 32k x 2048 matrix, with ``False`` it first random-inits the whole
new matrix, and its behaviour differs between transformers 4.57 and 5.x. Here each grown matrix is
allocated once, the old rows are copied, the new rows come from ``row_init`` (the same code the
checkpoint path runs), and every module that held the old Parameter gets the new one, so tied
weights (GPT-2's ``lm_head.weight is transformer.wte.weight``) stay one Parameter.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .row_init import RowPlan, new_row_values

# Seeds of the "normal" draws are offset per matrix so that an untied head does not get the
# embedding's noise; the checkpoint path uses the same offsets.
SEED_OFFSETS = {"embedding": 0, "head": 1, "head_bias": 2}


def embedding_modules(model: nn.Module, *, need_head: bool = True) -> tuple[nn.Module, nn.Module | None]:
    """The model's input embedding and LM head, checked to be [vocab, width] row matrices."""
    get_in = getattr(model, "get_input_embeddings", None)
    emb = get_in() if callable(get_in) else None
    if emb is None or not isinstance(getattr(emb, "weight", None), torch.Tensor):
        raise ValueError(f"{type(model).__name__} exposes no input embedding with a .weight (get_input_embeddings())")
    get_out = getattr(model, "get_output_embeddings", None)
    head = get_out() if callable(get_out) else None
    if head is None and need_head:
        raise ValueError(
            f"{type(model).__name__} has no output embeddings (get_output_embeddings() is None): "
            "use a causal LM class such as AutoModelForCausalLM, not a base model"
        )
    if emb.weight.dim() != 2:
        raise ValueError(f"input embedding weight has shape {list(emb.weight.shape)}, expected [vocab, hidden]")
    if emb.weight.device.type == "meta":
        raise ValueError("the input embedding is on the meta device (offloaded or not loaded); load the weights first")
    if head is not None:
        weight = getattr(head, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.shape[0] != emb.weight.shape[0]:
            shape = list(weight.shape) if isinstance(weight, torch.Tensor) else None
            raise ValueError(
                f"output embedding weight has shape {shape}, expected [{emb.weight.shape[0]}, hidden] "
                "like the input embedding (transposed or custom heads are not supported)"
            )
        bias = getattr(head, "bias", None)
        if isinstance(bias, torch.Tensor) and list(bias.shape) != [emb.weight.shape[0]]:
            raise ValueError(
                f"output embedding bias has shape {list(bias.shape)}, expected [{emb.weight.shape[0]}] (one per row)"
            )
    return emb, head


def _replace_everywhere(model: nn.Module, old: torch.Tensor, new: nn.Parameter) -> None:
    """Point every module attribute holding ``old`` (tied aliases included) at ``new``."""
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is old:
                module._parameters[name] = new


def _grown(tensor: torch.Tensor, plan: RowPlan, seed: int, output: bool) -> nn.Parameter:
    old = tensor.detach()
    width = old[0].numel() if old.dim() > 1 else 1
    values = new_row_values(lambda a, b: old[a:b], plan, width, old.dtype, seed, output=output)
    new = torch.empty((plan.new_rows, *old.shape[1:]), dtype=old.dtype, device=old.device)
    new[: plan.old_rows] = old
    targets = torch.tensor(plan.target_rows, dtype=torch.long, device=old.device)
    new[targets] = values.reshape(len(plan.target_rows), *old.shape[1:]).to(old.device)
    return nn.Parameter(new, requires_grad=tensor.requires_grad)


def grow_model_rows(model: nn.Module, plan: RowPlan, seed: int) -> None:
    """Grow embedding, head and head bias of ``model`` per ``plan``; update sizes and config."""
    emb, head = embedding_modules(model, need_head=False)
    if emb.weight.shape[0] != plan.old_rows:
        raise ValueError(f"plan expects {plan.old_rows} rows, the embedding has {emb.weight.shape[0]}")
    if not plan.target_rows:  # nothing new: keep the Parameters (and any optimizer's references to them)
        set_vocab_size(model, plan.new_rows)
        return
    with torch.no_grad():
        old_weight = emb.weight
        tied = head is not None and head.weight is old_weight
        # a tied embedding is also the output matrix (row_init.OutputRows)
        new_weight = _grown(old_weight, plan, seed + SEED_OFFSETS["embedding"], output=tied)
        # Compute everything before replacing anything, so an error leaves the model untouched.
        replacements = [(old_weight, new_weight)]
        if head is not None and not tied:
            replacements.append((head.weight, _grown(head.weight, plan, seed + SEED_OFFSETS["head"], output=True)))
        bias = getattr(head, "bias", None) if head is not None else None
        if isinstance(bias, torch.Tensor) and bias.dim() == 1 and bias.shape[0] == plan.old_rows:
            replacements.append((bias, _grown(bias, plan, seed + SEED_OFFSETS["head_bias"], output=True)))
        for old, new in replacements:
            _replace_everywhere(model, old, new)
    if hasattr(emb, "num_embeddings"):
        emb.num_embeddings = plan.new_rows
    if head is not None and hasattr(head, "out_features"):
        head.out_features = plan.new_rows
    set_vocab_size(model, plan.new_rows)


def set_vocab_size(model: nn.Module, rows: int) -> None:
    """What resize_token_embeddings records: the text config's vocab_size and model.vocab_size."""
    config = getattr(model, "config", None)
    if config is not None:
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        text_config.vocab_size = rows
    if isinstance(getattr(model, "vocab_size", None), int):
        model.vocab_size = rows


def set_token_roles(model: Any, role_ids: dict[str, int]) -> None:
    """Set ``<role>_token_id`` in the config (and text config) and in the generation config."""
    if not role_ids:
        return
    config = getattr(model, "config", None)
    configs = [] if config is None else [config]
    if config is not None and hasattr(config, "get_text_config") and config.get_text_config() is not config:
        configs.append(config.get_text_config())
    generation_config = getattr(model, "generation_config", None)
    if generation_config is not None:
        configs.append(generation_config)
    for cfg in configs:
        for role, token_id in role_ids.items():
            setattr(cfg, f"{role}_token_id", token_id)
