"""Counting within a memory budget (``max_memory``): the C counter's tables spill to disk in hash
partitions, which are merged back at the end. The counts must be exactly the in-memory ones, in
the same order of first appearance, however often the tables spill (forced here with tiny limits:
thousands of run files), whichever thread spills, in the middle of a unit or between calls, and
however small the merge's budget (partitions split again by further bits of the hash)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe import RegexTokenizer
from hf_bbpe.engine.training import counting as native_counting
from hf_bbpe.engine.training.counting import count_native, memory_size
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS

from .test_counting import MIX, SWIFT, TRICKY, assert_same, distinct, paragraphs_of, regex_counts


@pytest.fixture
def tiny_limits(monkeypatch):
    """Limits small enough to spill every few records: (all tables, a thread's table, file unit)."""
    def set_limits(tables: int = 1 << 16, table: int = 1 << 12, block: int = 1 << 12) -> None:
        monkeypatch.setattr(native_counting, "_spill_limits", lambda budget, threads: (tables, table, block))

    set_limits()
    return set_limits


def spill_files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_spilled_counts_of_real_files_equal_the_in_memory_counts(tmp_path, tiny_limits, name, threads):
    """Lines of mix-sample and taylorswift.txt in units of 4 KB: each thread's table spills every
    few hundred records (in the middle of units), and the merged counts, their order, the
    documents and the text tallies are the in-memory ones."""
    pattern = NATIVE_PATTERNS[name]
    paths = [str(MIX), str(SWIFT)]
    expected = count_native(None, pattern, files=paths, num_threads=threads, progress=False)
    spills = tmp_path / "spills"
    spills.mkdir()
    got = count_native(None, pattern, files=paths, num_threads=threads, progress=False, max_memory="1G",
                       spill_dir=spills)
    assert got.source is not None and got.private and got.spills > 10  # mapped from the merged counts file
    assert_same(distinct(got), distinct(expected))
    assert (got.documents, got.input_bytes, got.characters, got.control) == (
        expected.documents, expected.input_bytes, expected.characters, expected.control)
    assert spill_files(spills) == []  # the runs and the merged file are gone (the mapping stays)


def test_spilling_happens_thousands_of_times_and_the_merge_splits_partitions(tmp_path, tiny_limits):
    """A table limit of one byte spills after every growth (every few dozen records), and a merge
    budget of 1,000 bytes makes partitions split again by the next 8 bits of the hash, twice or
    more: the counts are still exact and in order."""
    tiny_limits(tables=3000, table=1)
    pattern = NATIVE_PATTERNS["gpt4"]
    got = count_native(None, pattern, files=[str(SWIFT)], num_threads=2, progress=False, max_memory="1G",
                       spill_dir=tmp_path)
    assert got.spills > 1000
    assert_same(distinct(got), distinct(count_native(None, pattern, files=[str(SWIFT)], num_threads=2,
                                                     progress=False)))


@pytest.mark.parametrize("name", ["gpt2", "gpt4"])
def test_spilled_paragraphs_texts_and_long_documents_in_parts(tmp_path, tiny_limits, name):
    """Every input the kernel takes: paragraphs of a file, an iterable of strs in several calls,
    and one long str counted in parts on the threads (whose own tables spill between calls)."""
    from .test_counting import parts_from

    pattern = NATIVE_PATTERNS[name]
    got = count_native(None, pattern, files=[str(MIX)], docs="paragraph", num_threads=2, progress=False,
                       max_memory="1G", spill_dir=tmp_path)
    assert_same(distinct(got), regex_counts(paragraphs_of(MIX), pattern))
    docs = MIX.read_text(encoding="utf-8").split("\n\n") * 2
    native_counting_batch = native_counting._BATCH_CHARS
    try:
        native_counting._BATCH_CHARS = 50_000  # several calls, with spills between them
        got = count_native(iter(docs), pattern, num_threads=3, progress=False, max_memory="1G", spill_dir=tmp_path)
    finally:
        native_counting._BATCH_CHARS = native_counting_batch
    assert_same(distinct(got), regex_counts(docs, pattern))
    long_docs = ["before", MIX.read_text(encoding="utf-8"), SWIFT.read_text(encoding="utf-8")]
    with parts_from(4096):
        got = count_native(long_docs, pattern, num_threads=3, progress=False, max_memory="1G", spill_dir=tmp_path)
    assert_same(distinct(got), regex_counts(long_docs, pattern))


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.text(alphabet=st.sampled_from(TRICKY), max_size=30), max_size=40),
       threads=st.sampled_from([1, 2, 3]), table=st.sampled_from([1, 300, 5000]))
