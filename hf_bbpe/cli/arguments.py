"""Arguments that several subcommands share, defined once so they read the same everywhere."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..engine.chunking.patterns import NATIVE_PATTERNS, check_split_pattern
from ..engine.tokenizer import BasicTokenizer, RegexTokenizer, Tokenizer
from ..engine.training.merge_loop import TIE_BREAKS
from ..engine.training.superwords import DEFAULT_TRANSITION, SuperwordConfig
from ..engine.training.text_files import DOCS_RULE
from ..hf.chat_presets import CHAT_PRESETS
from .errors import CommandError
from .text_input import DOCUMENT_MODES
from .tokenizer_spec import SPEC_HELP, LoadedTokenizer, LoadedViewTokenizer, load_tokenizer, load_view_tokenizer

ANY_SPEC_HELP = SPEC_HELP + "; also a sentencepiece .model (needs hf_bbpe[sentencepiece]) and any tokenizer.json " \
    "(WordPiece, Unigram, BPE) through the tokenizers library"

SPECIALS_CHOICES = ("raise", "allow", "text")
SPECIALS_HELP = ("what to do with text that spells a special token: 'raise' an error (tiktoken's default), "
                 "'allow' it (encode as the special id), or encode it as plain 'text'")
PATTERN_NAMES = ", ".join(NATIVE_PATTERNS)
ROLES = ("bos", "eos", "pad")
NO_SPLIT = "none"
DEFAULT_PATTERN = "gpt4"


def add_tokenizer(parser: argparse.ArgumentParser) -> None:
    """A positional TOKENIZER and ``--pattern`` (for bare .tiktoken files)."""
    parser.add_argument("tokenizer", metavar="TOKENIZER", help=SPEC_HELP)
    add_pattern_for_ranks(parser)


def add_tokenizers(parser: argparse.ArgumentParser, *, any_format: bool = False, required: bool = True) -> None:
    """``-t/--tokenizer`` (repeatable) and ``--pattern``; ``any_format`` for commands that read
    tokenizers through :func:`load_any` (foreign formats too)."""
    parser.add_argument("-t", "--tokenizer", dest="tokenizers", metavar="TOKENIZER", action="append",
                        required=required, default=[] if not required else None,
                        help=f"{ANY_SPEC_HELP if any_format else SPEC_HELP}; repeat for several")
    add_pattern_for_ranks(parser)


def add_pattern_for_ranks(parser: argparse.ArgumentParser) -> None:
    """``--pattern`` and the flags for lossy or unverified imports (``--no-strict``, ``--no-check-hash``)."""
    parser.add_argument("--pattern", default=None,
                        help="split pattern for files that record none: tiktoken rank files that are not a known "
                             f"preset's, GPT-2 files (default gpt2); {PATTERN_NAMES} or a regex")
    add_import_flags(parser)


def add_import_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-strict", action="store_true",
                        help="import a tokenizer.json even if part of it cannot be kept (e.g. a normalizer: dropped "
                             "with a warning; texts it would change then encode differently)")
    parser.add_argument("--no-check-hash", action="store_true",
                        help="load a PRESET:PATH file whose sha256 is not the preset's known one (an edited file)")


def import_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of ``load_tokenizer`` for the import flags (absent flags: defaults)."""
    return {"pattern": getattr(args, "pattern", None), "strict": not getattr(args, "no_strict", False),
            "check_hash": not getattr(args, "no_check_hash", False)}


def add_specials(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--specials", choices=SPECIALS_CHOICES, default=default,
                        help=f"{SPECIALS_HELP} (default: {default})")


def special_token_in_text(source: str, token: str, owner: str | None = None) -> CommandError:
    """The error for input that spells a special token while ``--specials raise`` is in force."""
    of = f" of {owner}" if owner else ""
    return CommandError(f"{source} contains the special token {token!r}{of}; pass --specials allow to encode it "
                        "as its id, or --specials text to encode it as plain text")


def encode_policy(specials: str) -> dict:
    """Keyword arguments for ``Tokenizer.encode`` for a ``--specials`` value."""
    if specials == "allow":
        return {"allowed_special": "all", "disallowed_special": ()}
    if specials == "text":
        return {"allowed_special": set(), "disallowed_special": ()}
    return {"allowed_special": set(), "disallowed_special": "all"}


