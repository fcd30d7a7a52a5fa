/*
 * Encoding on threads: a long text in parts that hand over to each other, and a batch of documents
 * in grains that threads take as they get free.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "encode/lookup.h"

/* A long text on several threads. The scanner's chunk at a position depends only on the text
 * from there on (no pattern it knows looks behind), so two chunkings of the same text that share
 * one boundary share every boundary after it. The text is cut into parts at arbitrary positions;
 * each part is chunked and encoded from its start on its own thread (own piece cache), and goes
 * on past its end until it reaches a boundary of the next part's chunking (one of that part's
 * first SYNC_MARKS, found beforehand): from there on the next part's chunks are the true ones, so
 * its ids from that boundary on follow. The first part starts at a true boundary (0), hence every
 * part it hands over to. A part that meets none (e.g. one chunk longer than the next part's
 * marks reach) runs to the end of the text, and the parts after it are dropped. */
#define PARALLEL_PART_MIN ((Py_ssize_t)1 << 18) /* bytes: smaller parts are not worth a thread */

typedef struct {
    const ChunkBPE *self;
    const PretokScanner *scanner;
    const PretokText *t;
    int status, index;
    Py_ssize_t start;
    IdBuf out;
    PartSync sync;
} TextPart;

static void *encode_part(void *arg) {
    TextPart *p = arg;
    int slot = -1;
    PieceCache *cache = pcache_take_from((ChunkBPE *)p->self, p->index, &slot);
    p->status = encode_range(p->self, p->scanner, p->t, p->start, &p->out, cache, &p->sync);
    pcache_give((ChunkBPE *)p->self, slot);
    return NULL;
}

/* The ids of t into out (empty) on up to num_threads threads; 0 or a DOC_ status. No GIL needed. */
int encode_text_parallel(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t,
                         int num_threads, IdBuf *out) {
    Py_ssize_t count = t->n / PARALLEL_PART_MIN;
    if (count > num_threads) count = num_threads;
    if (!HAVE_THREADS || count < 2) {
        int slot = -1;
        PieceCache *cache = pcache_take((ChunkBPE *)self, &slot);
        int status = encode_doc(self, scanner, t, out, cache);
        pcache_give((ChunkBPE *)self, slot);
        return status;
    }
    TextPart *parts = calloc((size_t)count, sizeof(TextPart));
    if (!parts) return DOC_NO_MEMORY;
    pcache_warm_slots((ChunkBPE *)self, (int)(count < PCACHE_POOL ? count : PCACHE_POOL));
    int status = 0;
    const uint8_t *text = t->data;
    for (Py_ssize_t k = 0; k < count; k++) {
        TextPart *p = &parts[k];
        p->self = self; p->scanner = scanner; p->t = t; p->index = (int)k;
        p->start = part_cut(text, t->n, k, count);
        p->sync.nmarks = sync_marks(p->sync.marks, k > 0 ? SYNC_MARKS : 1, scanner, t, p->start);
    }
    for (Py_ssize_t k = 0; k + 1 < count; k++) {
        parts[k].sync.stops = parts[k + 1].sync.marks;
        parts[k].sync.nstops = parts[k + 1].sync.nmarks;
    }
    Threads threads;
    if (threads_start(&threads, encode_part, parts, sizeof(TextPart), 1, (int)count) < 0) status = DOC_NO_MEMORY;
    if (!status) {
        encode_part(&parts[0]);
        threads_join(&threads, 1); /* (a part that got no thread runs here, after the ones before it) */
    }
    Py_ssize_t from = 0;
    for (Py_ssize_t k = 0; k < count && !status; k++) {
        TextPart *p = &parts[k];
        if ((status = p->status) < 0) break;
        Py_ssize_t n = p->out.len - from;
        if (idbuf_reserve(out, n) < 0) { status = DOC_NO_MEMORY; break; }
        memcpy(out->ids + out->len, p->out.ids + from, (size_t)n * sizeof(int32_t));
        out->len += n;
        if (p->sync.met < 0) break; /* it ran to the end of the text */
        from = parts[k + 1].sync.mark_ids[p->sync.met];
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        free(parts[k].out.ids);
    }
    free(parts);
    return status;
}

/* A batch of documents on threads. The work is cut into grains of about BATCH_GRAIN_BYTES of
 * text: runs of whole documents, and parts of a document of BATCH_SPLIT_BYTES or more, which hand
 * over where their chunkings meet as a long text's parts do (see encode_text_parallel). Every
 * thread, the calling one too, takes the next grain (an atomic cursor) and appends its ids to its
 * own buffer with its own piece cache until none is left; the grains are then joined in order.
 * Grains are small and taken as a thread gets free, not shares fixed beforehand, because a thread
 * may be slowed: on a core that another process also runs (one in another session's autogroup
 * takes half of it whatever its nice), a thread does a third of the work of one on a free core.
 * It then takes fewer grains, and the last one it finishes is small, so the others do not wait
 * long for it; a document of megabytes is no one grain either. No GIL needed. */

