/*
 * The BPE merge loop (hot path of training), called from hf_bbpe/trainer.py. merge_loop.py is
 * the same function in readable Python (its module doc gives the algorithm and the three
 * tie-break rules); this file keeps the same state in less memory:
 *
 * - Symbols. The words lie end to end in one byte arena: the input symbols themselves (uint8
 *   one byte each, int32 four bytes each), copied, or used in place with consume=True. A
 *   position is a byte offset and never moves: a merge makes its two symbols one symbol that
 *   spans the bytes of both. A bitmap marks where symbols start, another where words start (a
 *   rank directory over it gives a position's word, hence its count). A symbol's id is written
 *   in its own bytes: a lone byte is its value, a longer symbol holds the id little-endian in
 *   min(span, 4) bytes, and the rare id too large for a 2- or 3-byte span is kept in a small
 *   overflow table. 1.31 bytes per input byte (0.31 in place), against 16 in linked int32 lists.
 * - Pairs. A tracked pair has a 32-byte record: count, ids, and the positions of its left
 *   symbol in increasing order (the first in the record, the gaps as varints in one pool that is
 *   compacted in place). A position goes stale when a neighbouring merge consumes it; it is
 *   checked when read. Records are found by an open-addressing index of 8-byte slots.
 * - Untracked pairs. A pair whose count is below a threshold when it first appears (at the
 *   start, or in the merge that makes its newer token) gets no record: counts of existing pairs
 *   only fall, so it cannot be merged while the best tracked count is at or above the threshold.
 *   When the best falls below (or, under BpeTrainer's rules, when an entry below it comes up:
 *   there an out-of-date entry may stand for a larger count), the arena is scanned again and the
 *   untracked pairs that reach a lower threshold (a quarter, down to min_frequency, or to 1 under
 *   BpeTrainer's rules) are counted and tracked. Most pairs that merges create are rare and never
 *   tracked.
 * - The heap holds one 16-byte entry per tracked pair (count, 32-bit tie key, record): the left
 *   id (or its rank, or the pair's first position), with the right id (or its rank) read from the
 *   record on a tie. Updates are lazy, as in the twin: a popped entry whose count or key is out of
 *   date is pushed back with the current one.
 * - A merge walks its pair's positions left to right, reading ahead (prefetching what the next
 *   positions need), and rewrites each valid occurrence in place; the pairs it creates (they
 *   contain the new id) are counted in a small table of their own, with a log of where each
 *   gained, and the counts the pairs around the occurrences lose in another. After the pass the
 *   losses are taken from the records (one look-up per pair), and the created pairs that reach
 *   the threshold get records, heap entries, and their positions from the log (a merge too large
 *   for the log finds them by walking its merged positions again).
 * - The first scan, while every symbol is a byte, indexes the 65,536 byte pairs directly.
 * - The first scans, while every symbol is an input token id (int32: extension, SuperBPE's stage
 *   2), read the input word by word instead of the bitmaps, fetching the count sketch's counters
 *   ahead of use, and the scan that writes the new records' positions looks up only the pairs the
 *   sketch lets through (stage 2's setup: 0.54 s down to 0.38 s on 7.5M ids).
 *
 * This file: one merge, the set-up, and train() that runs the loop; arena.h, pairs.h and track.h
 * hold the state and the scans, module.c the module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge/track.h"

/* the sizes _tune sets (see merge.h) */
int64_t first_threshold = 16;     /* pairs below this count when they appear are not tracked at first */
uint64_t min_budget = 1 << 16;    /* candidates counted at once when tracking (more: the scan is split) */
uint64_t compact_bytes = 1 << 18; /* garbage in the pool (and a quarter of it) that makes it compact */
uint64_t min_log = 1 << 16;       /* a merge's log of created pairs holds this many entries, or n / 16 */

/* ------------------------------------------------------------------------- one merge */

/* (a, b) loses the count c of an occurrence's word: one of the pairs a merge created earlier in
   its pass (it contains x), or a pair around an occurrence. Those only lose during a merge: what
   they lose is summed in a small table and taken from their records after the pass (apply_lost),
   one look-up in the large pair table per pair instead of one per occurrence. */