def load(args: argparse.Namespace, spec: str) -> LoadedTokenizer:
    return load_tokenizer(spec, **import_options(args))


def load_any(args: argparse.Namespace, spec: str) -> LoadedViewTokenizer:
    """Any tokenizer ``view`` and ``compare`` can show: ours, sentencepiece, any tokenizer.json."""
    return load_view_tokenizer(spec, **import_options(args))


def add_training_options(parser: argparse.ArgumentParser) -> None:
    """What ``train`` and ``extend`` share: special tokens and roles to add, the output folder, how
    to cut documents, the merge rule, workers, messages."""
    parser.add_argument("--special", metavar="TOKEN", action="append", default=[],
                        help="a special token, given the next free id after training (repeatable)")
    add_role_options(parser)
    add_bos_flag(parser)
    parser.add_argument("--out", metavar="DIR", required=True, help="output folder (created, or files replaced)")
    parser.add_argument("--min-frequency", type=positive_int, default=1, help="stop when no pair occurs this often")
    parser.add_argument("--tie-break", choices=TIE_BREAKS, default=TIE_BREAKS[0],
                        help=f"rule between pairs with equal counts (default {TIE_BREAKS[0]}, rustbpe's)")
    add_counting_options(parser)
    add_chat_template(parser)


def add_counting_options(parser: argparse.ArgumentParser) -> None:
    """What counting chunks takes (``train``, ``extend``, ``count``): how to cut documents, the
    text column, threads, the memory bound, messages."""
    add_docs_option(parser, "paragraph")
    add_text_column(parser)
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="counting threads (processes for a pattern the C counter does not know; default: all "
                             "CPUs)")
    parser.add_argument("--max-memory", metavar="SIZE", type=memory_size_value, default=None,
                        help="bound the C counter's memory (e.g. 4G): its tables spill to disk in the system's "
                             "temporary folder (TMPDIR) and are merged back exactly, for corpora whose counts do "
                             "not fit in memory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")


def add_docs_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--docs``: how text files are cut into documents; its help states the one rule
    (``text_files.DOCS_RULE``) and this command's default."""
    parser.add_argument("--docs", choices=DOCUMENT_MODES, default=default,
                        help=f"{DOCS_RULE[0].upper()}{DOCS_RULE[1:]} (default here: {default})")


def add_input_files(parser: argparse.ArgumentParser, nargs: str = "+") -> None:
    """The positional FILEs of the commands that count a corpus (``train``, ``count``)."""
    parser.add_argument("files", metavar="FILE", nargs=nargs,
                        help="text, .jsonl or .parquet files, or globs ('**' recurses); '-' reads stdin")


def add_split_pattern(parser: argparse.ArgumentParser, default: str | None = DEFAULT_PATTERN,
                      default_help: str = DEFAULT_PATTERN) -> None:
    """``--pattern``: the split pattern of training and counting (a name, a regex, or ``none``)."""
    parser.add_argument("--pattern", default=default,
                        help=f"split pattern: {PATTERN_NAMES}, a regex, or '{NO_SPLIT}' (no split) "
                             f"(default {default_help})")


def split_tokenizer(pattern: str | None) -> Tokenizer:
    """A new tokenizer that splits with ``pattern``: ``--pattern none`` (or None) has no split.
    A pattern training cannot use is refused here, before any file is read
    (:func:`patterns.check_split_pattern`), and so is an empty one."""
    if pattern == "":
        raise CommandError(f"--pattern is empty: give a name ({PATTERN_NAMES}), a regex, or '{NO_SPLIT}' for no split")
    if pattern in (NO_SPLIT, None):
        return BasicTokenizer()
    tok = RegexTokenizer(pattern)
    check_split_pattern(tok.plain_pattern or "")
    return tok


