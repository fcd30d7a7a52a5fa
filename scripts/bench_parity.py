"""Parity-aware BPE: fairness across languages, and its cost, against ``tokenizers``' ParityBpeTrainer.

    python scripts/bench_parity.py                       # 32k and 128k on the whole corpus
    python scripts/bench_parity.py --mb 4 --vocab-sizes 4096 --json docs/bench-results/bench_parity.json

Corpus: the Debian fortunes of the shared 49 MB corpus (``bench/mix-49mb.txt.xz``, before its
CPython sources), cut at blank lines and ``%`` lines and sorted into nine languages by
:func:`language_of` (the script, then stopwords and letters: a heuristic, so a few fortunes land
in the wrong language). Every 10th fortune of a language is held out.

Parallel text: Django's translations (the ``django`` package, installed for this script only: pip
install django). Its gettext catalogues hold the same user-interface messages in every language
(English is the ``msgid``); the messages translated into all nine languages are kept, and
alternate ones form a parallel dev set and a parallel held-out set. Parity-aware BPE is run
balanced both ways: by target ratios (all 1.0: every language aimed at the same bytes per token of
its training text) and by that dev set (every language aimed at the same number of tokens for the
same messages, as the paper does). Without Django only the ratio runs are made.

For plain BPE (``Tokenizer.train`` on all languages together) and parity-aware BPE
(``Tokenizer.train(languages=..., parity=ParityConfig(ratio=... or dev=...))``), at each vocabulary
size, it prints the held-out fortunes' bytes per token per language, their Gini coefficient across
languages (0: every language compressed alike), the global bytes per token, and the tokens each
language needs for the parallel held-out messages with their Gini. Each trainer runs in a process
of its own (time, CPU and peak RSS, VmHWM), and ParityBpeTrainer runs on the same text with the
same options; their merges are compared.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import lzma
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import machine, write_results  # noqa: E402

CORPUS = Path("/work/shared/data/bench/mix-49mb.txt.xz")
FORTUNES_END = "\n\nEach line is of the form:"  # the first paragraph of the CPython sources
STOPWORDS = {
    "en": "the and of to is you that it in for with not are be this",
    "de": "der die und das ist nicht ich sie ein zu den mit es sich auf dem",
    "es": "el la que de los las es y en por un una se no con para",
    "it": "il che di è non la per un una della le si del sono con",
    "pt": "que não de o a é do da uma um os se com para em",
    "pl": "nie się jest że w z na i to do jak co ale",
    "cs": "je se na že to a v s není jak co ale jsou",
}
LETTERS = {"de": "äöüß", "es": "ñ¿¡", "pt": "ãõç", "pl": "ąęłńśźż", "cs": "řěůčšžý", "it": "ìò"}
CODE = re.compile(r"^\s*(def |class |import |from \S+ import |return\b|self\.)", re.M)
WORD = re.compile(r"\w+")


def language_of(text: str) -> str | None:
    """The language of a fortune: Chinese or Russian by script, else the Latin-script language with
    the most stopwords and letters of its own (3 points each); None for code or too little text."""
    letters = sum(c.isalpha() for c in text) or 1
    if sum("\u4e00" <= c <= "\u9fff" for c in text) / letters > 0.2:
        return "zh"
    if sum("\u0400" <= c <= "\u04ff" for c in text) / letters > 0.3:
        return "ru"
    if CODE.search(text):
        return None
    words = [w.lower() for w in WORD.findall(text)]
    scores = collections.Counter()
    for language, stop in STOPWORDS.items():
        stop_set = set(stop.split())
        scores[language] = sum(w in stop_set for w in words)
    low = text.lower()
    for language, marks in LETTERS.items():
        scores[language] += 3 * sum(low.count(m) for m in marks)
    best, score = scores.most_common(1)[0]
    return best if score >= 2 else None


def split_corpus(mb: float | None) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(training fortunes, held-out fortunes) per language, in order; ``mb``: only the first MB."""
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        text = f.read()
    text = text[: text.index(FORTUNES_END)]
    if mb is not None:
        text = text[: int(mb * 1_000_000)]
    train: dict[str, list[str]] = collections.defaultdict(list)
    held: dict[str, list[str]] = collections.defaultdict(list)
    seen: collections.Counter = collections.Counter()
    for paragraph in text.split("\n\n"):
        for fortune in re.split(r"\n%\n", paragraph):
            fortune = fortune.strip("\n")
            language = language_of(fortune) if fortune else None
            if language is None:
                continue
            seen[language] += 1
            (held if seen[language] % 10 == 0 else train)[language].append(fortune)
    kept = sorted(name for name in train if name in held)
    return {name: train[name] for name in kept}, {name: held[name] for name in kept}


