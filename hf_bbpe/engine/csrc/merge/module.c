/*
 * The Python side of _merge_loop: the functions' docs, _tune, and the module (train is in loop.c,
 * reduce_words in reduce.c, parity_train in parity.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "merge/merge.h"

PyDoc_STRVAR(train_doc,
"train(symbols, lengths, counts, num_merges, first_id, taken, by_occurrence, min_frequency, on_merge,\n"
"      allow_pair=None, ranks=None, consume=False, as_arrays=False)\n"
"-> (merges, stop)\n\n"
"symbols: buffer of uint8 or int32 token ids (non-negative), all words end to end; lengths: int32\n"
"per word; counts: int64 per word; taken: set of ids new merges must skip; on_merge(a, b, new_id,\n"
"count) or None; allow_pair(a, b) -> bool, or None, vetoes a pair for good; ranks: None, or an\n"
"int32 permutation of range(len(ranks)) that selects BpeTrainer's rules (ids compare by\n"
"ranks[id]); consume: symbols is a writable buffer the caller no longer needs, used in place\n"
"(no copy). merges is a list of (a, b, new_id, count), or with as_arrays two bytes objects: int32\n"
"a, b, new_id per merge and int64 counts; stop is 0 (done), 1 (out of pairs) or 2 (no pair\n"
"reaches min_frequency).");


PyDoc_STRVAR(reduce_words_doc,
"reduce_words(symbols, lengths, counts, num_merges) -> (symbols, lengths, counts, least) or None\n\n"
"Fewer words of int32 token ids for a merge loop that picks by count, then by ids (tie_break\n"
"'smallest_pair'): least is half the num_merges-th largest counter of a sketch of the input's\n"
"pair counts, and the words are cut between two symbols whose counter is below least, parts of one symbol\n"
"dropped and equal parts counted once, in order of first appearance (bytearrays: int32 ids,\n"
"int32 lengths, int64 counts). While the loop merges pairs of count least or more it merges the\n"
"same pairs on these as on the input; the caller checks that it did (every merge made, the last\n"
"counting least or more). None when least would be below 2 (nothing to cut).");

PyDoc_STRVAR(parity_train_doc,
"parity_train(languages, dev, ratio, num_merges, window, window_size, alpha, global_merges,\n"
"             min_frequency, hf_ranks, on_merge) -> bytes\n\n"
"Parity-aware BPE (engine/training/parity_reference.py's train, the same merges): languages is a\n"
"list of (symbols, lengths, counts) buffers (uint8 bytes, int32, int64), one per language; dev the\n"
"same (one per language) or None; ratio a list of floats or None (exactly one of the two);\n"
"window: the window variant; hf_ranks (merge_loop.huggingface_ranks(), or None): ties go to the pair\n"
"whose byte-level strings are greatest, bytes ordered by those ranks (None: the smallest ids); on_merge(a, b, new_id, language, count) or None. Returns int32 (a, b, new_id,\n"
"language) per merge: bytes are ids 0-255, a new token takes the next id (a merge whose bytes are\n"
"a token already yields that id); language -1 is the global phase.");

PyDoc_STRVAR(tune_doc,
"_tune(first_threshold, min_budget, compact_bytes, min_log) -> the previous four\n\n"
"For tests: sizes that decide how much memory training uses, never which merges it learns\n"
"(min_log 0: every merge walks its positions again, as one that outgrows its log does).");

static PyObject *tune(PyObject *self, PyObject *args) {
    long long threshold, budget, compact, log;
    if (!PyArg_ParseTuple(args, "LLLL", &threshold, &budget, &compact, &log)) return NULL;
    if (threshold < 1 || budget < 1 || compact < 0 || log < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "first_threshold and min_budget must be positive, compact_bytes and min_log not negative");
        return NULL;
    }
    PyObject *previous = Py_BuildValue("(LKKK)", (long long)first_threshold, (unsigned long long)min_budget,
                                       (unsigned long long)compact_bytes, (unsigned long long)min_log);
    first_threshold = threshold;
    min_budget = (uint64_t)budget;
    compact_bytes = (uint64_t)compact;
    min_log = (uint64_t)log;
    return previous;
}

static PyMethodDef methods[] = {
    {"train", merge_train, METH_VARARGS, train_doc},
    {"_tune", tune, METH_VARARGS, tune_doc},
    {"reduce_words", merge_reduce_words, METH_VARARGS, reduce_words_doc},
    {"parity_train", merge_parity_train, METH_VARARGS, parity_train_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_merge_loop", "The BPE merge loop in C (see hf_bbpe/trainer.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__merge_loop(void) { return PyModule_Create(&module); }