def add_superword_options(parser: argparse.ArgumentParser, *, transition: bool) -> None:
    """SuperBPE's options (``train`` takes a transition point; ``extend`` starts stage 2 from the
    whole tokenizer)."""
    group = parser.add_argument_group("superword tokens (SuperBPE: late merges may span words)")
    group.add_argument("--superwords", action="store_true",
                       help="learn superword tokens: " + ("plain BPE up to the transition, then merges across spaces "
                                                          f"(default transition {DEFAULT_TRANSITION} of --vocab-size); "
                                                          "stage 1 splits with --pattern, by default superbpe_stage1, "
                                                          "the paper's"
                                                          if transition else
                                                          "the new merges may span words, on the chunks of the "
                                                          "superword pattern, which the tokenizer then uses"))
    if transition:
        group.add_argument("--superword-transition", metavar="T", type=transition_point, default=None,
                           help="where stage 1 (plain BPE) hands over to superwords: a vocabulary size (the paper's "
                                "t, e.g. 180000 of 200000) or a share of --vocab-size (e.g. 0.9); implies --superwords")
    group.add_argument("--superword-pattern", metavar="REGEX", default=None,
                       help="stage 2's split pattern, used as an isolated Split (default: superbpe_stage2, the "
                            "paper's); implies --superwords")
    group.add_argument("--superword-max-words", metavar="N", type=non_negative_int, default=None,
                       help="the most words a token may span (default 4, the paper's; 0: no limit); implies --superwords")
    group.add_argument("--superword-allow-colon-space", action="store_true",
                       help="let tokens hold ': ' (the paper forbids it); implies --superwords")


def superword_config(args: argparse.Namespace) -> SuperwordConfig | None:
    """The SuperwordConfig the superword options ask for, or None when none is given."""
    transition = getattr(args, "superword_transition", None)
    if not (args.superwords or transition is not None or args.superword_pattern is not None
            or args.superword_max_words is not None or args.superword_allow_colon_space):
        return None
    options = {"transition": transition, "allow_colon_space": args.superword_allow_colon_space}
    if args.superword_pattern is not None:
        options["pattern"] = args.superword_pattern
    if args.superword_max_words is not None:
        options["max_words"] = args.superword_max_words or None
    try:
        return SuperwordConfig(**options)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"superwords: {exc}") from None


def transition_point(text: str) -> int | float:
    """argparse type: a vocabulary size (an int >= 256) or a share of it (a float between 0 and 1)."""
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a vocabulary size or a share of it, got {text!r}") from None
    if isinstance(value, int) and value < 256:
        raise argparse.ArgumentTypeError(f"expected a vocabulary size >= 256 or a share between 0 and 1, got {text}")
    if isinstance(value, float) and not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text}")
    return value


def add_text_column(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text-column", default="text", help="the field (.jsonl) or column (.parquet) holding the text "
                        "(default: text)")


def add_role_options(parser: argparse.ArgumentParser,
                     help: str = "the {role} token for transformers (made a special token if it is not one)") -> None:
    """``--bos-token``/``--eos-token``/``--pad-token``: named roles for transformers."""
    for role in ROLES:
        parser.add_argument(f"--{role}-token", metavar="TOKEN", default=None, help=help.format(role=role))


def add_bos_flag(parser: argparse.ArgumentParser) -> None:
    """``--add-bos/--no-add-bos``: whether transformers puts the BOS token before each sequence."""
    parser.add_argument("--add-bos", action=argparse.BooleanOptionalAction, default=None,
                        help="put the BOS token before each sequence in transformers and tokenizer.json (default: "
                             "the tokenizer's own rule, e.g. on for Llama 3, Llama 4 and Tekken, off for "
                             "OpenAI's and trained ones)")


def role_tokens(args: argparse.Namespace) -> dict[str, str]:
    """``{role: token}`` for the role options given."""
    return {role: getattr(args, f"{role}_token") for role in ROLES if getattr(args, f"{role}_token")}


def check_add_bos(args: argparse.Namespace, tok: Tokenizer | None = None) -> None:
    """Fail before any work when ``--add-bos`` has no BOS token (``--bos-token`` or ``tok``'s own)."""
    if getattr(args, "add_bos", None) and not getattr(args, "bos_token", None) and \
            (tok is None or tok.roles.bos_token is None):
        raise CommandError("--add-bos needs a BOS token: this tokenizer has none, give --bos-token")


def apply_roles(tok: Tokenizer, args: argparse.Namespace) -> None:
    """Give ``tok`` the ``--bos-token``/``--eos-token``/``--pad-token`` roles (each token made a
    special token with the next free id if it is not one) and the ``--add-bos`` rule, over its own."""
    roles = role_tokens(args)
    register_new_specials(tok, list(roles.values()))
    updates = {f"{role}_token": token for role, token in roles.items()}
    if getattr(args, "add_bos", None) is not None:
        updates["add_bos_token"] = args.add_bos
    if not updates:
        return
    check_add_bos(args, tok)
    tok.roles = dataclasses.replace(tok.roles, **updates)