DJANGO_LANGUAGES = {"cs": "cs", "de": "de", "es": "es", "it": "it", "pl": "pl", "pt": "pt", "ru": "ru",
                    "zh": "zh_Hans"}
PO_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
PO_ESCAPE = re.compile(r"\\(.)")
PO_ESCAPES = {"n": "\n", "t": "\t"}


def po_messages(path: Path) -> dict[tuple[str, str], str]:
    """A gettext catalogue's translated messages: (context, English) -> translation. The header,
    fuzzy and untranslated entries are left out; a plural entry gives its first form."""
    messages: dict[tuple[str, str], str] = {}
    for entry in path.read_text(encoding="utf-8").split("\n\n"):
        if "#, fuzzy" in entry:
            continue
        fields: dict[str, str] = {}
        key = None
        for line in entry.splitlines():
            if line.startswith("#"):
                continue
            head, _, rest = line.partition(" ")
            if head in ("msgctxt", "msgid", "msgid_plural", "msgstr", "msgstr[0]"):
                key, line = head, rest
            found = PO_STRING.match(line.strip())
            if key and found:
                fields[key] = fields.get(key, "") + PO_ESCAPE.sub(lambda m: PO_ESCAPES.get(m[1], m[1]), found[1])
        english, translation = fields.get("msgid", ""), fields.get("msgstr") or fields.get("msgstr[0]", "")
        if english and translation:
            messages[fields.get("msgctxt", ""), english] = translation
    return messages


def parallel_messages(names: list[str]) -> dict[str, list[str]] | None:
    """The messages Django's catalogues translate into every language of ``names`` (English is the
    source), aligned: the same index is the same message in each. None without Django."""
    try:
        import django
    except ImportError:
        return None
    root = Path(django.__file__).parent
    aligned: dict[str, list[str]] = {name: [] for name in names}
    for english_po in sorted(root.glob("**/locale/ru/LC_MESSAGES/*.po")):
        catalogues = {}
        for name in names:
            if name == "en":
                continue
            po = Path(str(english_po).replace("/locale/ru/", f"/locale/{DJANGO_LANGUAGES[name]}/"))
            catalogues[name] = po_messages(po) if po.exists() else {}
        for key in sorted(set.intersection(*(set(c) for c in catalogues.values()))):
            for name in names:
                aligned[name].append(key[1] if name == "en" else catalogues[name][key])
    return aligned


def gini(values: list[float]) -> float:
    """The Gini coefficient: mean absolute difference over twice the mean (0: all equal)."""
    n, mean = len(values), sum(values) / len(values)
    return sum(abs(a - b) for a in values for b in values) / (2 * n * n * mean)


# ----------------------------------------------------------------------------- one trainer, one process


