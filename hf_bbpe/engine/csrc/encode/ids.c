/*
 * Growing id buffers: a call's buffer grown, or taken from the spare buffer of the last large call
 * (and given back to it), and the ids a text of some bytes is likely to need.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"

#include "common/grow.h"

/* The slow path of idbuf_reserve (see encode.h): the buffer grown to hold extra more ids. */
int idbuf_grow(IdBuf *b, Py_ssize_t extra) {
    Py_ssize_t cap = (Py_ssize_t)grown_capacity((size_t)b->cap, (size_t)(b->len + extra), 256);
    int32_t *ids = realloc(b->ids, (size_t)cap * sizeof(int32_t));
    if (!ids) return -1;
    huge_pages_advise(ids + b->len, (size_t)(cap - b->len) * sizeof(int32_t)); /* (the part not written yet) */
    b->ids = ids;
    b->cap = cap;
    return 0;
}

/* The ids buffer of a large call, kept when its owner is done with it (one, of SPARE_MIN_IDS to
 * SPARE_MAX_IDS ids) for the next large call to fill: a new buffer of megabytes comes from the
 * system in fresh pages, each zeroed at a page fault on first touch, which costs about an eighth
 * of the time of encoding the text; a kept one's pages are there. Read and written with the GIL. */
#define SPARE_MIN_IDS ((Py_ssize_t)1 << 18)
#define SPARE_MAX_IDS ((Py_ssize_t)1 << 24)
static int32_t *spare_ids;
static Py_ssize_t spare_cap;

/* idbuf_reserve of an empty buffer for a call, from the spare buffer when it is large enough to
 * be worth it and not more than twice what the call needs (a document's array keeps only its
 * ids, see id_array_take: the rest of a larger spare would go back to the system and the next
 * large call pay for it again). Needs the GIL. */
int idbuf_reserve_for_call(IdBuf *b, Py_ssize_t extra) {
    if (!b->ids && extra >= SPARE_MIN_IDS && spare_ids && spare_cap / 2 <= extra) {
        b->ids = spare_ids;
        b->cap = spare_cap;
        spare_ids = NULL;
    }
    if (b->len + extra <= b->cap) return 0;
    /* exactly what is asked (not doubled: the estimate is made for it) */
    int32_t *ids = realloc(b->ids, (size_t)(b->len + extra) * sizeof(int32_t));
    if (!ids) return -1;
    huge_pages_advise(ids + b->len, (size_t)extra * sizeof(int32_t));
    b->ids = ids;
    b->cap = b->len + extra;
    return 0;
}

/* How many ids to make room for in a text of bytes of UTF-8: as many per byte as the last large
 * text had, and a sixteenth more (the kernel starts from a third of the bytes, about what mixed
 * text takes), so that the buffer a large call fills is neither regrown nor, in an array, cut
 * back (see id_array_take). */
Py_ssize_t ids_estimate(const ChunkBPE *self, Py_ssize_t bytes) {
    Py_ssize_t ids = bytes / 1024 * self->ids_per_kb + (bytes % 1024) * self->ids_per_kb / 1024;
    return ids + ids / 16 + 64;
}

/* Remember the ids per byte of a large text (ids_estimate). Needs the GIL. */
void ids_learn(ChunkBPE *self, Py_ssize_t bytes, Py_ssize_t ids) {
    if (bytes >= ((Py_ssize_t)1 << 16)) self->ids_per_kb = (Py_ssize_t)((double)ids * 1024 / (double)bytes) + 1;
}

/* Free ids (cap of them), or keep them as the spare buffer (the larger of the two is kept). Needs
 * the GIL. */
void ids_release(int32_t *ids, Py_ssize_t cap) {
    if (ids && cap >= SPARE_MIN_IDS && cap <= SPARE_MAX_IDS && (!spare_ids || spare_cap < cap)) {
        free(spare_ids);
        spare_ids = ids;
        spare_cap = cap;
        return;
    }
    free(ids);
}

/* Free the spare buffer (clear_cache). Needs the GIL. */
void ids_drop_spare(void) {
    free(spare_ids);
    spare_ids = NULL;
    spare_cap = 0;
}