static inline int lose(State *s, int32_t a, int32_t b, int32_t x, int64_t c) {
    CandidateTable *t = a == x || b == x ? &s->made : &s->lost;
    uint32_t ci = candidate(t, pair_key(a, b));
    if (ci == NONE) return -1;
    t->items[ci].count -= c;
    return 0;
}

/* (a, b), a pair the merge creates, gains c at pos. The position is logged (while the log has
   room) so that the pair's positions can be written after the pass without walking the merged
   positions again. Some are undone by later steps of the pass: they stay in the pair's list as
   stale positions, which are checked when read, as those that later merges leave are. */
static inline int gain(State *s, int32_t a, int32_t b, int64_t c, uint32_t pos) {
    uint32_t ci = candidate(&s->made, pair_key(a, b));
    if (ci == NONE) return -1;
    s->made.items[ci].count += c;
    candidate_position(&s->made.items[ci], pos);
    if (s->log_len < s->log_max) {
        if (s->log_len == s->log_cap) {
            uint64_t cap = s->log_cap ? s->log_cap * 2 : 1 << 12;
            uint64_t *log = realloc(s->log, (cap < s->log_max ? cap : s->log_max) * sizeof(uint64_t));
            if (!log) return -1;
            s->log = log;
            s->log_cap = cap < s->log_max ? cap : s->log_max;
        }
        s->log[s->log_len] = (uint64_t)ci << 32 | pos;
    }
    s->log_len++;
    return 0;
}

/* What the pairs around a merge's occurrences lost, taken from their records (an untracked pair
   is ignored: it stays below the threshold). A pair that does not contain the new id only loses
   during a merge, so the sum reaches 0 exactly where the running count would have. */
static void apply_lost(State *s) {
    const CandidateTable *t = &s->lost;
    for (uint64_t k = 0; k < t->size; k++) {
        const Candidate *c = &t->items[k];
        uint32_t idx = find_pair(s, (int32_t)(c->key >> 32), (int32_t)(uint32_t)c->key);
        if (idx == NONE) continue;
        Pair *p = &s->pairs[idx];
        p->count += c->count;
        if (p->count == 0) release_positions(s, p);
    }
}

/* Write the positions of the pairs a merge created, those with records, from its merged positions
   (x starts there now): (x, right) at each, and (left, x) at the left neighbour unless that is x
   too (then it is the neighbour's (x, x)). Each pair's positions come in increasing order. */
static void created_positions(State *s, uint64_t pos, const uint8_t *gap, const uint8_t *end, int32_t x) {
    const Arena *ar = &s->ar;
    for (; pos != NONE; pos = gap < end ? pos + get_varint(&gap) : NONE) {
        if (!bit(ar->starts, pos)) continue;
        uint64_t j = next_set(ar->starts, pos);
        if (read_id(ar, pos, j - pos) != x) continue;
        if (j < ar->n && !bit(ar->word_starts, j)) {
            uint32_t ci = find_candidate(&s->made, pair_key(x, read_id(ar, j, next_set(ar->starts, j) - j)));
            write_position(s, &s->made.items[ci], (uint32_t)pos);
        }
        if (!bit(ar->word_starts, pos)) {
            uint64_t l = prev_set(ar->starts, pos);
            int32_t left = read_id(ar, l, pos - l);
            if (left == x) continue;
            uint32_t ci = find_candidate(&s->made, pair_key(left, x));
            write_position(s, &s->made.items[ci], (uint32_t)l);
        }
    }
}