def register_new_specials(tok: Tokenizer, tokens: list[str]) -> None:
    """Make each of ``tokens`` that is not yet a special token one, with the next free ids."""
    fresh = [t for t in dict.fromkeys(tokens) if t not in tok.special_tokens]
    next_id = tok.n_vocab
    tok.register_special_tokens({token: next_id + i for i, token in enumerate(fresh)})


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the output: always, never, or auto (when stdout is a terminal)")


def use_color(choice: str) -> bool:
    if choice == "auto":
        return sys.stdout.isatty()
    return choice == "always"


C_INT_MAX = 2**31 - 1
"""The largest count an integer option takes: token ids, vocabulary sizes, merges, threads and
the like are 32-bit ints in the C kernels; a larger number is refused naming its option (argparse
puts the option's name before the type's message), not an OverflowError from inside them."""
MAX_MEMORY_BYTES = 2**62
"""The largest ``--max-memory`` (4 EiB): the C counter's budget is a signed 64-bit size."""


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
    if value > C_INT_MAX:
        raise argparse.ArgumentTypeError(f"expected an integer <= {C_INT_MAX:,} (2**31 - 1), got {value}")
    return value


def bounded_int(text: str) -> int:
    """argparse type: an int up to :data:`C_INT_MAX` (the command checks the lower bound itself)."""
    return _int_at_least(text, -C_INT_MAX - 1)


def memory_size_value(text: str) -> str:
    """argparse type for ``--max-memory``: a size the counter reads (``4G``), up to :data:`MAX_MEMORY_BYTES`;
    kept as written (the engine parses it again)."""
    from ..engine.training.counting import memory_size

    try:
        size = memory_size(text)
    except ValueError:  # not a size: the engine's own one-line error says what one is
        return text
    except OverflowError:  # e.g. 1e400G
        size = MAX_MEMORY_BYTES + 1
    if size > MAX_MEMORY_BYTES:
        raise argparse.ArgumentTypeError(f"expected a size up to {MAX_MEMORY_BYTES // 2**60} EiB, got {text!r}")
    return text


def positive_number(text: str) -> float:
    """argparse type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type: an int >= 0."""
    return _int_at_least(text, 0)


def open_fraction(text: str) -> float:
    """argparse type: a float strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number > 0 and < 1, got {text}")
    return value


def parse_special_assignment(text: str) -> tuple[str, int]:
    """``TOKEN=ID`` (the last ``=`` separates, so a token may contain ``=``)."""
    token, sep, idx = text.rpartition("=")
    if not sep or not token or not idx.strip().isdigit():
        raise CommandError(f"expected TOKEN=ID for a special token, got {text!r}")
    return token, int(idx)


def write_stdout(text: str) -> None:
    """Write text to stdout as UTF-8 bytes, whatever the locale (no newline translation)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    sys.stdout.buffer.flush()


def add_chat_template(parser: argparse.ArgumentParser) -> None:
    """``--chat-template PRESET|FILE`` for the commands that write a save_pretrained folder."""
    presets = ", ".join(CHAT_PRESETS)
    parser.add_argument(
        "--chat-template", metavar="PRESET|FILE", type=chat_template_value, default=None,
        help=f"a chat template for the saved folder: a preset ({presets}: registers its special tokens, marks "
             "assistant turns for assistant-token masks and writes its end-of-turn token as an eos id in "
             "generation_config.json) or a Jinja file")
    parser.add_argument(
        "--remote-code", action="store_true",
        help="also write BBPETokenizer's code into the saved folder, with an auto_map for "
             "trust_remote_code=True (the folder loads without it anywhere: PreTrainedTokenizerFast)")


def chat_template_value(text: str) -> dict:
    """``BBPETokenizer`` keyword arguments for a ``--chat-template`` value (argparse reports a bad one)."""
    if text.lower() in CHAT_PRESETS:
        return {"chat_preset": text.lower()}
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is neither a preset ({', '.join(CHAT_PRESETS)}) nor a file")
    try:
        return {"chat_template": path.read_text(encoding="utf-8")}
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None
