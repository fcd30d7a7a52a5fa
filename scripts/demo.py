"""Train a byte-level BPE tokenizer on the bundled multilingual + code sample and show it working."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hf_bbpe import RegexTokenizer
from hf_bbpe.analysis.token_text import token_literal

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "text" / "mix-sample.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=SAMPLE, help="text file to train on")
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--pattern", default="gpt4", help="gpt2, gpt4, o200k or a regex")
    args = parser.parse_args()

    documents = args.corpus.read_text(encoding="utf-8").split("\n\n")
    tok = RegexTokenizer(pattern=args.pattern)
    start = time.perf_counter()
    tok.train(documents, vocab_size=args.vocab_size)
    print(f"trained {len(tok.merges)} merges on {args.corpus.name} in {time.perf_counter() - start:.1f}s")
    tok.register_special_tokens({"<|endoftext|>": args.vocab_size})

    for text in ["Hello world! def tokenize(text): return text.split()", "Привет, мир! 你好，世界。<|endoftext|>"]:
        ids = tok.encode(text, allowed_special="all")
        # a token may hold part of a character: such bytes show as \xNN (see hf_bbpe.analysis.token_text)
        pieces = " ".join(token_literal(tok.decode_single_token_bytes(i)) for i in ids)
        assert tok.decode(ids) == text
        print(f"\n{token_literal(text.encode())}\n  {len(text.encode())} bytes -> {len(ids)} tokens: {ids}\n  {pieces}")

    with tempfile.TemporaryDirectory() as tmp:
        tok.save(Path(tmp) / "demo")
        again = RegexTokenizer()
        again.load(Path(tmp) / "demo.model")
        assert again.merges == tok.merges and again.special_tokens == tok.special_tokens
        print(f"\nsaved and reloaded {Path(tmp) / 'demo.model'} (minbpe format): identical")

        # The same tokenizer in transformers: save_pretrained, then AutoTokenizer loads the folder
        # (as the Rust fast twin, no hf_bbpe needed) and gives the engine's ids.
        from transformers import AutoTokenizer

        from hf_bbpe import BBPETokenizer

        folder = Path(tmp) / "hf"
        BBPETokenizer.from_engine(tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>").save_pretrained(folder)
        auto = AutoTokenizer.from_pretrained(folder)
        docs = SAMPLE.read_text(encoding="utf-8").split("\n\n")[:200]
        assert [auto(doc)["input_ids"] for doc in docs] == [tok.encode_ordinary(doc) for doc in docs]
        batch = auto(["a", "a longer text"], padding=True, return_tensors="np")
        print(f"save_pretrained -> AutoTokenizer.from_pretrained: {type(auto).__name__}, same ids as the "
              f"engine on {len(docs)} documents; padded batch shape {batch['input_ids'].shape}")


if __name__ == "__main__":
    main()