/* Replace every occurrence of pair idx by x, left to right, then track the pairs it created. */
static int merge(State *s, uint32_t idx, int32_t x) {
    Arena *ar = &s->ar;
    Pair *p = &s->pairs[idx];
    int32_t a = p->a, b = p->b;
    candidates_clear(&s->made);
    candidates_clear(&s->lost);
    s->log_len = 0;
    s->bytes_only = 0;
    s->pristine = 0;
    /* The positions are read AHEAD entries ahead of the one being merged, so that the memory each
       needs (bitmaps, arena, then its word's count) is fetched while earlier ones are merged. */
    uint64_t ahead_pos[AHEAD], ahead_word[AHEAD];
    uint64_t first = p->first, pos = first, nread = 0, nword = 0, ndone = 0;
    uint64_t off = p->off, len = p->gaps;  /* the pass may release them (a == b): read them now */
    const uint8_t *gap = s->pool + off, *end = gap + len;
    for (;;) {
        for (; pos != NONE && nread < ndone + AHEAD; nread++) {
            ahead_pos[nread % AHEAD] = pos;
            PREFETCH(&ar->starts[pos >> 6]);
            PREFETCH(&ar->word_starts[pos >> 6]);
            PREFETCH(&ar->word_rank[pos >> 6]);
            PREFETCH(&ar->bytes[pos]);
            pos = gap < end ? pos + get_varint(&gap) : NONE;
        }
        for (; nword < nread && nword < ndone + AHEAD / 2; nword++) {
            uint64_t w = word_of(ar, ahead_pos[nword % AHEAD]);
            ahead_word[nword % AHEAD] = w;
            PREFETCH(&s->wcount[s->word_index ? s->word_index[w] : w]);
        }
        if (ndone == nread) break;
        uint64_t i = ahead_pos[ndone % AHEAD], w = ahead_word[ndone % AHEAD];
        ndone++;
        if (!bit(ar->starts, i)) continue;
        uint64_t j = next_set(ar->starts, i);
        if (j >= ar->n || bit(ar->word_starts, j)) continue;
        uint64_t span_a = j - i;
        if (read_id(ar, i, span_a) != a) continue;
        uint64_t k = next_set(ar->starts, j);
        uint64_t span_b = k - j;
        if (read_id(ar, j, span_b) != b) continue;
        int64_t c = s->wcount[s->word_index ? s->word_index[w] : w];
        if (!bit(ar->word_starts, i)) {
            uint64_t l = prev_set(ar->starts, i);
            int32_t left = read_id(ar, l, i - l);
            if (lose(s, left, a, x, c) < 0 || gain(s, left, x, c, (uint32_t)l) < 0) return -1;
        }
        if (k < ar->n && !bit(ar->word_starts, k)) {
            int32_t right = read_id(ar, k, next_set(ar->starts, k) - k);
            if (lose(s, b, right, x, c) < 0 || gain(s, x, right, c, (uint32_t)i) < 0) return -1;
        }
        s->pairs[idx].count -= c;
        if (overflows(ar, i, span_a)) ovf_del(ar, (uint32_t)i);
        if (overflows(ar, j, span_b)) ovf_del(ar, (uint32_t)j);
        ar->starts[j >> 6] &= ~(1ULL << (j & 63));
        if (write_id(ar, i, k - i, x) < 0) return -1;
    }
    /* The created pairs that reach the threshold get records, in the order they were made, with
       their positions: those of the log, or where the log overflowed, where they are now, found
       by walking the merged positions again (the list is garbage now, but the pool is not
       compacted before the end of the merge). Room for them is what the pass gave them, a
       bound; what is left of it is garbage. */
    release_positions(s, &s->pairs[idx]);
    apply_lost(s);
    uint64_t first_new = s->npairs;
    if (promote(s, &s->made) < 0) return -1;  /* the pool may move */
    if (s->log_len <= s->log_max) {
        for (uint64_t k = 0; k < s->log_len; k++)
            write_position(s, &s->made.items[s->log[k] >> 32], (uint32_t)s->log[k]);
    } else {
        created_positions(s, first, s->pool + off, s->pool + off + len, x);
    }
    for (uint64_t k = 0; k < s->made.size; k++) {
        const Candidate *c = &s->made.items[k];
        if (c->pair != NONE) s->garbage += c->gaps - s->pairs[c->pair].gaps;
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) return -1;
    if (s->garbage > compact_bytes && s->garbage * 4 > s->pool_len) pool_compact(s);
    return 0;
}

/* --------------------------------------------------------------------------- set up */

static void free_state(State *s) {
    free(s->ar.starts); free(s->ar.word_starts); free(s->ar.word_rank);
    free(s->ar.ovf_keys); free(s->ar.ovf_vals);
    free(s->word_index);
    free(s->pairs); free(s->slots); free(s->heap); free(s->pool);
    candidates_free(&s->made);
    candidates_free(&s->lost);
    free(s->log);
}

