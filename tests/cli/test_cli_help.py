"""What ``--help`` says is true: each pattern name listed once, the defaults as the code has them."""

from __future__ import annotations

import inspect
import re

import pytest

from tests.support.cli import run_cli

from hf_bbpe.cli.main import build_parser
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS


def _subparsers():
    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    return choices.items()


def test_pattern_help_names_each_pattern_once():
    checked = 0
    for name, sub in _subparsers():
        for action in sub._actions:
            if "--pattern" in action.option_strings:
                listed = re.sub(r"default \w+", "", action.help)  # the list, not the defaults
                for pattern in NATIVE_PATTERNS:
                    found = re.findall(rf"\b{pattern}\b", listed)
                    assert len(found) == 1, (name, pattern, action.help)
                checked += 1
    assert checked >= 10  # every command that reads tokenizers, and train


def test_extend_help_names_the_default_init(capsys):
    from hf_bbpe import surgery  # the torch extra, which the test setup installs
    default = inspect.signature(surgery.resize_for_extension).parameters["init"].default
    with pytest.raises(SystemExit):
        build_parser().parse_args(["extend", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    said = text[text.index("resize_for_extension"):text.index("positional arguments")]
    assert f"default init {default}" in said
    others = [init for init in surgery.EXTENSION_INIT_METHODS if init != default]
    assert not [init for init in others if re.search(rf"\b{init}\b", said)], said


@pytest.mark.parametrize(("command", "default"), [("train", "paragraph"), ("extend", "paragraph"),
                                                  ("count", "paragraph"), ("encode-corpus", "file")])
def test_every_docs_option_states_the_one_rule(command, default):
    """Issue 36: three commands cut files into documents by three defaults, each said differently.
    One rule (text_files.DOCS_RULE) names every job's default; each --docs help shows it whole, with
    the command's own default, and the documentation of Tokenizer.train's keywords points to it."""
    from hf_bbpe import Tokenizer
    import inspect

    from hf_bbpe.engine.training.options import TrainingOptions
    from hf_bbpe.engine.training.text_files import DOCS_RULE

    text = " ".join(run_cli(command, "--help").stdout.decode("utf-8").split())
    assert " ".join(DOCS_RULE[1:].split()) in text and f"(default here: {default})" in text
    assert "TrainingOptions" in Tokenizer.train.__doc__ and "DOCS_RULE" in inspect.getsource(TrainingOptions)
