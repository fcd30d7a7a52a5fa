#!/usr/bin/env python
"""Does vocabulary extension pay off on a model, and which row init is best?

Measures bits per byte on held-out new-domain text, at step 0 and after fine-tuning, for each
init of ``surgery.resize_for_extension``, against the unextended model fine-tuned on the same
text for the same number of steps and for the same number of bytes.

* Base model: a tiny GPT-2 (GPT2LMHeadModel from a config: 4 layers, 256 wide, tied head, GPT-2's
  tokenizer) pretrained for ``--pretrain-steps`` steps on English prose with 15% Python code and
  some of the new domain (``--base-domain-share``, 30%), so that its old embeddings already mean
  something for the new languages, as a real model's do. It is cached in ``--cache-dir``, so later runs (other seeds,
  inits) reuse it. Or ``--model DIR``: your own transformers causal LM folder, with its
  tokenizer.json (or vocab.json + merges.txt).
* New domain: the German, Chinese and Russian documents of the corpus (``--languages``; the
  default corpus is this project's shared 49 MB mix), or every document with ``--languages all``.
  Documents are split by language into held-out, pretraining-share and training documents.
* Extension: the base tokenizer extended by ``--new-merges`` merges on the training documents
  (``Tokenizer.extend``), then ``resize_for_extension(model, base, extended, init=...)``.
* Fine-tuning: ``--steps`` steps of ``--tokens-per-step`` tokens, read in order from the training
  documents shuffled by the seed; every arm of a seed reads the same text in the same order.
  The unextended arm runs until it has read as many bytes as the extended arms did in
  ``--steps`` steps, and is evaluated at equal steps and at equal bytes.
* Held-out: chunks of at most ``seq_len - 1`` bytes (so they fit the context with either
  tokenizer), each scored from a leading end-of-text token. Bits per byte = summed NLL / ln 2 /
  bytes, which compares tokenizers fairly. Bytes per token there is the sequence-length gain.

Every init of ``resize_for_extension`` is measured unless ``--inits`` names some (its default is
always measured, first). Prints a markdown table (mean ± sample standard deviation over seeds,
and each init's final bits per byte minus the default init's, paired by seed); ``--out x.json``
(per-seed values too) or ``--out x.md`` also writes it. The default run does about 1,100
training steps of 1,024 tokens in one thread (300 of them pretraining the base; the unextended
arm's equal-bytes steps vary by seed) and 37 scorings of the held-out text, about 930 CPU seconds (the LM head is fused with its loss,
``ChunkedHeadLoss``, so no full float32 logits are built). Only pretraining the base is serial:
the fine-tuning runs (each init x seed, and the unextended arm of each seed, with their step-0
scorings) are independent, and ``--jobs N`` runs them in N forked worker processes of one torch
thread each (default: one per CPU available, at most the number of runs). Measured: a cold
default run took 9 minutes 48 seconds on 2 cores (load average about 2). Every run seeds its own
RNGs: the numbers are the same whatever ``--jobs``. ``--threads 2`` runs one process of two
threads (forked workers of several threads stalled in a try); contended, two threads cost 3x the
CPU per step. ``--quick`` is a smoke
run of a minute or two.

    python scripts/bench_extension_model.py [--corpus mix-49mb.txt.xz] [--model DIR]
        [--new-merges 3000] [--steps 30] [--seeds 3] [--inits subtoken_scaled,zeros,...]
        [--untied] [--threads N] [--jobs N] [--out results.md] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import lzma
import math
import os
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import transformers  # noqa: E402

import conversion  # noqa: E402
from hf_bbpe import Tokenizer, surgery  # noqa: E402
from hf_bbpe.engine.worker_pool import available_cpus, forked_pool, shared, usable_workers  # noqa: E402

GPT2_DATA = REPO / "tests" / "data" / "gpt2"
CORPUS_NAME = Path("shared") / "data" / "bench" / "mix-49mb.txt.xz"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hf_bbpe" / "bench_extension_model"
NO_EXTENSION = "no extension"

# Language of a document, by script and by function words: a heuristic that is good enough to
# split the shared corpus (Debian fortunes in several languages, CPython sources, an English
# Wikipedia article) into the new domain and the base model's text.
ENGLISH_WORDS = frozenset("the and of you that is with this for are was have".split())
GERMAN_WORDS = frozenset("und der die das nicht ist ich ein eine mit sie es den auf sich".split())
CODE_HINTS = ("def ", "import ", "return ", "self.", "class ", "    ")
WORD = re.compile(r"[^\W\d_]+")


def default_corpus() -> Path | None:
    """The shared corpus, looked for beside each folder above this script."""
    for folder in Path(__file__).resolve().parents:
        if (folder / CORPUS_NAME).is_file():
            return folder / CORPUS_NAME
    return None


def language(doc: str) -> str:
    """'zh', 'ru', 'code', 'de', 'en' or 'other' (too short or undecided)."""
    letters = sum(ch.isalpha() for ch in doc)
    if letters < 20:
        return "other"
    if sum("\u3040" <= ch <= "\u9fff" for ch in doc) > 0.3 * letters:
        return "zh"
    if sum("\u0400" <= ch <= "\u04ff" for ch in doc) > 0.3 * letters:
        return "ru"
    if sum(hint in doc for hint in CODE_HINTS) >= 3:
        return "code"
    words = WORD.findall(doc.lower())
    english = sum(w in ENGLISH_WORDS for w in words)
    german = sum(w in GERMAN_WORDS for w in words)
    if german > english and german >= 0.08 * len(words):
        return "de"
    if english > german and english >= 0.08 * len(words):
        return "en"
    return "other"


def read_documents(path: Path) -> list[str]:
    """Documents of a UTF-8 text file (``.xz`` is decompressed), separated by blank lines."""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [doc for doc in handle.read().split("\n\n") if doc.strip()]


def chunks(text: str, max_bytes: int) -> list[str]:
    """``text`` cut at line ends (inside a long line, at characters) into pieces of <= max_bytes."""
    out: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line.encode("utf-8")) > max_bytes:
            cut = max_bytes
            while len(line[:cut].encode("utf-8")) > max_bytes:
                cut -= 1
            if current:
                out.append(current)
                current = ""
            out.append(line[:cut])
            line = line[cut:]
        if len((current + line).encode("utf-8")) > max_bytes:
            out.append(current)
            current = ""
        current += line
    if current.strip():
        out.append(current)
    return [c for c in out if c.strip()]


def n_bytes(texts: Sequence[str]) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


@dataclass
class Split:
    """The text of every role: new-domain training, held-out and pretraining-share segments."""

    train: list[str]
    held_out: list[str]
    base_share: list[str]
    base: list[str] = field(default_factory=list)
    languages: dict[str, int] = field(default_factory=dict)  # held-out bytes per language


def split_documents(docs: list[str], args: argparse.Namespace, need_base: bool) -> Split:
    """Split ``docs`` by language and role; the same documents every run (fixed shuffle)."""
    wanted = None if args.languages == "all" else set(args.languages.split(","))
    by_lang: dict[str, list[str]] = {}
    base: list[str] = []
    code: list[str] = []
    for doc in docs:
        lang = "all" if wanted is None else language(doc)
        if wanted is None or lang in wanted:
            by_lang.setdefault(lang, []).append(doc)
        elif lang == "en":
            base.append(doc)
        elif lang == "code":
            code.append(doc)
    if not by_lang:
        raise SystemExit(f"no documents of languages {args.languages!r} in the corpus")
    rng = random.Random(0)
    split = Split(train=[], held_out=[], base_share=[])
    eval_per_lang = args.eval_bytes // len(by_lang)
    for lang, lang_docs in sorted(by_lang.items()):
        rng.shuffle(lang_docs)
        # held-out documents: about three times the bytes we score, chunks taken evenly from them
        pool, rest = [], list(lang_docs)
        while rest and (not pool or n_bytes(pool) < 3 * eval_per_lang) and len(rest) > 1:
            pool.append(rest.pop())
        pieces = [c for doc in pool for c in chunks(doc, args.seq_len - 1)]
        stride = max(1, len(pieces) * (args.seq_len // 2) // max(1, eval_per_lang))
        picked = pieces[::stride]
        while picked and n_bytes(picked) > eval_per_lang:
            picked.pop()
        split.held_out += picked
        split.languages[lang] = n_bytes(picked)
        if need_base:  # documents the base model reads in pretraining, never scored or fine-tuned on
            # a generous byte budget: 4 bytes per token, more than any of these languages needs
            budget = args.base_domain_share * args.pretrain_steps * args.tokens_per_step * 4 / len(by_lang)
            taken = 0
            while len(rest) > 1 and taken < budget:
                doc = rest.pop()
                split.base_share.append(doc)
                taken += len(doc.encode("utf-8"))
        split.train += [c for doc in rest for c in chunks(doc, 2048)]
    if need_base:  # English with 15% Python code, shuffled together
        if not base:
            raise SystemExit("the corpus has no English documents to pretrain the tiny base on; pass --model DIR")
        rng.shuffle(base)
        rng.shuffle(code)
        split.base = [c for doc in base for c in chunks(doc, 2048)]
        code_budget = n_bytes(split.base) * 15 // 85
        for doc in code:
            if code_budget <= 0:
                break
            split.base += chunks(doc, 2048)
            code_budget -= len(doc.encode("utf-8"))
        rng.shuffle(split.base)
    return split


def token_stream(tok: Tokenizer, segments: Sequence[str], eot: int, max_tokens: int) -> torch.Tensor:
    """Segments encoded in order, each followed by ``eot``, until ``max_tokens`` tokens."""
    ids: list[int] = []
    for segment in segments:
        ids += tok.encode_ordinary(segment)
        ids.append(eot)
        if len(ids) >= max_tokens:
            break
    if len(ids) < max_tokens:
        raise SystemExit(f"not enough text: {len(ids)} tokens, need {max_tokens}; use fewer --steps or more text")
    return torch.tensor(ids[:max_tokens], dtype=torch.long)


def token_bytes(tok: Tokenizer, stream: torch.Tensor) -> torch.Tensor:
    """Cumulative bytes of text a token stream covers (special tokens count 0)."""
    special = set(tok.special_tokens.values())
    lengths = {i: 0 if i in special else len(b) for i, b in tok.vocab.items()}
    return torch.tensor([lengths[i] for i in stream.tolist()]).cumsum(0)


@dataclass
class HeldOut:
    """A tokenizer's view of the held-out chunks, batched for scoring."""

    batches: list[tuple[torch.Tensor, torch.Tensor]]  # (input ids, labels with -100 on padding)
    n_bytes: int
    n_tokens: int


