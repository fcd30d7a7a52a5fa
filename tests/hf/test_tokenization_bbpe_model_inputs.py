"""Every way of loading a saved folder gives exactly what a GPT-2 model takes: ``input_ids`` and
``attention_mask``, never ``token_type_ids`` (GPT-2's forward adds ``wte(token_type_ids)`` to its
input embeddings, so ``model(**batch)`` would differ from ``model(input_ids, attention_mask)``).

transformers 4.57's ``PreTrainedTokenizerFast`` returns ``token_type_ids`` unless the folder's
``tokenizer_config.json`` names the model input names. Runs on 5.x and 4.57.
"""

from __future__ import annotations

import json

import pytest
from tests.support.hf import EOT, mix_docs, run_python, trained_engine
from transformers import AutoTokenizer

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer

pytestmark = [pytest.mark.transformers_compat, pytest.mark.torch]
torch = pytest.importorskip("torch")

INPUTS = ["input_ids", "attention_mask"]

ENCODE_EVERY_WAY = """
import json, sys
from transformers import AutoTokenizer
folder, calls = sys.argv[1], json.loads(sys.argv[2])
out = {}
for name, trust in (("plain", False), ("remote", True)):
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust)
    out[name] = [dict(tok(*args, **options)) for args, options in calls]
print(json.dumps(out))
"""


def calls() -> list:
    """``(args, options)`` of the calls made on every path: one text, a pair, a padded batch of
    texts and a truncated padded batch of pairs."""
    docs = mix_docs()
    return [
        [[docs[0]], {}],
        [[docs[1], docs[2]], {}],
        [[docs[:4]], {"padding": True}],
        [[docs[:3], docs[3:6]], {"padding": True, "truncation": True, "max_length": 40}],
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved")
    hf = BBPETokenizer.from_engine(trained_engine(), eos_token=EOT, pad_token="<|pad|>")
    hf.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=1040, n_positions=2048, n_embd=32, n_layer=2, n_head=2)
    return GPT2LMHeadModel(config).eval()


def encodings_in_this_process(folder) -> dict[str, list[dict]]:
    import hf_bbpe  # noqa: F401  (registers BBPETokenizer; AutoTokenizer still gives the fast twin)

    out = {}
    for name, tok in (("BBPETokenizer", BBPETokenizer.from_pretrained(folder)),
                      ("AutoTokenizer", AutoTokenizer.from_pretrained(folder))):
        out[name] = [dict(tok(*args, **options)) for args, options in calls()]
    return out


def encodings_without_hf_bbpe(folder, tmp_path) -> dict[str, list[dict]]:
    argv = f"import sys\nsys.argv = ['-', {str(folder)!r}, {json.dumps(calls())!r}]\n"
    return json.loads(run_python(argv + ENCODE_EVERY_WAY, tmp_path, block_hf_bbpe=True).splitlines()[-1])


def test_the_folder_names_its_model_inputs(folder):
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["model_input_names"] == INPUTS


def test_every_load_path_gives_input_ids_and_attention_mask_only(folder, model, tmp_path):
    paths = {**encodings_in_this_process(folder), **encodings_without_hf_bbpe(folder, tmp_path)}
    assert set(paths) == {"BBPETokenizer", "AutoTokenizer", "plain", "remote"}
    reference = paths["BBPETokenizer"]
    for name, encodings in paths.items():
        for encoding, expected in zip(encodings, reference):
            assert list(encoding) == INPUTS, (name, list(encoding))
            assert encoding == expected, name
            batch = {key: torch.tensor(value) for key, value in encoding.items()}
            if batch["input_ids"].dim() == 1:
                batch = {key: value[None] for key, value in batch.items()}
            with torch.no_grad():
                logits = model(**batch).logits
                direct = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            assert torch.equal(logits, direct), name