/* The bitmaps of the input words: symbols of unit bytes each, words of lengths[w] symbols. */
static int build_arena(State *s, const int32_t *lengths, int64_t nwords, uint64_t unit) {
    Arena *ar = &s->ar;
    uint64_t words64 = (ar->n >> 6) + 2;
    ar->starts = calloc(words64, sizeof(uint64_t));
    ar->word_starts = calloc(words64, sizeof(uint64_t));
    ar->word_rank = malloc(words64 * sizeof(uint32_t));
    if (!ar->starts || !ar->word_starts || !ar->word_rank) return -1;
    uint64_t p = 0, empty = 0;
    for (int64_t w = 0; w < nwords; w++) {
        if (lengths[w] == 0) { empty++; continue; }
        ar->word_starts[p >> 6] |= 1ULL << (p & 63);
        for (int64_t k = 0; k < lengths[w]; k++, p += unit) ar->starts[p >> 6] |= 1ULL << (p & 63);
    }
    ar->starts[ar->n >> 6] |= 1ULL << (ar->n & 63);
    ar->word_starts[ar->n >> 6] |= 1ULL << (ar->n & 63);
    uint32_t r = 0;
    for (uint64_t k = 0; k < words64; k++) {
        ar->word_rank[k] = r;
        r += (uint32_t)popcount64(ar->word_starts[k]);
    }
    if (empty) {
        s->word_index = malloc((size_t)(nwords - (int64_t)empty) * sizeof(uint32_t) + 1);
        if (!s->word_index) return -1;
        uint64_t k = 0;
        for (int64_t w = 0; w < nwords; w++)
            if (lengths[w]) s->word_index[k++] = (uint32_t)w;
    }
    return 0;
}