def encode_held_out(tok: Tokenizer, texts: Sequence[str], bos: int, seq_len: int, batch_tokens: int) -> HeldOut:
    rows = sorted(([bos] + tok.encode_ordinary(text) for text in texts), key=len)
    if rows and len(rows[-1]) > seq_len:
        raise SystemExit(f"a held-out chunk needs {len(rows[-1])} tokens, more than the context of {seq_len}")
    batches = []
    start = 0
    while start < len(rows):
        width = len(rows[start])
        stop = start
        while stop < len(rows) and (stop - start + 1) * len(rows[stop]) <= max(batch_tokens, len(rows[stop])):
            width = len(rows[stop])
            stop += 1
        ids = torch.zeros(stop - start, width, dtype=torch.long)
        labels = torch.full((stop - start, width), -100, dtype=torch.long)
        for r, row in enumerate(rows[start:stop]):
            ids[r, : len(row)] = torch.tensor(row)
            labels[r, : len(row)] = torch.tensor(row)
        batches.append((ids, labels))
        start = stop
    return HeldOut(batches, n_bytes(texts), sum(len(r) - 1 for r in rows))


HEAD_CHUNK = 64  # rows of logits formed at a time: 13 MB of float32 with a 50k vocabulary


class ChunkedHeadLoss(torch.autograd.Function):
    """Mean cross entropy of ``hidden @ weight.T`` against ``labels``, the LM head fused with its loss.

    The same numbers as the model's own head and loss under autocast (logits from a ``dtype``
    matmul, softmax in float32), but formed ``HEAD_CHUNK`` rows at a time with the gradient of
    the logits taken in the same pass: the full tokens x vocab float32 logits, their
    log-softmax and its backward are never materialised, which was most of a step's time with
    a 50k vocabulary on a 256-wide model.
    """

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        h, w = hidden.to(dtype), weight.to(dtype)
        grad_logits = torch.empty(len(h), len(w), dtype=dtype)
        total = torch.zeros((), dtype=torch.float64)
        for start in range(0, len(h), HEAD_CHUNK):
            rows = slice(start, start + HEAD_CHUNK)
            log_probs = torch.log_softmax(h[rows] @ w.T, -1, dtype=torch.float32)
            target = labels[rows, None]
            total -= log_probs.gather(1, target).sum(dtype=torch.float64)
            probs = log_probs.exp_()
            probs.scatter_add_(1, target, torch.full(target.shape, -1.0))
            torch.div(probs, len(h), out=grad_logits[rows])  # the gradient of the mean
        ctx.save_for_backward(h, w, grad_logits)
        ctx.dtypes = hidden.dtype, weight.dtype
        return (total / len(h)).float()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        h, w, grad_logits = ctx.saved_tensors
        grad_hidden = (grad_logits @ w).float().mul_(grad).to(ctx.dtypes[0])
        grad_weight = (grad_logits.T @ h).float().mul_(grad).to(ctx.dtypes[1])
        return grad_hidden, grad_weight, None, None


