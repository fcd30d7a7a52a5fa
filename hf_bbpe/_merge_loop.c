/*
 * The BPE merge loop (hot path of training), called from hf_bbpe/trainer.py.
 *
 * All unique words are laid end to end in one array of symbols, each word a doubly linked list
 * (a merge overwrites the left symbol and unlinks the right one, so positions never move).
 * Every pair has its total count (weighted by word counts) and the list of positions where it
 * may occur. A pair's positions are all appended during one pass in increasing order (at start,
 * or in the merge that created its newer token), so each list is sorted, and its first valid
 * entry is the pair's first occurrence in the corpus: that is what the "first_occurrence"
 * tie-break compares. Entries go stale when a neighbouring merge consumes them; they are
 * checked when read. A max-heap holds (count, tie key, pair) with lazy updates: counts of
 * existing pairs only fall, new pairs are pushed when created, and a popped entry whose count
 * or key is out of date is pushed back with the current one.
 *
 * With `ranks` given, the rules of tokenizers' BpeTrainer (see merge_loop.py's module doc): ids
 * compare by their rank, and the heap orders by the low 32 bits of a count read unsigned, which
 * is BpeTrainer's i32 count widened to u64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hash.h"

typedef struct {
    int32_t *data;
    int64_t len, cap;
} PosList;

typedef struct {
    int64_t count;
    int32_t a, b;
    PosList pos;
    int64_t head;   /* entries before it are known stale */
    int64_t stamp;  /* last merge that created this pair, to list it once */
} Pair;

typedef struct {
    int64_t count;
    uint64_t key;   /* smaller wins on equal count: (a << 32 | b), or first position */
    int32_t pair;
} HeapItem;

typedef struct {
    /* symbols */
    int32_t *sym, *prv, *nxt, *wid;
    const int64_t *wcount;
    /* pairs */
    Pair *pairs;
    int64_t npairs, cap_pairs;
    uint64_t *keys;
    int32_t *vals;
    uint64_t map_cap, map_size;
    /* heap */
    HeapItem *heap;
    int64_t heap_len, heap_cap;
    int by_occurrence;
    const int32_t *ranks;  /* BpeTrainer's rules when not NULL */
    int64_t nranks;
} State;

static int map_grow(State *s) {
    uint64_t cap = s->map_cap ? s->map_cap * 2 : 1 << 16;
    uint64_t *keys = malloc(cap * sizeof(uint64_t));
    int32_t *vals = malloc(cap * sizeof(int32_t));
    if (!keys || !vals) { free(keys); free(vals); return -1; }
    memset(keys, 0xff, cap * sizeof(uint64_t));
    for (uint64_t i = 0; i < s->map_cap; i++) {
        if (s->keys[i] == UINT64_MAX) continue;
        uint64_t j = mix64(s->keys[i]) & (cap - 1);
        while (keys[j] != UINT64_MAX) j = (j + 1) & (cap - 1);
        keys[j] = s->keys[i];
        vals[j] = s->vals[i];
    }
    free(s->keys);
    free(s->vals);
    s->keys = keys;
    s->vals = vals;
    s->map_cap = cap;
    return 0;
}

/* Index of pair (a, b), created with count 0 if new; -1 on allocation failure. */
static int32_t pair_index(State *s, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    if ((s->map_size + 1) * 2 > s->map_cap && map_grow(s) < 0) return -1;
    uint64_t j = mix64(key) & (s->map_cap - 1);
    while (s->keys[j] != UINT64_MAX) {
        if (s->keys[j] == key) return s->vals[j];
        j = (j + 1) & (s->map_cap - 1);
    }
    if (s->npairs == s->cap_pairs) {
        int64_t cap = s->cap_pairs ? s->cap_pairs * 2 : 1 << 16;
        Pair *p = realloc(s->pairs, cap * sizeof(Pair));
        if (!p) return -1;
        s->pairs = p;
        s->cap_pairs = cap;
    }
    int32_t idx = (int32_t)s->npairs++;
    Pair *p = &s->pairs[idx];
    memset(p, 0, sizeof(Pair));
    p->a = a;
    p->b = b;
    p->stamp = -1;
    s->keys[j] = key;
    s->vals[j] = idx;
    s->map_size++;
    return idx;
}

