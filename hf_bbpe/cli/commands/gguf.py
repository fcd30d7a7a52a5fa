"""``hf-bbpe gguf``: a saved folder's vocabulary as GGUF, and the model conversion with llama.cpp.

llama.cpp's ``convert_hf_to_gguf.py`` knows a BPE tokenizer only by the hash of its ids on a test
text; a tokenizer we trained or extended has a hash it does not list, and the conversion stops.
This command names llama.cpp's pre-tokenizer from the folder's split pattern (checking that its
BPE mode gives our ids), writes the vocabulary GGUF (``-o``), and with ``--llama-cpp`` runs
llama.cpp's own converter on the folder with that hash added (conversion/llama_cpp_convert.py).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from ...analysis.foreign_tokenizers import is_sentencepiece_model
from ..arguments import positive_int, write_stdout
from ..errors import CommandError
from ..output_dir import check_output
from ..tokenizer_spec import MODEL_FILE_IN_FOLDER, conversion_function, conversion_module

_CONVERT_HINT = "hf-bbpe convert FILE --to hf -o DIR"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "gguf", help="GGUF for llama.cpp and Ollama: the vocabulary file, and the model conversion",
        description="For a save_pretrained folder (a tokenizer, or a model folder holding one): name llama.cpp's "
                    "pre-tokenizer from the split pattern, check that its BPE mode gives this tokenizer's ids, "
                    "and write the vocabulary as GGUF (-o). With --llama-cpp, run llama.cpp's own "
                    "convert_hf_to_gguf.py on the folder with this tokenizer's hash added to its table "
                    "(--converter-args, last, passes options to it).",
    )
    p.add_argument("folder", metavar="FOLDER", help=f"a save_pretrained folder (other files: {_CONVERT_HINT} first)")
    p.add_argument("-o", "--out", metavar="FILE", default=None, help="write the vocabulary GGUF here")
    p.add_argument("--vocab-size", type=positive_int, default=None,
                   help="number of token rows (default: the folder's config.json vocab_size, else the largest id + 1)")
    p.add_argument("--llama-cpp", metavar="DIR", default=None,
                   help="llama.cpp's source folder: run its convert_hf_to_gguf.py on FOLDER")
    p.add_argument("--converter-args", nargs=argparse.REMAINDER, default=[], metavar="ARG",
                   help="last: everything after it goes to llama.cpp's converter (with --llama-cpp), e.g. "
                        "--converter-args --outfile model.gguf --outtype q8_0")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CommandError(f"{folder}: not a folder; give a save_pretrained folder ({_CONVERT_HINT} makes one)")
    if args.out is None and args.llama_cpp is None:
        raise CommandError("give -o FILE for the vocabulary GGUF, or --llama-cpp DIR to convert the model")
    extra = args.converter_args
    if extra and args.llama_cpp is None:
        raise CommandError(f"--converter-args ({shlex.join(extra)}) needs --llama-cpp DIR")
    script = None
    if args.llama_cpp is not None:
        script = Path(args.llama_cpp) / "convert_hf_to_gguf.py"
        if not script.is_file():
            raise CommandError(f"{script}: no such file (--llama-cpp names llama.cpp's source folder)")
    if script is not None and (folder / MODEL_FILE_IN_FOLDER).is_file() \
            and not is_sentencepiece_model(folder / MODEL_FILE_IN_FOLDER):
        raise CommandError(f"{folder / MODEL_FILE_IN_FOLDER}: llama.cpp's converter would read this file as a "
                           "sentencepiece model and fail; it is hf_bbpe's or tiktoken's, and the converter needs only "
                           "the save_pretrained files: move it out of the model folder")
    if args.out is not None:
        check_output(args.out, folder=False)
        vocab = conversion_function("write_gguf_vocab")(folder, args.out, vocab_size=args.vocab_size)
    else:
        vocab = conversion_function("gguf_vocab_of")(folder, args.vocab_size)
    write_stdout(_summary(vocab, args))
    if script is None:
        return 0
    runner = Path(conversion_module().__file__).with_name("llama_cpp_convert.py")
    command = [sys.executable, str(runner), str(Path(args.llama_cpp)), vocab.chkhsh, vocab.pre, str(folder), *extra]
    sys.stdout.flush()
    status = subprocess.run(command).returncode
    if status != 0:
        raise CommandError(f"llama.cpp's convert_hf_to_gguf.py failed (exit status {status}); its messages are above")
    return 0


def _summary(vocab, args: argparse.Namespace) -> str:
    special = ", ".join(f"{role} {idx}" for role, idx in vocab.special_ids.items()) or "none"
    lines = []
    if args.out is not None:
        lines.append(f"wrote {args.out}: {len(vocab.tokens)} tokens, {len(vocab.merges)} merges")
    lines.append(f"pre-tokenizer: {vocab.pre}; special ids: {special}; add_bos {str(vocab.add_bos).lower()}, "
                 f"add_eos {str(vocab.add_eos).lower()}; chat template: {'yes' if vocab.chat_template else 'no'}")
    lines += [f"note: {note}" for note in vocab.notes]
    lines.append(f"llama.cpp's converter identifies this tokenizer by chkhsh {vocab.chkhsh}")
    if args.llama_cpp is None:
        lines += [
            "to convert a model that uses it (a folder with the model's weights and config.json and this tokenizer's "
            "files), run llama.cpp's converter with that hash added to its table:",
            "  hf-bbpe gguf MODEL_DIR --llama-cpp path/to/llama.cpp --converter-args --outfile model.gguf",
            f"  (by hand: in get_vocab_base_pre of llama.cpp's converter, add: if chkhsh == \"{vocab.chkhsh}\": "
            f"res = \"{vocab.pre}\")",
            "then Ollama: a Modelfile with the line 'FROM ./model.gguf', and 'ollama create NAME -f Modelfile'",
        ]
    return "\n".join(lines) + "\n"
