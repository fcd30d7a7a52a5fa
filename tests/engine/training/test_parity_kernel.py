"""The C parity loop (``_merge_loop.parity_train``) returns the merges of its Python twin
(parity_reference.train) on hypothesis corpora: ties, runs ("aaaa"), tokens reached by two merges,
several languages, both balancings, both variants, global merges, min_frequency, both tie-breaks."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe.engine.training import parity_loop

words = st.dictionaries(st.text("abé ц", min_size=1, max_size=7).map(str.encode), st.integers(1, 5), min_size=1,
                        max_size=8)


def flat(counts: dict[bytes, int]):
    return b"".join(counts), array("i", map(len, counts)), array("q", counts.values())


def test_the_kernel_is_built():
    assert parity_loop.parity_kernel() is not None


@settings(max_examples=300, deadline=None)
@given(languages=st.lists(words, min_size=1, max_size=4), dev_words=st.lists(words, min_size=4, max_size=4),
       use_ratio=st.booleans(), ratio=st.lists(st.sampled_from([0.5, 1.0, 1.5, 3.0]), min_size=4, max_size=4),
       tie_break=st.sampled_from(["huggingface", "smallest_pair"]), variant=st.sampled_from(["base", "window"]),
       window_size=st.integers(1, 5), alpha=st.sampled_from([0.5, 1.0, 2.0]), global_merges=st.integers(0, 4),
       min_frequency=st.sampled_from([0, 2, 5]), num_merges=st.integers(0, 25))
def test_kernel_equals_twin(languages, dev_words, use_ratio, ratio, tie_break, variant, window_size, alpha,
                            global_merges, min_frequency, num_merges):
    n = len(languages)
    train = [flat(w) for w in languages]
    dev = None if use_ratio else [flat(w) for w in dev_words[:n]]
    options = dict(variant=variant, window_size=window_size, alpha=alpha, global_merges=global_merges,
                   min_frequency=min_frequency, tie_break=tie_break)
    seen = []
    got = parity_loop.run_parity(train, dev, ratio[:n] if use_ratio else None, num_merges,
                                 on_merge=lambda a, b, language, count: seen.append((a, b)), **options)
    want = parity_loop.run_parity(train, dev, ratio[:n] if use_ratio else None, num_merges, kernel=False, **options)
    assert got == want
    assert seen == got