/* Grows by doubling, as the pair table and the heap do: C has no generic vector to share. */
static int pos_push(PosList *l, int32_t v) {
    if (l->len == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 4;
        int32_t *d = realloc(l->data, cap * sizeof(int32_t));
        if (!d) return -1;
        l->data = d;
        l->cap = cap;
    }
    l->data[l->len++] = v;
    return 0;
}

static inline int better(const HeapItem *x, const HeapItem *y) {
    return x->count > y->count || (x->count == y->count && x->key < y->key);
}

static int heap_push(State *s, HeapItem item) {
    if (s->heap_len == s->heap_cap) {
        int64_t cap = s->heap_cap ? s->heap_cap * 2 : 1 << 16;
        HeapItem *h = realloc(s->heap, cap * sizeof(HeapItem));
        if (!h) return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    int64_t i = s->heap_len++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!better(&item, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = item;
    return 0;
}

static HeapItem heap_pop(State *s) {
    HeapItem top = s->heap[0];
    HeapItem last = s->heap[--s->heap_len];
    int64_t i = 0, n = s->heap_len;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && better(&s->heap[c + 1], &s->heap[c])) c++;
        if (!better(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0) s->heap[i] = last;
    return top;
}

static inline int occurs_at(const State *s, const Pair *p, int32_t pos) {
    int32_t q;
    return s->sym[pos] == p->a && (q = s->nxt[pos]) >= 0 && s->sym[q] == p->b;
}

static inline uint32_t rank(const State *s, int32_t id) {
    return id < s->nranks ? (uint32_t)s->ranks[id] : (uint32_t)id;
}

/* The count the heap orders by: the pair's count, or BpeTrainer's i32 view of it as a u64. */
static inline int64_t heap_count(const State *s, int64_t count) {
    return s->ranks ? (int64_t)(uint32_t)count : count;
}

/* Whether a pair with this count is queued (at the start, or when a merge created it). */
static inline int queued(const State *s, int64_t count) {
    return s->ranks ? (int32_t)(uint32_t)count > 0 : count > 0;
}

/* The tie key of a pair: its ids (or ranks), or its first valid position (advancing past stale ones). */
static uint64_t tie_key(State *s, Pair *p) {
    if (s->ranks) return ((uint64_t)rank(s, p->a) << 32) | rank(s, p->b);
    if (!s->by_occurrence) return ((uint64_t)(uint32_t)p->a << 32) | (uint32_t)p->b;
    while (p->head < p->pos.len && !occurs_at(s, p, p->pos.data[p->head])) p->head++;
    return p->head < p->pos.len ? (uint64_t)p->pos.data[p->head] : UINT64_MAX;
}

/* Add delta to the count of (a, b); if created, record position pos. Returns index or -1. */
static inline int32_t bump(State *s, int32_t a, int32_t b, int64_t delta, int32_t pos) {
    int32_t idx = pair_index(s, a, b);
    if (idx < 0) return -1;
    Pair *p = &s->pairs[idx];
    p->count += delta;
    if (pos >= 0 && pos_push(&p->pos, pos) < 0) return -1;
    return idx;
}

static void free_state(State *s) {
    free(s->sym); free(s->prv); free(s->nxt); free(s->wid);
    for (int64_t i = 0; i < s->npairs; i++) free(s->pairs[i].pos.data);
    free(s->pairs); free(s->keys); free(s->vals); free(s->heap);
}

PyDoc_STRVAR(train_doc,
"train(symbols, lengths, counts, num_merges, first_id, taken, by_occurrence, min_frequency, on_merge,\n"
"      allow_pair=None, ranks=None)\n"
"-> (merges, stop)\n\n"
"symbols: buffer of uint8 or int32 token ids, all words end to end; lengths: int32 per word;\n"
"counts: int64 per word; taken: set of ids new merges must skip; on_merge(a, b, new_id, count)\n"
"or None; allow_pair(a, b) -> bool, or None, vetoes a pair for good; ranks: None, or an int32\n"
"permutation of range(len(ranks)) that selects BpeTrainer's rules (ids compare by ranks[id]).\n"
"merges is a list of (a, b, new_id, count); stop is 0 (done), 1 (out of pairs) or 2\n"
"(no pair reaches min_frequency).");

static PyObject *train(PyObject *self, PyObject *args) {
    Py_buffer symbuf, lenbuf, cntbuf, rankbuf = {0};
    Py_ssize_t num_merges;
    long long first_id, min_frequency;
    PyObject *taken, *on_merge, *allow_pair = Py_None, *ranks = Py_None;
    int by_occurrence;
    if (!PyArg_ParseTuple(args, "y*y*y*nLOpLO|OO", &symbuf, &lenbuf, &cntbuf, &num_merges, &first_id,
                          &taken, &by_occurrence, &min_frequency, &on_merge, &allow_pair, &ranks))
        return NULL;
    PyObject *result = NULL, *merges = NULL;
    int32_t *created = NULL;
    uint8_t *seen = NULL;
    int64_t ncreated = 0, cap_created = 0;
    State s;
    memset(&s, 0, sizeof(s));
    s.by_occurrence = by_occurrence;
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

    Py_ssize_t itemsize = symbuf.itemsize;
    if ((itemsize != 1 && itemsize != 4) || lenbuf.itemsize != 4 || cntbuf.itemsize != 8 ||
        lenbuf.len / 4 != cntbuf.len / 8) {
        PyErr_SetString(PyExc_ValueError, "symbols must be uint8 or int32, lengths int32, counts int64, one per word");
        goto done;
    }
    int64_t n = symbuf.len / itemsize, nwords = lenbuf.len / 4;
    if (n >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many symbols for one training run (2**31)");
        goto done;
    }
    const int32_t *lengths = lenbuf.buf;
    s.wcount = cntbuf.buf;
    s.sym = malloc((n + 1) * sizeof(int32_t));
    s.prv = malloc((n + 1) * sizeof(int32_t));
    s.nxt = malloc((n + 1) * sizeof(int32_t));
    s.wid = malloc((n + 1) * sizeof(int32_t));
    if (!s.sym || !s.prv || !s.nxt || !s.wid) { PyErr_NoMemory(); goto done; }
    for (int64_t i = 0; i < n; i++)
        s.sym[i] = itemsize == 1 ? ((const uint8_t *)symbuf.buf)[i] : ((const int32_t *)symbuf.buf)[i];

    int64_t start = 0;
    for (int64_t w = 0; w < nwords; w++) {
        int64_t end = start + lengths[w];
        if (lengths[w] < 0 || end > n) {
            PyErr_SetString(PyExc_ValueError, "word lengths do not add up to the number of symbols");
            goto done;
        }
        for (int64_t i = start; i < end; i++) {
            s.wid[i] = (int32_t)w;
            s.prv[i] = i > start ? (int32_t)(i - 1) : -1;
            s.nxt[i] = i + 1 < end ? (int32_t)(i + 1) : -1;
        }
        for (int64_t i = start; i + 1 < end; i++)
            if (bump(&s, s.sym[i], s.sym[i + 1], s.wcount[w], (int32_t)i) < 0) { PyErr_NoMemory(); goto done; }
        start = end;
    }
    for (int64_t i = 0; i < s.npairs; i++) {
        if (!queued(&s, s.pairs[i].count)) continue;
        HeapItem item = {heap_count(&s, s.pairs[i].count), tie_key(&s, &s.pairs[i]), (int32_t)i};
        if (heap_push(&s, item) < 0) { PyErr_NoMemory(); goto done; }
    }

    merges = PyList_New(0);
    if (!merges) goto done;
    int64_t next_id = first_id;
    int stop = 0;
    for (Py_ssize_t m = 0; m < num_merges;) {
        if (s.heap_len == 0) { stop = 1; break; }
        HeapItem top = heap_pop(&s);
        Pair *p = &s.pairs[top.pair];
        /* vetoed, or no occurrence left (BpeTrainer's rules requeue that with count 0) */
        if (s.ranks ? p->count < 0 : p->count <= 0) continue;
        uint64_t key = tie_key(&s, p);
        int64_t current = heap_count(&s, p->count);
        if (current != top.count || key != top.key) {
            HeapItem item = {current, key, top.pair};
            if (heap_push(&s, item) < 0) { PyErr_NoMemory(); goto loop_failed; }
            continue;
        }
        if (s.ranks) {
            if (current == 0) { stop = 1; break; }  /* BpeTrainer stops at a current count of 0 */
            /* a negative i32 count is a huge u64 to BpeTrainer, above any min_frequency */
            if (current <= INT32_MAX && current < min_frequency) { stop = 2; break; }
        } else if (p->count < min_frequency) { stop = 2; break; }
        if (allow_pair != Py_None) {
            PyObject *ok = PyObject_CallFunction(allow_pair, "ii", p->a, p->b);
            if (!ok) goto loop_failed;
            int allowed = PyObject_IsTrue(ok);
            Py_DECREF(ok);
            if (allowed < 0) goto loop_failed;
            if (!allowed) {  /* never merge this pair: drop it and its occurrences for good */
                p = &s.pairs[top.pair];
                p->count = INT64_MIN / 2;
                continue;
            }
        }
        for (;;) {
            PyObject *id = PyLong_FromLongLong(next_id);
            if (!id) goto loop_failed;
            int hit = taken == Py_None ? 0 : PySet_Contains(taken, id);
            Py_DECREF(id);
            if (hit < 0) goto loop_failed;
            if (!hit) break;
            next_id++;
        }
        if (next_id > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "token ids past 2**31"); goto loop_failed; }
        int32_t x = (int32_t)next_id++;
        int32_t a = p->a, b = p->b;
        int64_t count = p->count;
        /* The list is not appended to during the pass (created pairs contain x), but the pair
           table may move when it grows, so keep the list itself, not p. */
        PosList occ = p->pos;
        p->pos.data = NULL;
        p->pos.len = p->pos.cap = 0;
        ncreated = 0;
        for (int64_t k = by_occurrence ? p->head : 0; k < occ.len; k++) {
            int32_t i = occ.data[k];
            int32_t j;
            if (s.sym[i] != a || (j = s.nxt[i]) < 0 || s.sym[j] != b) continue;
            int64_t c = s.wcount[s.wid[i]];
            int32_t l = s.prv[i], r = s.nxt[j];
            int32_t made[2] = {-1, -1};
            if (l >= 0) {
                if (bump(&s, s.sym[l], a, -c, -1) < 0 || (made[0] = bump(&s, s.sym[l], x, c, l)) < 0) {
                    free(occ.data); PyErr_NoMemory(); goto loop_failed;
                }
            }
            if (r >= 0) {
                if (bump(&s, b, s.sym[r], -c, -1) < 0 || (made[1] = bump(&s, x, s.sym[r], c, i)) < 0) {
                    free(occ.data); PyErr_NoMemory(); goto loop_failed;
                }
            }
            s.pairs[top.pair].count -= c;
            for (int t = 0; t < 2; t++) {
                if (made[t] < 0 || s.pairs[made[t]].stamp == m) continue;
                s.pairs[made[t]].stamp = m;
                if (ncreated == cap_created) {
                    cap_created = cap_created ? cap_created * 2 : 64;
                    int32_t *c2 = realloc(created, cap_created * sizeof(int32_t));
                    if (!c2) { free(occ.data); PyErr_NoMemory(); goto loop_failed; }
                    created = c2;
                }
                created[ncreated++] = made[t];
            }
            s.sym[i] = x;
            s.sym[j] = -1;
            s.nxt[i] = r;
            if (r >= 0) s.prv[r] = i;
        }
        free(occ.data);
        for (int64_t k = 0; k < ncreated; k++) {
            Pair *q = &s.pairs[created[k]];
            if (!queued(&s, q->count)) continue;
            HeapItem item = {heap_count(&s, q->count), tie_key(&s, q), created[k]};
            if (heap_push(&s, item) < 0) { PyErr_NoMemory(); goto loop_failed; }
        }
        PyObject *entry = Py_BuildValue("(iiiL)", a, b, x, count);
        if (!entry || PyList_Append(merges, entry) < 0) { Py_XDECREF(entry); goto loop_failed; }
        Py_DECREF(entry);
        m++;
        if (on_merge != Py_None) {
            PyObject *r = PyObject_CallFunction(on_merge, "iiiL", a, b, x, count);
            if (!r) goto loop_failed;
            Py_DECREF(r);
        }
        if ((m & 1023) == 0 && PyErr_CheckSignals() < 0) goto loop_failed;
    }
    result = Py_BuildValue("(Oi)", merges, stop);
loop_failed:
done:
    free(created);
    free(seen);
    if (rankbuf.obj) PyBuffer_Release(&rankbuf);
    Py_XDECREF(merges);
    free_state(&s);
    PyBuffer_Release(&symbuf);
    PyBuffer_Release(&lenbuf);
    PyBuffer_Release(&cntbuf);
    return result;
}

static PyMethodDef methods[] = {
    {"train", train, METH_VARARGS, train_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_merge_loop", "The BPE merge loop in C (see hf_bbpe/trainer.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__merge_loop(void) { return PyModule_Create(&module); }