typedef struct {
    const ChunkBPE *self;
    const PretokScanner *scanner;
    const PretokText *docs;
    BatchGrain *grains;
    IdBuf *outs; /* one per thread */
    int64_t *ends; /* a document's end within its grain's buffer until joined */
    signed char *status;
    Py_ssize_t ngrains, next;
    int failed;
} BatchWork;

typedef struct {
    BatchWork *work;
    int index; /* of the thread: its buffer and its preferred piece cache */
} BatchThread;

static void *encode_batch_grains(void *arg) {
    BatchWork *w = ((BatchThread *)arg)->work;
    int index = ((BatchThread *)arg)->index, slot = -1;
    PieceCache *cache = pcache_take_from((ChunkBPE *)w->self, index, &slot);
    IdBuf *out = &w->outs[index];
    for (int failed = 0; !failed;) {
        Py_ssize_t g = ATOMIC_NEXT(&w->next);
        if (g >= w->ngrains || ATOMIC_GET(&w->failed)) break;
        BatchGrain *grain = &w->grains[g];
        grain->owner = index;
        grain->at = out->len;
        if (grain->sync)
            failed = encode_range(w->self, w->scanner, &w->docs[grain->doc], grain->start, out, cache, grain->sync) < 0;
        for (Py_ssize_t d = grain->doc; !grain->sync && !failed && d < grain->doc_end; d++) {
            Py_ssize_t before = out->len;
            w->status[d] = (signed char)encode_doc(w->self, w->scanner, &w->docs[d], out, cache);
            failed = w->status[d] == DOC_NO_MEMORY;
            if (w->status[d] == DOC_SURROGATE) out->len = before;
            w->ends[d] = out->len;
        }
        grain->len = out->len - grain->at;
        if (failed) ATOMIC_SET(&w->failed, 1);
    }
    pcache_give((ChunkBPE *)w->self, slot);
    return NULL;
}

/* The parts of docs[d] (BATCH_SPLIT_BYTES or more) into grains from grains[ng] on and their syncs
 * from syncs[np] on, or only counted when grains is NULL; the number of parts. Each part but the
 * first starts at a character's first byte, past any chunk of more than a grain that covers its
 * start (a run of one letter, of spaces, of digits: the part before encodes it, and the part would
 * only encode its rest again), and with the marks of its first chunks, which the part before
 * stops at. */
static Py_ssize_t batch_parts(const PretokScanner *scanner, const PretokText *t, Py_ssize_t d, BatchGrain *grains,
                              Py_ssize_t ng, PartSync *syncs, Py_ssize_t np) {
    Py_ssize_t nparts = t->n / BATCH_GRAIN_BYTES, made = 0, last = -1;
    for (Py_ssize_t k = 0; k < nparts; k++) {
        Py_ssize_t s = part_cut(t->data, t->n, k, nparts), c = 0;
        if (s <= last) continue; /* inside the long chunk the part before skipped */
        while (k > 0 && s < t->n && (c = scanner->chunk(t, s)) > BATCH_GRAIN_BYTES) s += c;
        if (s >= t->n) break;
        last = s;
        if (grains) {
            PartSync *sync = &syncs[np + made];
            grains[ng + made] = (BatchGrain){d, d + 1, s, sync, 0, 0, 0};
            sync->nmarks = sync_marks(sync->marks, k > 0 ? SYNC_MARKS : 1, scanner, t, s);
            sync->stops = NULL; /* the last part runs to the end of the text */
            sync->nstops = 0;
            if (made) {
                syncs[np + made - 1].stops = sync->marks;
                syncs[np + made - 1].nstops = sync->nmarks;
            }
        }
        made++;
    }
    return made;
}

/* The grains of docs[0:count] (see BATCH_GRAIN_BYTES) into grains and syncs, or only counted when
 * grains is NULL (*nparts: how many are parts); long documents are cut into parts when split. */
Py_ssize_t batch_plan(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int split,
                      BatchGrain *grains, PartSync *syncs, Py_ssize_t *nparts) {
    Py_ssize_t ng = 0, np = 0, first = 0, size = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        Py_ssize_t n = docs[d].n > 0 ? docs[d].n : 0;
        if (split && n >= BATCH_SPLIT_BYTES) {
            if (d > first) {
                if (grains) grains[ng] = (BatchGrain){first, d, 0, NULL, 0, 0, 0};
                ng++;
            }
            Py_ssize_t made = batch_parts(scanner, &docs[d], d, grains, ng, syncs, np);
            ng += made;
            np += made;
            first = d + 1;
            size = 0;
        } else if ((size += n) >= BATCH_GRAIN_BYTES) {
            if (grains) grains[ng] = (BatchGrain){first, d + 1, 0, NULL, 0, 0, 0};
            ng++;
            first = d + 1;
            size = 0;
        }
    }
    if (count > first) {
        if (grains) grains[ng] = (BatchGrain){first, count, 0, NULL, 0, 0, 0};
        ng++;
    }
    *nparts = np;
    return ng;
}

/* The grains' ids joined in order into out, and every document's end made global; 0, or -1 when
 * out of memory. A document cut into parts takes each part's ids from where the part before
 * handed over (as encode_text_parallel joins them); a part after one that ran to the end of the
 * text is dropped. */
