"""Shared fixtures-as-functions for the BBPETokenizer tests (this module holds no tests).

Everything is built from files in tests/data: a tokenizer trained on the multilingual sample,
GPT-2's own vocabulary, and subprocess runners in which ``hf_bbpe`` and ``conversion`` cannot be
imported (to prove a saved folder loads on a machine without this package).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
MIX_SAMPLE = DATA / "text" / "mix-sample.txt"
GPT2_DIR = DATA / "gpt2"
EOT = "<|endoftext|>"


def mix_text() -> str:
    return MIX_SAMPLE.read_text(encoding="utf-8")


def mix_docs() -> list[str]:
    return [doc for doc in mix_text().split("\n\n") if doc.strip()]


@functools.lru_cache(maxsize=None)
def _trained_state(vocab_size: int) -> tuple:
    from hf_bbpe import RegexTokenizer

    tok = RegexTokenizer("gpt4")
    tok.train(mix_docs(), vocab_size, progress=False)
    return dict(tok.merges), tok.pattern


def trained_engine(vocab_size: int = 1024, eot_id: int | None = 1030):
    """A GPT-4-pattern tokenizer trained on mix-sample.txt, with ``<|endoftext|>`` at ``eot_id``.

    The default id leaves a hole (1024..1029) above the merges, as cl100k's specials do.
    """
    from hf_bbpe import Tokenizer

    merges, pattern = _trained_state(vocab_size)
    specials = {EOT: eot_id} if eot_id is not None else None
    return Tokenizer.from_merges(merges, pattern=pattern, special_tokens=specials)


def gpt2_folder(path: Path, config: dict | None = None) -> Path:
    """A GPT-2-style folder (vocab.json + merges.txt) from OpenAI's GPT-2 files, as on the Hub."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(GPT2_DIR / "encoder.json", path / "vocab.json")
    shutil.copy(GPT2_DIR / "vocab.bpe", path / "merges.txt")
    (path / "tokenizer_config.json").write_text(json.dumps(config or {"model_max_length": 1024}), encoding="utf-8")
    return path


def tiktoken_gpt2():
    """OpenAI's GPT-2 encoding built offline from the same files (the reference for GPT-2 ids)."""
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    from hf_bbpe import GPT2_SPLIT_PATTERN

    ranks = data_gym_to_mergeable_bpe_ranks(str(GPT2_DIR / "vocab.bpe"), str(GPT2_DIR / "encoder.json"))
    return tiktoken.Encoding("gpt2", pat_str=GPT2_SPLIT_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})


_BLOCKER = textwrap.dedent(
    """
    import sys

    class _NoHfBbpe:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("hf_bbpe", "conversion"):
                raise ImportError(f"{name} is not installed here (blocked by the test)")
            return None

    sys.meta_path.insert(0, _NoHfBbpe())
    """
)


def _clean_env(cwd: Path, env: dict | None) -> dict:
    full_env = {key: value for key, value in os.environ.items()
                if not key.startswith(("HF_", "HUGGINGFACE_", "PYTHON")) or key == "PYTHONPATH"}  # a worktree's code
    full_env.update({"HF_HUB_OFFLINE": "1", "HF_HOME": str(cwd / "hf_home"), "HF_HUB_DISABLE_TELEMETRY": "1",
                     "HF_MODULES_CACHE": str(cwd / "hf_modules"), "PYTHONDONTWRITEBYTECODE": "1",
                     "TOKENIZERS_PARALLELISM": "false",
                     # the checkout under test, not whichever copy the venv has installed
                     "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    full_env.update(env or {})
    return full_env


def run_python(code: str, cwd: Path, *, block_hf_bbpe: bool, env: dict | None = None,
               python: str | Path = sys.executable, timeout: float = 240) -> str:
    """Run ``code`` in a fresh interpreter (this venv's unless ``python``), from ``cwd``; return stdout.

    With ``block_hf_bbpe`` the interpreter cannot import hf_bbpe or conversion (an import raises
    ImportError, as on a machine without the package). transformers' module cache goes to
    ``cwd`` and the Hub is off unless ``env`` says otherwise.
    """
    source = (_BLOCKER if block_hf_bbpe else "") + textwrap.dedent(code)
    result = subprocess.run([str(python), "-c", source], cwd=cwd, env=_clean_env(cwd, env), capture_output=True,
                            text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise AssertionError(f"subprocess failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout


LOAD_AND_ENCODE = """
import json, sys
from transformers import AutoTokenizer, PreTrainedTokenizerFast
source, text_file = sys.argv[1], sys.argv[2]
docs = json.load(open(text_file, encoding="utf-8"))
out = {}
for name, options in (("plain", {}), ("remote", {"trust_remote_code": True}),
                      ("remote_slow", {"trust_remote_code": True, "use_fast": False})):
    tok = AutoTokenizer.from_pretrained(source, **options)
    vocab = tok.get_vocab()
    out[name] = {"class": type(tok).__name__, "module": type(tok).__module__,
                 "fast": isinstance(tok, PreTrainedTokenizerFast), "len": len(tok), "entries": len(vocab),
                 "max_id": max(vocab.values()), "ids": [tok(doc)["input_ids"] for doc in docs]}
print(json.dumps(out))
"""


def load_elsewhere(source: str, text_file: Path, cwd: Path, *, env: dict | None = None,
                   python: str | Path = sys.executable, block_hf_bbpe: bool = True) -> dict:
    """``AutoTokenizer.from_pretrained(source)``, then with ``trust_remote_code=True``, then with
    that and ``use_fast=False``, in a fresh interpreter that cannot import hf_bbpe (unless
    ``block_hf_bbpe=False``): ``{"plain": ..., "remote": ..., "remote_slow": ...}``, each with the
    class name, its module, whether it is a fast tokenizer, ``len()``, the number of vocabulary
    entries, the largest id and the ids of every document. ``text_file`` holds the documents as JSON.
    """
    code = f"import sys\nsys.argv = ['-', {source!r}, {str(text_file)!r}]\n"
    out = run_python(code + LOAD_AND_ENCODE, cwd, block_hf_bbpe=block_hf_bbpe, env=env, python=python)
    return json.loads(out.splitlines()[-1])