def test_spilled_counts_of_random_text_equal_the_regex_modules(tmp_path_factory, docs, threads, table):
    pattern = NATIVE_PATTERNS["gpt4"]
    limits = native_counting._spill_limits
    native_counting._spill_limits = lambda budget, n: (2000, table, 1 << 12)
    try:
        got = count_native(docs, pattern, num_threads=threads, progress=False, max_memory="1G",
                           spill_dir=tmp_path_factory.mktemp("spill"))
    finally:
        native_counting._spill_limits = limits
    assert_same(distinct(got), regex_counts(docs, pattern))


def test_training_within_a_memory_budget_learns_the_same_merges(tiny_limits):
    for tie_break in ("smallest_pair", "first_occurrence"):
        bounded = RegexTokenizer("gpt4")
        bounded.train(files=[MIX, SWIFT], vocab_size=700, max_memory="2G", tie_break=tie_break, progress=False)
        free = RegexTokenizer("gpt4")
        free.train(files=[MIX, SWIFT], vocab_size=700, tie_break=tie_break, progress=False)
        assert bounded.merges == free.merges


def test_a_budget_that_fits_keeps_the_counts_in_memory(tmp_path):
    """With room enough nothing is written: the counts come from memory, as without max_memory."""
    got = count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(SWIFT)], num_threads=2, progress=False,
                       max_memory="256M", spill_dir=tmp_path)
    assert got.source is None and not got.private and got.spills == 0
    assert spill_files(tmp_path) == []


def test_memory_sizes_and_budgets_that_are_too_small():
    assert memory_size(1000) == 1000
    assert memory_size("512M") == 512 << 20
    assert memory_size("1.5GB") == 3 << 29
    assert memory_size("8GiB") == 8 << 30
    assert memory_size(" 2 k ") == 2048
    for bad in ("lots", "4X", "-1G", 0, "", True):
        with pytest.raises(ValueError, match="memory size"):
            memory_size(bad)
    with pytest.raises(ValueError, match="too little to count on 2 thread"):
        count_native(["text"], NATIVE_PATTERNS["gpt4"], num_threads=2, progress=False, max_memory="20M")
    with pytest.raises(ValueError, match="max_memory needs the C chunk counter"):
        RegexTokenizer(r"\w+|\W").train(["some text"], 300, max_memory="1G")


def test_a_spill_folder_that_cannot_be_written_is_named(tmp_path, tiny_limits, monkeypatch):
    """A run file that cannot be made (here its folder is gone) is an OSError naming the folder."""
    gone = tmp_path / "gone"
    monkeypatch.setattr(native_counting.tempfile, "mkdtemp", lambda **options: str(gone))
    with pytest.raises(FileNotFoundError, match="gone"):
        count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(SWIFT)], num_threads=2, progress=False,
                     max_memory="1G")


