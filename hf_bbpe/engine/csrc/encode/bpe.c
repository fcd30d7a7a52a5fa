/*
 * BPE on one piece: the lowest pair merged first, leftmost on ties (a short piece by a scan,
 * a long one by a heap over a linked list).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "encode/lookup.h"

/* Merge the lowest pair below limit, leftmost on ties, one at a time; each pair's rank is looked
 * up once and again only when a merge next to it changes it. bytes (or NULL): the chunk the ids
 * are the single bytes of, whose pairs' ranks the dense byte-pair table gives.
 * The pieces are short: a branch-free scan finds the lowest rank, a loop closes the gap. */
Py_ssize_t merge_short(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit, const uint8_t *bytes) {
    uint32_t ranks[SHORT_CHUNK + 1];
    if (n < 2) return n;
    ranks[n - 1] = NO_RANK; /* read (never used) by the loop that closes the gap */
    if (bytes && self->byte_pairs) {
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            uint32_t r = self->byte_pairs[(bytes[i] << 8) | bytes[i + 1]];
            ranks[i] = (int64_t)r < limit ? r : NO_RANK;
        }
    } else {
        for (Py_ssize_t i = 0; i + 1 < n; i++) ranks[i] = (uint32_t)rank_below(self, ids[i], ids[i + 1], limit);
    }
    while (n >= 2) {
        uint32_t best = ranks[0];
        Py_ssize_t at = 0;
        for (Py_ssize_t i = 1; i + 1 < n; i++) {
            uint32_t r = ranks[i];
            at = r < best ? i : at;
            best = r < best ? r : best;
        }
        if (best == NO_RANK) break;
        ids[at] = (int32_t)best;
        n--;
        for (Py_ssize_t i = at + 1; i < n; i++) { ids[i] = ids[i + 1]; ranks[i] = ranks[i + 1]; }
        if (self->pairs) { /* the two lookups are independent: start both memory loads at once */
            if (at + 1 < n) PREFETCH(pair_slot(self, (uint32_t)ids[at], (uint32_t)ids[at + 1]));
            if (at > 0) PREFETCH(pair_slot(self, (uint32_t)ids[at - 1], (uint32_t)ids[at]));
        }
        if (at + 1 < n) ranks[at] = (uint32_t)rank_below(self, ids[at], ids[at + 1], limit);
        if (at > 0) ranks[at - 1] = (uint32_t)rank_below(self, ids[at - 1], ids[at], limit);
    }
    return n;
}

typedef struct { int64_t rank; Py_ssize_t pos; } Job;

static inline int job_less(Job x, Job y) { return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos); }

static void job_push(Job *heap, Py_ssize_t *len, Job item) {
    Py_ssize_t i = (*len)++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!job_less(item, heap[p])) break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = item;
}

static Job job_pop(Job *heap, Py_ssize_t *len) {
    Job top = heap[0], last = heap[--(*len)];
    Py_ssize_t i = 0, n = *len;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && job_less(heap[c + 1], heap[c])) c++;
        if (!job_less(heap[c], last)) break;
        heap[i] = heap[c];
        i = c;
    }
    if (n > 0) heap[i] = last;
    return top;
}

/* Heap over a linked list, merges below limit; returns the new length or -1 (memory). */
Py_ssize_t merge_long(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit) {
    Py_ssize_t *nxt = malloc(n * sizeof(Py_ssize_t)), *prv = malloc(n * sizeof(Py_ssize_t));
    /* Each merge pushes at most two jobs, and there are at most n - 1 merges. */
    Job *heap = malloc((3 * n + 1) * sizeof(Job));
    if (!nxt || !prv || !heap) { free(nxt); free(prv); free(heap); return -1; }
    Py_ssize_t hlen = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        nxt[i] = i + 1 < n ? i + 1 : -1;
        prv[i] = i - 1;
    }
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        int64_t r = rank_below(self, ids[i], ids[i + 1], limit);
        if (r != NO_MERGE) { Job job = {r, i}; job_push(heap, &hlen, job); }
    }
    while (hlen > 0) {
        Job job = job_pop(heap, &hlen);
        Py_ssize_t i = job.pos, j = nxt[i];
        if (ids[i] < 0 || j < 0 || rank_of(self, ids[i], ids[j]) != job.rank) continue;
        ids[i] = (int32_t)job.rank;
        ids[j] = -1;
        Py_ssize_t k = nxt[j];
        nxt[i] = k;
        if (k >= 0) {
            prv[k] = i;
            int64_t r = rank_below(self, ids[i], ids[k], limit);
            if (r != NO_MERGE) { Job nj = {r, i}; job_push(heap, &hlen, nj); }
        }
        Py_ssize_t p = prv[i];
        if (p >= 0) {
            int64_t r = rank_below(self, ids[p], ids[i], limit);
            if (r != NO_MERGE) { Job nj = {r, p}; job_push(heap, &hlen, nj); }
        }
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i >= 0; i = nxt[i]) ids[m++] = ids[i];
    free(nxt); free(prv); free(heap);
    return m;
}

