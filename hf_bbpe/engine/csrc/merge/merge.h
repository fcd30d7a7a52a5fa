/*
 * What the files of the merge loop (_merge_loop) share: the Python functions module.c puts in the
 * module, the sizes _tune sets, and the two small helpers loop.c and reduce.c both use.
 */
#ifndef HF_BBPE_MERGE_MERGE_H
#define HF_BBPE_MERGE_MERGE_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"

#define NONE UINT32_MAX           /* no position, no record */

/* Sizes that change how much memory is used, never the merges; _tune sets them for the tests
 * (defined in loop.c). */
HF_INTERNAL extern int64_t first_threshold;  /* pairs below this count when they appear are not tracked at first */
HF_INTERNAL extern uint64_t min_budget;      /* candidates counted at once when tracking (more: the scan is split) */
HF_INTERNAL extern uint64_t compact_bytes;   /* garbage in the pool (and a quarter of it) that makes it compact */
HF_INTERNAL extern uint64_t min_log;         /* a merge's log of created pairs holds this many entries, or n / 16 */

/* The module's functions (their docs are in module.c). */
HF_INTERNAL PyObject *merge_train(PyObject *self, PyObject *args);        /* loop.c */
HF_INTERNAL PyObject *merge_reduce_words(PyObject *self, PyObject *args); /* reduce.c */
HF_INTERNAL PyObject *merge_parity_train(PyObject *self, PyObject *args); /* parity.c */

static inline uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

/* Index items 0 .. n - 1 anew in *slots (open addressing, linear probing), cap of them (a power
   of 2), item i at hash_of(items, i); 0, or -1 when out of memory (the old index is kept). */
static inline int index_items(uint32_t **slots, uint64_t *cap_out, uint64_t cap, uint64_t n,
                       uint64_t (*hash_of)(const void *, uint64_t), const void *items) {
    uint32_t *fresh = malloc(cap * sizeof(uint32_t));
    if (!fresh) return -1;
    memset(fresh, 0xff, cap * sizeof(uint32_t));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = hash_of(items, i) & (cap - 1);
        while (fresh[j] != NONE) j = (j + 1) & (cap - 1);
        fresh[j] = (uint32_t)i;
    }
    free(*slots);
    *slots = fresh;
    *cap_out = cap;
    return 0;
}

#endif