def test_the_final_merge_keeps_few_files_open(tmp_path, tiny_limits):
    """Partitions split again and again make thousands of sorted files; they are merged 128 at a
    time, so counting works with 200 open files allowed (merging them all at once needed one
    each, and failed with 'Too many open files')."""
    import resource

    tiny_limits(tables=3000, table=1 << 12)
    pattern = NATIVE_PATTERNS["gpt2"]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(200, hard), hard))
    try:
        got = count_native(None, pattern, files=[str(SWIFT), str(MIX)], num_threads=2, progress=False,
                           max_memory="1G", spill_dir=tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert_same(distinct(got), distinct(count_native(None, pattern, files=[str(SWIFT), str(MIX)], num_threads=2,
                                                     progress=False)))


# ------------------------------------------------------------------------- runs killed mid-spill

KILLED_CHILD = """
import sys
from hf_bbpe.engine.training import counting as native_counting
from hf_bbpe.engine.chunking.patterns import NATIVE_PATTERNS
native_counting._spill_limits = lambda budget, threads: (1 << 16, 1 << 10, 1 << 12)  # spill every few records
paths, spill_dir = sys.argv[1:-1], sys.argv[-1]
for _ in range(100):  # (until killed)
    native_counting.count_native(None, NATIVE_PATTERNS["gpt4"], files=paths, num_threads=2, progress=False,
                                 max_memory="1G", spill_dir=spill_dir)
"""


def test_the_spill_of_a_killed_run_is_removed_by_the_next_run(tmp_path, caplog):
    """SIGKILL a real counting process while it spills (at a random moment once its spill folder
    holds run files): its folder, named after it, stays; the next run removes it, in one line, and
    leaves alone the folder of a process that still runs."""
    import random
    import signal
    import subprocess
    import sys
    import time

    import hf_bbpe

    spills = tmp_path / "spills"
    spills.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(hf_bbpe.__file__).parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}
    def spilling() -> bool:
        try:
            return any(name.startswith("run") for folder in spills.iterdir() for name in os.listdir(folder))
        except FileNotFoundError:  # (a run ended meanwhile)
            return False

    for attempt in range(5):  # (a kill between two runs of the child leaves no folder: again)
        child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(MIX), str(SWIFT), str(spills)], env=env)
        try:
            deadline = time.monotonic() + 60
            while not spilling():
                assert time.monotonic() < deadline and child.poll() is None, "the child never spilled"
                time.sleep(0.01)
            time.sleep(random.uniform(0, 0.3))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        if any(spills.iterdir()):
            break
    [left] = spills.iterdir()
    assert left.name.startswith(f"hf_bbpe-spill-{child.pid}-")
    assert os.listdir(left), "the killed run's files are there"
    running = spills / f"hf_bbpe-spill-{native_counting._process_tag(os.getpid())}-abc"
    reused_pid = spills / f"hf_bbpe-spill-{os.getpid()}-1-abc"  # this pid, but a process that started earlier
    running.mkdir()
    reused_pid.mkdir()
    with caplog.at_level("WARNING", logger="hf_bbpe"):
        count_native(None, NATIVE_PATTERNS["gpt4"], files=[str(SWIFT)], num_threads=1, progress=False,
                     max_memory="1G", spill_dir=spills)
    assert sorted(spills.iterdir()) == [running]
    [line] = [record.getMessage() for record in caplog.records]
    assert line.startswith("hf_bbpe: removed 2 spill folder(s) of counting runs that were killed (")
    assert f" MB) in {spills}: " in line and left.name in line and reused_pid.name in line


def test_a_killed_counts_file_write_is_cleaned_by_the_next(tmp_path, caplog):
    """SIGKILL a real process mid-write of a counts file (issue 42, 3): the full-size temporary
    stays beside the output; the next write of that file removes it, in one line, and the file
    is whole."""
    import subprocess
    import sys

    import hf_bbpe
    from hf_bbpe.engine.files.atomic_write import KILL_AT_ENV

    out = tmp_path / "swift.counts"
    env = {**os.environ, KILL_AT_ENV: f"write:{out.name}",
           "PYTHONPATH": os.pathsep.join([str(Path(hf_bbpe.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    code = ("import sys; from hf_bbpe import RegexTokenizer; "
            "RegexTokenizer('gpt4').count_chunks(files=[sys.argv[1]], out=sys.argv[2], progress=False)")
    child = subprocess.run([sys.executable, "-c", code, str(SWIFT), str(out)], env=env)
    assert child.returncode == -9
    [temp] = [p for p in tmp_path.iterdir()]
    assert temp.name.startswith(f".{out.name}.") and temp.stat().st_size > 0 and not out.exists()
    with caplog.at_level("WARNING", logger="hf_bbpe"):
        counts = RegexTokenizer("gpt4").count_chunks(files=[str(SWIFT)], out=out, progress=False)
    assert sorted(tmp_path.iterdir()) == [out]
    assert [r.getMessage() for r in caplog.records] == [f"{out}: removed 1 temporary file(s) of a killed earlier write"]
    from hf_bbpe.engine.training.counts_file import load_counts

    assert list(load_counts(out).counts) == list(counts.counts)