def child(args: argparse.Namespace) -> int:
    """Train once (``args.child``) on the files in ``args.data``, write the merges, print the costs."""
    data = Path(args.data)
    names = json.loads((data / "languages.json").read_text())
    num_merges = args.vocab_size - 256
    started, cpu = time.perf_counter(), time.process_time()
    dev = json.loads((data / "dev.json").read_text()) if args.child.endswith("_dev") else None
    if args.child.startswith("parity_bpe_trainer"):
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig
        from hf_bbpe.engine.chunking.patterns import GPT4_SPLIT_PATTERN

        texts = [(data / f"{name}.txt").read_text(encoding="utf-8").split("\n\n") for name in names]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(translate_pattern_for_onig(GPT4_SPLIT_PATTERN)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        trainer = trainers.ParityBpeTrainer(num_merges=num_merges, show_progress=False,
                                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        if dev is None:
            trainer.train_from_iterator(tok, [iter(t) for t in texts], ratio=[1.0] * len(names))
        else:
            trainer.train_from_iterator(tok, [iter(t) for t in texts], dev_iterators=[iter(dev[n]) for n in names])
        merges = [" ".join(m) for m in json.loads(tok.to_str())["model"]["merges"]]
    else:
        from hf_bbpe import ParityConfig, RegexTokenizer
        from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode

        tok = RegexTokenizer("gpt4")
        texts = {name: (data / f"{name}.txt").read_text(encoding="utf-8").split("\n\n") for name in names}
        if args.child.startswith("hf_bbpe_parity"):
            balance = ParityConfig(ratio={name: 1.0 for name in names}) if dev is None else ParityConfig(dev=dev)
            tok.train(languages=texts, vocab_size=args.vocab_size, tie_break="huggingface", parity=balance,
                      progress=False)
        else:
            tok.train([t for ts in texts.values() for t in ts], vocab_size=args.vocab_size, tie_break="huggingface",
                      progress=False)
        table = bytes_to_unicode()
        merges = [" ".join("".join(table[b] for b in tok.vocab[i]) for i in pair) for pair in tok.merges]
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    Path(args.out).write_text("\n".join(merges) + "\n", encoding="utf-8")
    peak = max(_vm_hwm_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_mb": peak}))
    return 0


def _vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_child(name: str, data: Path, vocab_size: int, out: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", name, "--data", str(data), "--vocab-size",
                           str(vocab_size), "--out", str(out)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- the comparison


def held_out_figures(merges_file: Path, held: dict[str, list[str]], parallel: dict[str, list[str]] | None
                     ) -> dict[str, Any]:
    """Tokens and bytes per token of each language's held-out text, their Gini, global bytes per
    token; and the tokens of each language's parallel held-out messages, with their Gini."""
    from hf_bbpe import RegexTokenizer
    from hf_bbpe.engine.chunking.byte_unicode import unicode_to_token

    tok = RegexTokenizer("gpt4")
    ids = {bytes([b]): b for b in range(256)}
    merges = {}
    for line in merges_file.read_text(encoding="utf-8").splitlines():
        a, b = (unicode_to_token(part) for part in line.split(" "))
        if a + b not in ids:
            ids[a + b] = 256 + len(merges)
        merges[ids[a], ids[b]] = ids[a + b]
    tok = RegexTokenizer.from_merges(merges, pattern="gpt4")
    per_language = {}
    for name, texts in held.items():
        text = "\n\n".join(texts)
        tokens = len(tok.encode_ordinary(text))
        per_language[name] = {"tokens": tokens, "bytes": len(text.encode("utf-8")),
                              "bytes_per_token": len(text.encode("utf-8")) / tokens}
    total_bytes = sum(v["bytes"] for v in per_language.values())
    total_tokens = sum(v["tokens"] for v in per_language.values())
    figures = {"languages": per_language, "gini": gini([v["bytes_per_token"] for v in per_language.values()]),
               "bytes_per_token": total_bytes / total_tokens}
    if parallel is not None:
        tokens = {name: sum(len(tok.encode_ordinary(text)) for text in texts) for name, texts in parallel.items()}
        figures["parallel"] = {"tokens": tokens, "gini": gini(list(tokens.values()))}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-sizes", type=lambda s: [int(v) for v in s.split(",")], default=[32768, 131072])
    parser.add_argument("--mb", type=float, default=None, help="only the first MB of the fortunes")
    parser.add_argument("--json", default=None, help="write the results here (docs/bench-results/...)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--vocab-size", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    started = machine()
    train, held = split_corpus(args.mb)
    names = list(train)
    print(f"languages: {', '.join(f'{n} {sum(len(t.encode()) for t in train[n]) / 1e6:.2f} MB' for n in names)}")
    messages = parallel_messages(names)
    dev = test = None
    trainers = ["plain_bpe", "hf_bbpe_parity", "parity_bpe_trainer"]
    if messages is None:
        print("parallel text: Django is not installed (pip install django), so no dev-set runs")
    else:
        dev = {name: texts[0::2] for name, texts in messages.items()}
        test = {name: texts[1::2] for name, texts in messages.items()}
        trainers += ["hf_bbpe_parity_dev", "parity_bpe_trainer_dev"]
        print(f"parallel text: {len(messages[names[0]])} messages of Django's catalogues in every language, "
              f"{len(dev[names[0]])} as the dev set")
    results: dict[str, Any] = {"corpus": str(CORPUS), "mb": args.mb, "languages": names, "ratio": "1.0 each",
                               "parallel": None if messages is None else {
                                   "source": f"Django {importlib.metadata.version('django')} gettext catalogues",
                                   "messages": len(messages[names[0]]), "dev": len(dev[names[0]]),
                                   "held_out": len(test[names[0]])},
                               "sizes": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "languages.json").write_text(json.dumps(names))
        (data / "dev.json").write_text(json.dumps(dev))
        for name in names:
            (data / f"{name}.txt").write_text("\n\n".join(train[name]), encoding="utf-8")
        for vocab_size in args.vocab_sizes:
            size: dict[str, Any] = {"vocab_size": vocab_size, "trainers": {}}
            for trainer in trainers:
                out = data / f"{trainer}-{vocab_size}.txt"
                cost = run_child(trainer, data, vocab_size, out)
                size["trainers"][trainer] = {**cost, **held_out_figures(out, held, test)}
                print(f"{vocab_size:>7} {trainer:<19} wall {cost['wall']:7.1f} s  CPU {cost['cpu']:7.1f} s  "
                      f"peak {cost['peak_mb']:6.0f} MB  Gini {size['trainers'][trainer]['gini']:.4f}  "
                      f"bytes/token {size['trainers'][trainer]['bytes_per_token']:.3f}")
            size["balances"] = {}
            for suffix in ("", "_dev") if dev is not None else ("",):
                ours, theirs = size["trainers"][f"hf_bbpe_parity{suffix}"], size["trainers"][f"parity_bpe_trainer{suffix}"]
                versus = size["balances"]["dev" if suffix else "ratio"] = {
                    "identical_merges": ((data / f"hf_bbpe_parity{suffix}-{vocab_size}.txt").read_bytes()
                                         == (data / f"parity_bpe_trainer{suffix}-{vocab_size}.txt").read_bytes()),
                    "time_ratio": ours["wall"] / theirs["wall"], "memory_ratio": ours["peak_mb"] / theirs["peak_mb"]}
                print(f"        {'dev set' if suffix else 'ratios'}: merges identical to ParityBpeTrainer: "
                      f"{versus['identical_merges']}; time {versus['time_ratio']:.2f}x, "
                      f"peak memory {versus['memory_ratio']:.2f}x")
            print("        held-out tokens (bytes/token) per language:")
            for name in names:
                cells = "  ".join(f"{t}: {size['trainers'][t]['languages'][name]['tokens']:>8} "
                                  f"({size['trainers'][t]['languages'][name]['bytes_per_token']:.2f})"
                                  for t in ("plain_bpe", "hf_bbpe_parity"))
                print(f"        {name}  {cells}")
            if test is not None:
                for t in ("plain_bpe", "hf_bbpe_parity", "hf_bbpe_parity_dev"):
                    figures = size["trainers"][t]["parallel"]
                    print(f"        parallel held-out tokens, {t}: "
                          + " ".join(f"{n} {figures['tokens'][n]}" for n in names) + f"  Gini {figures['gini']:.4f}")
            results["sizes"].append(size)
    if args.json:
        write_results(args.json, "bench_parity", {k: v for k, v in vars(args).items() if not k.startswith("child")},
                      results, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