static int batch_join(BatchWork *w, IdBuf *out) {
    Py_ssize_t len = 0, from = 0;
    for (Py_ssize_t g = 0; g < w->ngrains; g++) len += w->grains[g].len;
    if (idbuf_reserve(out, len + 1) < 0) return -1;
    int live = 1; /* the current document's parts are still taken */
    for (Py_ssize_t g = 0; g < w->ngrains; g++) {
        BatchGrain *grain = &w->grains[g];
        const int32_t *ids = w->outs[grain->owner].ids + grain->at;
        if (!grain->sync) {
            if (grain->len) memcpy(out->ids + out->len, ids, (size_t)grain->len * sizeof(int32_t));
            for (Py_ssize_t d = grain->doc; d < grain->doc_end; d++) w->ends[d] += out->len - grain->at;
            out->len += grain->len;
            continue;
        }
        if (grain->start == 0) live = 1, from = 0; /* a document's first part */
        if (!live) continue;
        if (grain->len > from) memcpy(out->ids + out->len, ids + from, (size_t)(grain->len - from) * sizeof(int32_t));
        out->len += grain->len - from;
        w->ends[grain->doc] = out->len;
        if (grain->sync->met < 0) live = 0; /* it ran to the end of the text */
        else from = w->grains[g + 1].sync->mark_ids[grain->sync->met] - w->grains[g + 1].at;
    }
    return 0;
}

/* How encode_docs runs docs[0:count] on up to *num_threads threads: the threads it uses (one for
 * less than BATCH_THREAD_MIN_BYTES of text, never more than grains) into *num_threads, whether long
 * documents are cut into parts into *split, and the number of grains (1 on one thread; *nparts
 * of them are parts). */
Py_ssize_t batch_setup(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int *num_threads,
                       int *split, Py_ssize_t *nparts) {
    Py_ssize_t total = 0, ngrains = 1;
    for (Py_ssize_t d = 0; d < count; d++) total += docs[d].n > 0 ? docs[d].n : 0;
    if (!HAVE_THREADS || *num_threads < 1 || total < BATCH_THREAD_MIN_BYTES) *num_threads = 1;
    if (*num_threads > BATCH_MAX_THREADS) *num_threads = BATCH_MAX_THREADS;
    *split = *num_threads > 1 && scanner != &WHOLE_SCANNER;
    *nparts = 0;
    if (*num_threads > 1) ngrains = batch_plan(scanner, docs, count, *split, NULL, NULL, nparts);
    if (*num_threads > ngrains) *num_threads = (int)ngrains;
    return ngrains;
}

/* Encode docs[0:count] into out (empty, maybe with room already), the end of each document's ids
 * in ends and its DOC_ status in status, on up to num_threads threads; 0, or -1 when out of
 * memory. No GIL needed. */
int encode_docs(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count,
                int num_threads, IdBuf *out, int64_t *ends, signed char *status) {
    int split, failed = 0;
    Py_ssize_t nparts = 0, ngrains = batch_setup(scanner, docs, count, &num_threads, &split, &nparts);
    if (num_threads <= 1) { /* in this thread, straight into out */
        int slot = -1;
        PieceCache *cache = pcache_take((ChunkBPE *)self, &slot);
        for (Py_ssize_t d = 0; d < count && !failed; d++) {
            Py_ssize_t before = out->len;
            status[d] = (signed char)encode_doc(self, scanner, &docs[d], out, cache);
            failed = status[d] == DOC_NO_MEMORY;
            if (status[d] == DOC_SURROGATE) out->len = before;
            ends[d] = out->len;
        }
        pcache_give((ChunkBPE *)self, slot);
        return failed ? -1 : 0;
    }
    BatchGrain *grains = malloc((size_t)ngrains * sizeof(BatchGrain));
    PartSync *syncs = nparts ? malloc((size_t)nparts * sizeof(PartSync)) : NULL;
    IdBuf *outs = calloc((size_t)num_threads, sizeof(IdBuf));
    failed = !grains || (nparts && !syncs) || !outs;
    if (!failed) {
        batch_plan(scanner, docs, count, split, grains, syncs, &nparts);
        for (Py_ssize_t g = 0; g < ngrains; g++)
            if (grains[g].sync) status[grains[g].doc] = 0;
        BatchWork work = {self, scanner, docs, grains, outs, ends, status, ngrains, 0, 0};
        pcache_warm_slots((ChunkBPE *)self, num_threads);
        BatchThread args[BATCH_MAX_THREADS];
        for (int k = 0; k < num_threads; k++) args[k] = (BatchThread){&work, k};
        Threads threads; /* (out of memory for it: no thread, the calling one takes every grain) */
        threads_start(&threads, encode_batch_grains, args, sizeof(BatchThread), 1, num_threads);
        encode_batch_grains(&args[0]); /* the calling thread works too: it stops when no grain is left */
        threads_join(&threads, 0);
        failed = work.failed || batch_join(&work, out) < 0;
    }
    for (int k = 0; outs && k < num_threads; k++) free(outs[k].ids);
    free(outs);
    free(syncs);
    free(grains);
    return failed ? -1 : 0;
}