def head_parts(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.Tensor] | None:
    """The body and head weight of a GPT-2 whose logits are ``hidden @ weight.T``, else None."""
    from transformers import GPT2LMHeadModel

    if isinstance(model, GPT2LMHeadModel) and model.lm_head.bias is None:
        return model.transformer, model.lm_head.weight
    return None


def causal_lm_loss(model: torch.nn.Module, window: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Mean next-token loss on ``window`` (the tiny GPT-2 through ChunkedHeadLoss, others by their own forward)."""
    parts = head_parts(model)
    if parts is None:
        return model(input_ids=window, labels=window).loss
    body, weight = parts
    hidden = body(input_ids=window).last_hidden_state[:, :-1]
    return ChunkedHeadLoss.apply(hidden.reshape(-1, hidden.shape[-1]), weight, window[:, 1:].reshape(-1), dtype)


@torch.inference_mode()
def bits_per_byte(model: torch.nn.Module, held_out: HeldOut) -> float:
    """Bits per byte of the held-out text, in float32; with the tiny GPT-2, logits in chunks of rows."""
    model.eval()
    parts = head_parts(model)
    total = 0.0
    for ids, labels in held_out.batches:
        targets = labels[:, 1:].reshape(-1)
        keep = targets != -100
        targets = targets[keep]
        if parts is None:
            hidden, weight = model(input_ids=ids).logits[:, :-1].float(), None
        else:
            hidden, weight = parts[0](input_ids=ids).last_hidden_state[:, :-1], parts[1]
        hidden = hidden.reshape(-1, hidden.shape[-1])[keep]
        for start in range(0, len(hidden), HEAD_CHUNK):
            rows = slice(start, start + HEAD_CHUNK)
            logits = hidden[rows] if weight is None else hidden[rows] @ weight.T
            total -= float(torch.log_softmax(logits, -1).gather(1, targets[rows, None]).sum(dtype=torch.float64))
    return total / math.log(2) / held_out.n_bytes


def train_steps(
    model: torch.nn.Module,
    stream: torch.Tensor,
    steps: int,
    args: argparse.Namespace,
    lr: float,
    warmup: int,
    evaluate_at: dict[int, object] | None = None,
    cosine: bool = False,
    log=None,
) -> tuple[dict[int, float], float]:
    """Train on consecutive windows of ``stream``; returns bits per byte at the asked steps and the last loss.

    ``evaluate_at`` maps a step to a callable giving the metric after that many steps.
    """
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    batch = args.tokens_per_step // args.seq_len
    results: dict[int, float] = {}
    evaluate_at = evaluate_at or {}
    loss = float("nan")
    for step in range(steps + 1):
        if step in evaluate_at:
            results[step] = evaluate_at[step]()
            model.train()
        if step == steps:
            break
        scale = min(1.0, (step + 1) / max(1, warmup))
        if cosine:
            scale *= 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in optimizer.param_groups:
            group["lr"] = lr * scale
        window = stream[step * args.tokens_per_step : (step + 1) * args.tokens_per_step].view(batch, args.seq_len)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            out = causal_lm_loss(model, window, torch.bfloat16 if args.bf16 else torch.float32)
        out.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss = out.item()
        if log is not None and (step + 1) % 50 == 0:
            log(f"step {step + 1}/{steps}: loss {loss:.3f}")
    model.eval()
    return results, loss


def tiny_gpt2(args: argparse.Namespace, vocab_size: int, eot: int) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=args.layers, n_embd=args.width, n_head=max(1, args.width // 64), n_positions=args.seq_len,
        vocab_size=vocab_size, bos_token_id=eot, eos_token_id=eot, tie_word_embeddings=not args.untied,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    torch.manual_seed(0)
    return GPT2LMHeadModel(config)


def pretrained_base(args: argparse.Namespace, tok: Tokenizer, split: Split, eot: int, log) -> tuple[torch.nn.Module, dict]:
    """The tiny base model, from the cache or pretrained now (and cached)."""
    from transformers import GPT2LMHeadModel

    # windows of English/code and of the new domain, shuffled together: the domain's share is
    # spread evenly through pretraining
    windows = args.pretrain_steps * args.tokens_per_step // args.seq_len
    n_domain = round(windows * args.base_domain_share) if split.base_share else 0
    parts = [token_stream(tok, split.base, eot, (windows - n_domain) * args.seq_len)]
    if n_domain:
        parts.append(token_stream(tok, split.base_share, eot, n_domain * args.seq_len))
    stacked = torch.cat([part.view(-1, args.seq_len) for part in parts])
    stream = stacked[torch.randperm(windows, generator=torch.Generator().manual_seed(0))].reshape(-1)
    recipe = {
        "layers": args.layers, "width": args.width, "seq_len": args.seq_len, "untied": args.untied,
        "steps": args.pretrain_steps, "tokens_per_step": args.tokens_per_step, "lr": args.pretrain_lr, "bf16": args.bf16,
        "stream": hashlib.sha256(stream.numpy().tobytes()).hexdigest(), "version": 1,
    }  # fmt: skip
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    folder = args.cache_dir / f"base-{key}"
    if (folder / "recipe.json").is_file():
        log(f"base model: cached in {folder}")
        return GPT2LMHeadModel.from_pretrained(str(folder)).float().eval(), json.loads((folder / "recipe.json").read_text())
    log(f"base model: pretraining {args.pretrain_steps} steps ({len(stream):,} tokens, "
        f"{args.base_domain_share:.0%} new domain) -> {folder}")
    model = tiny_gpt2(args, tok.n_vocab, eot)
    start, cpu = time.perf_counter(), time.process_time()
    _, loss = train_steps(model, stream, args.pretrain_steps, args, args.pretrain_lr, warmup=20, cosine=True, log=log)
    recipe.update(final_loss=round(loss, 4), seconds=round(time.perf_counter() - start, 1),
                  cpu_seconds=round(time.process_time() - cpu, 1))
    log(f"base model: pretrained in {recipe['seconds']} s, final loss {loss:.3f}")
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    model.save_pretrained(str(tmp))
    (tmp / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    if folder.exists():  # another run cached the same recipe meanwhile
        shutil.rmtree(tmp)
    else:
        tmp.replace(folder)
    return model.eval(), recipe


def user_model(path: Path) -> tuple[torch.nn.Module, Tokenizer]:
    from transformers import AutoModelForCausalLM

    if (path / "tokenizer.json").is_file():
        tok = conversion.from_tokenizer_json(path / "tokenizer.json")
    elif (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
        tok = conversion.from_transformers_gpt2(path)
    else:
        raise SystemExit(f"{path}: no tokenizer.json or vocab.json + merges.txt to extend")
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    return model.eval(), tok


def summary(values: Sequence[float], signed: bool = False) -> str:
    """Mean ± sample standard deviation (a single value as is)."""
    sign = "+" if signed else ""
    if len(values) == 1:
        return f"{values[0]:{sign}.3f}"
    return f"{statistics.mean(values):{sign}.3f} ± {statistics.stdev(values):.3f}"


def markdown(results: dict) -> str:
    setup, arms, tok = results["setup"], results["arms"], results["tokenizer"]
    default = results["default_init"]
    lines = [
        f"| arm | bytes/token | steps | bytes seen | bpb at step 0 | bpb after fine-tuning | Δ vs `{default}` (paired) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    reference = arms.get(default, {}).get("final")
    for name, arm in arms.items():
        unextended = name.startswith(NO_EXTENSION)
        label = name if unextended else f"`{name}`"
        bpt = tok["base_bytes_per_token"] if unextended else tok["extended_bytes_per_token"]
        delta = ""
        if reference and name != default and len(arm["final"]) == len(reference):
            delta = summary([a - b for a, b in zip(arm["final"], reference)], signed=True)
        lines.append(
            f"| {label} | {bpt:.2f} | {arm['steps']} | {statistics.mean(arm['bytes_seen']) / 1e3:.0f} KB | "
            f"{summary(arm['step0'])} | {summary(arm['final'])} | {delta} |"
        )
    base_bpt, ext_bpt = tok["base_bytes_per_token"], tok["extended_bytes_per_token"]
    languages = ", ".join(f"{lang} {size / 1e3:.0f} KB" for lang, size in setup["held_out_languages"].items())
    notes = [
        "",
        f"Held-out bytes per token: {base_bpt:.2f} with the base tokenizer, {ext_bpt:.2f} extended "
        f"(+{tok['new_tokens']} tokens): sequences {ext_bpt / base_bpt:.2f}x shorter. "
        f"{len(setup['seeds'])} seeds (mean ± sd; step 0 depends on the seed only for `normal`); "
        f"{setup['steps']} steps of {setup['tokens_per_step']} tokens; "
        f"held-out {setup['held_out_bytes'] / 1e3:.0f} KB ({languages}).",
    ]
    return "\n".join(lines + notes)


@dataclass
class SeedStreams:
    """A seed's fine-tuning text: the extended arms' tokens, and the unextended arm's for equal bytes."""

    ext_stream: torch.Tensor
    ext_bytes: int
    base_stream: torch.Tensor
    base_cum: torch.Tensor  # bytes of text read after each token of base_stream
    eq_steps: int  # steps the unextended arm needs to read ext_bytes


def seed_streams(
    args: argparse.Namespace, base: Tokenizer, extended: Tokenizer, train: list[str], eot: int, bpt: dict, seed: int
) -> SeedStreams:
    """The training documents shuffled by ``seed``, tokenized for both arms."""
    order = list(train)
    random.Random(1000 + seed).shuffle(order)
    ext_stream = token_stream(extended, order, eot, args.steps * args.tokens_per_step)
    ext_bytes = int(token_bytes(extended, ext_stream)[-1])
    # the unextended arm reads the same text until it has seen as many bytes
    guess = int(len(ext_stream) * bpt["extended"] / bpt["base"] * 1.3) + args.tokens_per_step
    base_cum = token_bytes(base, token_stream(base, order, eot, guess))
    while base_cum[-1] < ext_bytes:  # denser text than the held-out chunks: read on
        guess *= 2
        base_cum = token_bytes(base, token_stream(base, order, eot, guess))
    eq_steps = max(args.steps, -(-(int(torch.searchsorted(base_cum, ext_bytes)) + 1) // args.tokens_per_step))
    base_stream = token_stream(base, order, eot, eq_steps * args.tokens_per_step)
    return SeedStreams(ext_stream, ext_bytes, base_stream, base_cum[: len(base_stream)], eq_steps)


@dataclass
class ArmContext:
    """What every fine-tuning run reads: built once in the parent, inherited by forked workers."""

    args: argparse.Namespace
    model: torch.nn.Module
    base: Tokenizer
    extended: Tokenizer
    held: dict[str, HeldOut]
    seeds: list[SeedStreams]


def run_arm(ctx: ArmContext, task: tuple[str, int]) -> tuple[tuple[str, int], dict]:
    """One independent run: the unextended model (``NO_EXTENSION``) or an init, fine-tuned on a seed's text.

    Returns the task and ``{"step0": bpb or None, "scores": {step: bpb}}``; step 0 is scored for
    seed 0, and for every seed of ``normal`` (the only init that depends on the seed). Nothing
    here draws from a global RNG, so a run gives the same numbers in whichever process it runs.
    """
    name, seed = task
    args, streams = ctx.args, ctx.seeds[seed]
    torch.set_num_threads(max(1, args.threads))
    model = copy.deepcopy(ctx.model)
    if name == NO_EXTENSION:
        held, stream, steps, eval_steps = ctx.held["base"], streams.base_stream, streams.eq_steps, (args.steps, streams.eq_steps)
    else:
        surgery.resize_for_extension(model, ctx.base, ctx.extended, init=name, seed=seed)
        held, stream, steps, eval_steps = ctx.held["extended"], streams.ext_stream, args.steps, (args.steps,)
    step0 = bits_per_byte(model, held) if seed == 0 or name == "normal" else None
    evals = {s: partial(bits_per_byte, model, held) for s in eval_steps}
    scores, _ = train_steps(model, stream, steps, args, args.lr, 5, evals)
    return task, {"step0": step0, "scores": scores}


def run_shared_arm(task: tuple[str, int]) -> tuple[tuple[str, int], dict]:
    """:func:`run_arm` in a worker of ``forked_pool``, on the context the parent passed."""
    return run_arm(shared("context"), task)


def log_arm(log, args: argparse.Namespace, task: tuple[str, int], result: dict) -> None:
    name, seed = task
    start = "" if result["step0"] is None else f"{result['step0']:.3f} -> "
    scores = " and ".join(f"{score:.3f} after {steps} steps" for steps, score in sorted(result["scores"].items()))
    log(f"seed {seed}: {name} {start}{scores}")


def cpu_seconds() -> float:
    """CPU time of this process and of its finished worker processes."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=default_corpus(), help="new-domain text (.txt or .xz)")
    parser.add_argument("--languages", default="de,zh,ru", help="the new domain: languages of --corpus, or 'all'")
    parser.add_argument("--model", type=Path, help="a transformers causal LM folder (default: the tiny GPT-2)")
    parser.add_argument("--new-merges", type=int, default=3000)
    parser.add_argument("--steps", type=int, default=30, help="fine-tuning steps")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--inits", default="all",
                        help="comma-separated resize_for_extension inits, or 'all' (its default is always measured)")
    parser.add_argument("--out", type=Path, help="write the results as .json or .md")
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny sizes, 2 seeds")
    parser.add_argument("--tokens-per-step", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--lr", type=float, default=1e-3, help="fine-tuning learning rate (AdamW, 5 warm-up steps)")
    parser.add_argument("--eval-bytes", type=int, default=24_000, help="held-out bytes scored")
    parser.add_argument("--pretrain-steps", type=int, default=300, help="tiny base only")
    parser.add_argument("--pretrain-lr", type=float, default=3e-3, help="tiny base only")
    parser.add_argument("--base-domain-share", type=float, default=0.3,
                        help="tiny base only: share of pretraining tokens from the new domain (0: it never saw it)")
    parser.add_argument("--layers", type=int, default=4, help="tiny base only")
    parser.add_argument("--width", type=int, default=256, help="tiny base only")
    parser.add_argument("--untied", action="store_true", help="tiny base only: an untied LM head")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=torch.ops.mkldnn._is_mkldnn_bf16_supported(),
                        help="train under bfloat16 autocast (default where the CPU has bf16 instructions); scoring is float32")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on a shared machine, 2 contended threads cost 3x the CPU per step)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="worker processes for the independent fine-tuning runs, each of --threads threads "
                             "(default: the CPUs available, at most the number of runs; 1 with --threads above 1)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds, args.new_merges = min(args.steps, 6), min(args.seeds, 2), min(args.new_merges, 500)
        args.pretrain_steps, args.eval_bytes = min(args.pretrain_steps, 30), min(args.eval_bytes, 4000)
    if args.corpus is None:
        parser.error(f"pass --corpus (the default {CORPUS_NAME} was not found above {REPO})")
    if args.jobs > 1 and args.threads > 1:
        parser.error("--jobs above 1 needs --threads 1 (forked workers of several torch threads stalled)")
    if args.tokens_per_step % args.seq_len:
        parser.error("--tokens-per-step must be a multiple of --seq-len")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    t_start, cpu_start = time.perf_counter(), cpu_seconds()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.0f} s] {message}", file=sys.stderr, flush=True)

    if args.model is not None:
        model, base = user_model(args.model)
        args.seq_len = min(args.seq_len, getattr(model.config, "max_position_embeddings", args.seq_len))
    else:
        base = conversion.load_preset("gpt2", GPT2_DATA)
    eot = base.special_tokens.get("<|endoftext|>")
    if args.model is not None:
        eot = next((i for i in (model.config.bos_token_id, model.config.eos_token_id, eot) if isinstance(i, int)), None)
        if eot is None:
            raise SystemExit(f"{args.model}: no bos or eos token id in the config to start held-out chunks with")
    split = split_documents(read_documents(args.corpus), args, need_base=args.model is None)
    log(f"corpus: {n_bytes(split.train) / 1e6:.1f} MB new-domain training text, {n_bytes(split.held_out) / 1e3:.0f} KB "
        f"held out, {n_bytes(split.base) / 1e6:.1f} MB base text")
    if args.model is None:
        model, pretrain = pretrained_base(args, base, split, eot, log)
    else:
        pretrain = {"model": str(args.model)}

    start = time.perf_counter()
    extended = base.extend(split.train, args.new_merges, progress=False)
    new_tokens = len(extended.vocab) - len(base.vocab)
    log(f"extended by {new_tokens} merges in {time.perf_counter() - start:.1f} s")
    held = {
        name: encode_held_out(tok, split.held_out, eot, args.seq_len, args.tokens_per_step)
        for name, tok in (("base", base), ("extended", extended))
    }
    bpt = {name: h.n_bytes / h.n_tokens for name, h in held.items()}

    inits = list(surgery.EXTENSION_INIT_METHODS) if args.inits == "all" else args.inits.split(",")
    inits = list(dict.fromkeys([surgery.EXTENSION_DEFAULT_INIT, *inits]))
    for init in inits:
        if init not in surgery.EXTENSION_INIT_METHODS:
            raise SystemExit(f"unknown init {init!r}; known: {', '.join(surgery.EXTENSION_INIT_METHODS)}")
    seeds = [seed_streams(args, base, extended, split.train, eot, bpt, seed) for seed in range(args.seeds)]
    # the no-extension arms are the longest: first, so that they do not end the run alone
    tasks = [(NO_EXTENSION, seed) for seed in range(args.seeds)] + [(i, s) for s in range(args.seeds) for i in inits]
    context = ArmContext(args, model, base, extended, held, seeds)
    # forked workers of 2 torch threads each stalled here (no run ended in 5 minutes; OpenMP after fork?)
    jobs = 1 if args.threads > 1 else usable_workers(min(args.jobs or available_cpus(), len(tasks)))
    log(f"{len(tasks)} fine-tuning runs in {jobs} process{'es' if jobs > 1 else ''} of {args.threads} thread(s)")
    done: dict[tuple[str, int], dict] = {}
    if jobs > 1:
        with forked_pool(jobs, context=context) as pool:
            for task, result in pool.imap_unordered(run_shared_arm, tasks):
                done[task] = result
                log_arm(log, args, task, result)
    else:
        for task in tasks:
            done[task] = run_arm(context, task)[1]
            log_arm(log, args, task, done[task])

    arms: dict[str, dict] = {}

    def record(name: str, steps: int, step0: float | None, final: float, seen: int) -> None:
        arm = arms.setdefault(name, {"steps": steps, "step0": [], "final": [], "bytes_seen": []})
        if step0 is not None:
            arm["step0"].append(step0)
        arm["final"].append(final)
        arm["bytes_seen"].append(seen)

    for seed, streams in enumerate(seeds):  # recorded in this order whatever order the runs ended in
        result = done[NO_EXTENSION, seed]
        for label, steps in (("equal steps", args.steps), ("equal bytes", streams.eq_steps)):
            seen = int(streams.base_cum[steps * args.tokens_per_step - 1])
            record(f"{NO_EXTENSION}, {label}", steps, result["step0"], result["scores"][steps], seen)
        for init in inits:
            result = done[init, seed]
            record(init, args.steps, result["step0"], result["scores"][args.steps], streams.ext_bytes)

    results = {
        "setup": {
            "model": pretrain, "corpus": str(args.corpus), "languages": args.languages,
            "steps": args.steps, "seeds": list(range(args.seeds)), "tokens_per_step": args.tokens_per_step,
            "seq_len": args.seq_len, "lr": args.lr, "new_merges": args.new_merges,
            "held_out_bytes": held["base"].n_bytes, "held_out_languages": split.languages,
            "threads": args.threads, "jobs": jobs,
        },  # fmt: skip
        "tokenizer": {"base_bytes_per_token": bpt["base"], "extended_bytes_per_token": bpt["extended"],
                      "new_tokens": new_tokens},
        "default_init": surgery.EXTENSION_DEFAULT_INIT,
        "arms": arms,
        "seconds": round(time.perf_counter() - t_start, 1),
        "cpu_seconds": round(cpu_seconds() - cpu_start, 1),
    }
    table = markdown(results)
    print(table)
    print(f"\n{results['seconds']:.0f} s wall, {results['cpu_seconds']:.0f} s CPU; command: "
          f"python scripts/bench_extension_model.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    if args.out is not None:
        args.out.write_text(table + "\n" if args.out.suffix == ".md" else json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