PyObject *merge_train(PyObject *self, PyObject *args) {
    PyObject *symobj, *taken, *on_merge, *allow_pair = Py_None, *ranks = Py_None;
    Py_buffer symbuf = {0}, lenbuf = {0}, cntbuf = {0}, rankbuf = {0};
    Py_ssize_t num_merges;
    long long first_id, min_frequency;
    int by_occurrence, consume = 0, as_arrays = 0;
    if (!PyArg_ParseTuple(args, "Oy*y*nLOpLO|OOpp", &symobj, &lenbuf, &cntbuf, &num_merges, &first_id, &taken,
                          &by_occurrence, &min_frequency, &on_merge, &allow_pair, &ranks, &consume, &as_arrays))
        return NULL;
    PyObject *result = NULL, *merges = NULL;
    uint8_t *seen = NULL, *copy = NULL;
    int32_t *learned_ids = NULL;  /* a, b, new id per merge */
    int64_t *learned_counts = NULL;
    Py_ssize_t nlearned = 0, cap_learned = 0;
    int stop = 0, finished = 0;
    State s;
    memset(&s, 0, sizeof(s));
    s.by_occurrence = by_occurrence;
    if (PyObject_GetBuffer(symobj, &symbuf, consume ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) goto done;

    Py_ssize_t itemsize = symbuf.itemsize;
    if ((itemsize != 1 && itemsize != 4) || lenbuf.itemsize != 4 || cntbuf.itemsize != 8 ||
        lenbuf.len / 4 != cntbuf.len / 8) {
        PyErr_SetString(PyExc_ValueError, "symbols must be uint8 or int32, lengths int32, counts int64, one per word");
        goto done;
    }
    if ((uint64_t)symbuf.len > MAX_ARENA) {
        PyErr_SetString(PyExc_OverflowError, "too many symbols for one training run (4 GB of them)");
        goto done;
    }
    if (ranks != Py_None) {
        if (PyObject_GetBuffer(ranks, &rankbuf, PyBUF_SIMPLE) < 0) goto done;
        if (rankbuf.itemsize != 4) {
            PyErr_SetString(PyExc_ValueError, "ranks must be int32");
            goto done;
        }
        s.nranks = rankbuf.len / 4;
        s.ranks = rankbuf.buf;
        if (by_occurrence) {
            PyErr_SetString(PyExc_ValueError, "ranks (BpeTrainer's rules) and by_occurrence exclude each other");
            goto done;
        }
        seen = calloc(s.nranks + 1, 1);
        if (!seen) { PyErr_NoMemory(); goto done; }
        for (int64_t i = 0; i < s.nranks; i++) {
            int32_t r = s.ranks[i];
            if (r < 0 || r >= s.nranks || seen[r]) {
                PyErr_SetString(PyExc_ValueError, "ranks must be a permutation of range(len(ranks))");
                goto done;
            }
            seen[r] = 1;
        }
    }
    int64_t nwords = lenbuf.len / 4, nsym = symbuf.len / itemsize, total = 0;
    const int32_t *lengths = lenbuf.buf;
    int bad_lengths = 0;
    for (int64_t w = 0; w < nwords && !bad_lengths; w++)
        bad_lengths = lengths[w] < 0 || (total += lengths[w]) > nsym;
    if (bad_lengths || total != nsym) {
        PyErr_SetString(PyExc_ValueError, "word lengths do not add up to the number of symbols");
        goto done;
    }
    if (itemsize == 4) {
        const int32_t *ids = symbuf.buf;
        for (int64_t i = 0; i < nsym; i++)
            if (ids[i] < 0) { PyErr_SetString(PyExc_ValueError, "token ids must be non-negative"); goto done; }
    }
    s.wcount = cntbuf.buf;
    s.ar.n = (uint64_t)symbuf.len;
    if (consume) {
        s.ar.bytes = symbuf.buf;
    } else {
        copy = malloc(s.ar.n + 1);
        if (!copy) { PyErr_NoMemory(); goto done; }
        memcpy(copy, symbuf.buf, s.ar.n);
        s.ar.bytes = copy;
    }
    if (build_arena(&s, lengths, nwords, (uint64_t)itemsize) < 0) { PyErr_NoMemory(); goto done; }
    s.bytes_only = itemsize == 1;
    s.log_max = min_log && s.ar.n / 16 > min_log ? s.ar.n / 16 : min_log;
    s.token_pairs = itemsize == 4;
    s.pristine = s.token_pairs;
    s.lengths = lengths;
    s.nwords = nwords;
    /* Pairs below min_frequency are never merged, so they need never be tracked: s.floor. Under
       BpeTrainer's rules they are tracked down to 1 in the end: there an out-of-date entry can
       stand for a larger count than its own (a count that wrapped past 2**31), and the order in
       which entries come up decides what is merged, or where the loop stops. */
    int64_t least = min_frequency > 1 ? min_frequency : 1;
    if (s.ranks && least > INT32_MAX) least = INT32_MAX;  /* untracked counts must not wrap */
    s.floor = s.ranks ? 1 : least;
    s.threshold = least > first_threshold ? least : first_threshold;
    if (s.ranks) {
        /* Past 2**32 a pair's i32 view can fall to 0 while its count is not 0 (BpeTrainer keeps that
           entry at 0, and the first entry at 0 that is current stops its loop): then every pair has
           to be tracked from its start, as BpeTrainer queues every pair. No pair counts more than
           the sum of count x (length - 1) over the words, so below 2**32 nothing changes. */
        uint64_t bound = 0;
        for (Py_ssize_t w = 0; w < nwords && bound < ((uint64_t)1 << 32); w++)
            if (lengths[w] > 1 && s.wcount[w] > 0)
                bound += (uint64_t)s.wcount[w] >= ((uint64_t)1 << 32) ? ((uint64_t)1 << 32)
                                                                     : (uint64_t)s.wcount[w] * (uint64_t)(lengths[w] - 1);
        if (bound >= ((uint64_t)1 << 32)) s.threshold = least;
    }
    if (track(&s) < 0) { PyErr_NoMemory(); goto done; }

    int64_t next_id = first_id;
    for (Py_ssize_t m = 0; m < num_merges;) {
        if (s.heap_len == 0) {
            if (s.threshold > s.floor) {
                s.threshold = s.threshold / 4 > s.floor ? s.threshold / 4 : s.floor;
                if (track(&s) < 0) { PyErr_NoMemory(); goto done; }
                continue;
            }
            stop = s.floor > 1 && untracked_positive(&s) ? 2 : 1;  /* a pair below the floor is left */
            break;
        }
        HeapItem top = heap_pop(&s);
        Pair *p = &s.pairs[top.pair];
        /* vetoed, or no occurrence left (BpeTrainer's rules requeue that with count 0) */
        if (s.ranks ? p->count < 0 : p->count <= 0) continue;
        if (top.count < s.threshold && s.threshold > s.floor) {
            /* an untracked pair (its count is below the threshold) may come first: track them */
            if (heap_push(&s, top) < 0) { PyErr_NoMemory(); goto done; }
            s.threshold = s.threshold / 4 > s.floor ? s.threshold / 4 : s.floor;
            if (track(&s) < 0) { PyErr_NoMemory(); goto done; }
            continue;
        }
        uint32_t key = tie_key(&s, p);
        int64_t current = heap_count(&s, p->count);
        if (current != top.count || key != top.key) {
            HeapItem item = {current, key, top.pair};
            if (heap_push(&s, item) < 0) { PyErr_NoMemory(); goto done; }
            continue;
        }
        if (s.ranks && current == 0) { stop = 1; break; }  /* BpeTrainer stops at a current count of 0 */
        /* under BpeTrainer's rules a negative i32 count is a huge u64, above any min_frequency */
        if (s.ranks ? current <= INT32_MAX && current < min_frequency : current < min_frequency) { stop = 2; break; }
        if (allow_pair != Py_None) {
            PyObject *ok = PyObject_CallFunction(allow_pair, "ii", p->a, p->b);
            if (!ok) goto done;
            int allowed = PyObject_IsTrue(ok);
            Py_DECREF(ok);
            if (allowed < 0) goto done;
            if (!allowed) {  /* never merge this pair: drop it and its occurrences for good */
                p = &s.pairs[top.pair];
                p->count = VETOED;
                release_positions(&s, p);
                continue;
            }
        }
        for (;;) {
            PyObject *id = PyLong_FromLongLong(next_id);
            if (!id) goto done;
            int hit = taken == Py_None ? 0 : PySet_Contains(taken, id);
            Py_DECREF(id);
            if (hit < 0) goto done;
            if (!hit) break;
            next_id++;
        }
        if (next_id > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "token ids past 2**31"); goto done; }
        int32_t x = (int32_t)next_id++;
        p = &s.pairs[top.pair];
        int32_t a = p->a, b = p->b;
        int64_t count = p->count;
        if (merge(&s, top.pair, x) < 0) { PyErr_NoMemory(); goto done; }
        if (m == cap_learned) {
            cap_learned = cap_learned ? cap_learned * 2 : 1024;
            int32_t *ids = realloc(learned_ids, (size_t)cap_learned * 3 * sizeof(int32_t));
            if (ids) learned_ids = ids;
            int64_t *counts = realloc(learned_counts, (size_t)cap_learned * sizeof(int64_t));
            if (counts) learned_counts = counts;
            if (!ids || !counts) { PyErr_NoMemory(); goto done; }
        }
        learned_ids[3 * m] = a;
        learned_ids[3 * m + 1] = b;
        learned_ids[3 * m + 2] = x;
        learned_counts[m] = count;
        nlearned = ++m;
        if (on_merge != Py_None) {
            PyObject *r = PyObject_CallFunction(on_merge, "iiiL", a, b, x, count);
            if (!r) goto done;
            Py_DECREF(r);
        }
        if ((m & 1023) == 0 && PyErr_CheckSignals() < 0) goto done;
    }
    finished = 1;
done:
    free(seen);
    free(copy);
    free_state(&s);  /* before the result is built: its objects need not share the peak */
    if (finished) {
        if (as_arrays) {
            merges = Py_BuildValue("(y#y#)", nlearned ? (const char *)learned_ids : "",
                                   (Py_ssize_t)(nlearned * 3 * sizeof(int32_t)),
                                   nlearned ? (const char *)learned_counts : "", (Py_ssize_t)(nlearned * sizeof(int64_t)));
        } else if ((merges = PyList_New((Py_ssize_t)nlearned))) {
            for (Py_ssize_t m = 0; m < nlearned; m++) {
                PyObject *entry = Py_BuildValue("(iiiL)", learned_ids[3 * m], learned_ids[3 * m + 1],
                                                learned_ids[3 * m + 2], (long long)learned_counts[m]);
                if (!entry) { Py_CLEAR(merges); break; }
                PyList_SET_ITEM(merges, m, entry);
            }
        }
        if (merges) result = Py_BuildValue("(Oi)", merges, stop);
    }
    free(learned_ids);
    free(learned_counts);
    if (rankbuf.obj) PyBuffer_Release(&rankbuf);
    Py_XDECREF(merges);
    if (symbuf.obj) PyBuffer_Release(&symbuf);
    PyBuffer_Release(&lenbuf);
    PyBuffer_Release(&cntbuf);
    return result;
}

