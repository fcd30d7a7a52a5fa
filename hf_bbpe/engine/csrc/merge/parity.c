/*
 * Parity-aware BPE's merge loop (parity_train): engine/training/parity_reference.py in C, step for
 * step, so that both return the same merges (tests/engine/training/test_parity_kernel.py). That
 * file's module doc says what is counted and chosen; the names here are its names.
 *
 * Each corpus (a language's training words, or its dev words) is its words end to end, each a
 * doubly linked list over positions (sym, prv, nxt, and the word's count per position), with a
 * pair table: (a, b) -> count and the positions where the pair may start (checked when read).
 * Training corpora also have a lazy max-heap of (count, pair). Tokens are byte strings; a merge
 * whose bytes already form a token yields it (a hash table of the tokens' bytes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "common/grow.h"
#include "common/hash.h"
#include "merge/merge.h"

#define DEAD (-1)

typedef struct { int32_t *v; uint32_t n, cap; } Vec;

static int vec_push(Vec *vec, int32_t x) {
    if (vec->n == vec->cap) {
        uint32_t cap = (uint32_t)grown_capacity(vec->cap, (size_t)vec->n + 1, 4);
        int32_t *v = realloc(vec->v, (size_t)cap * sizeof(int32_t));
        if (!v) return -1;
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = x;
    return 0;
}

typedef struct { uint64_t *v; uint64_t n, cap; } Keys;

static int keys_push(Keys *keys, uint64_t x) {
    if (keys->n == keys->cap) {
        uint64_t cap = grown_capacity(keys->cap, keys->n + 1, 16);
        uint64_t *v = realloc(keys->v, cap * sizeof(uint64_t));
        if (!v) return -1;
        keys->v = v;
        keys->cap = cap;
    }
    keys->v[keys->n++] = x;
    return 0;
}

static int cmp_uint64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* ---------------------------------------------------------------- tokens */

typedef struct {
    uint8_t *bytes;      /* every token's bytes end to end */
    uint64_t used, room;
    uint64_t *off;       /* token id -> offset, length */
    uint32_t *len;
    uint32_t n, cap;
    uint32_t *slots;     /* bytes -> id, open addressing */
    uint64_t nslots;
} Tokens;

static uint8_t byte_rank[256]; /* a byte's place in the order of its byte-level character (set_byte_rank) */

static uint64_t token_hash(const void *tokens, uint64_t i) {
    const Tokens *t = tokens;
    return hash_bytes(t->bytes + t->off[i], t->len[i]);
}

static int64_t token_find(const Tokens *t, const uint8_t *p, uint32_t n) {
    uint64_t j = hash_bytes(p, n) & (t->nslots - 1);
    for (; t->slots[j] != NONE; j = (j + 1) & (t->nslots - 1)) {
        uint32_t id = t->slots[j];
        if (t->len[id] == n && memcmp(t->bytes + t->off[id], p, n) == 0) return id;
    }
    return -1;
}

/* The id of a's bytes then b's: an existing token, or a new one; -1 when out of memory. */
static int64_t token_join(Tokens *t, int32_t a, int32_t b) {
    uint32_t na = t->len[a], nb = t->len[b], n = na + nb;
    if (t->used + n > t->room) {
        uint64_t room = grown_capacity(t->room, t->used + n, 4096);
        uint8_t *bytes = realloc(t->bytes, room);
        if (!bytes) return -1;
        t->bytes = bytes;
        t->room = room;
    }
    uint8_t *p = t->bytes + t->used;
    memcpy(p, t->bytes + t->off[a], na);
    memcpy(p + na, t->bytes + t->off[b], nb);
    int64_t found = token_find(t, p, n);
    if (found >= 0) return found;
    if (t->n == t->cap) {
        uint32_t cap = (uint32_t)grown_capacity(t->cap, (size_t)t->n + 1, 1024);
        uint64_t *off = realloc(t->off, (size_t)cap * sizeof(uint64_t));
        if (!off) return -1;
        t->off = off;
        uint32_t *len = realloc(t->len, (size_t)cap * sizeof(uint32_t));
        if (!len) return -1;
        t->len = len;
        t->cap = cap;
    }
    uint32_t id = t->n++;
    t->off[id] = t->used;
    t->len[id] = n;
    t->used += n;
    if ((uint64_t)t->n * 2 > t->nslots) {
        if (index_items(&t->slots, &t->nslots, t->nslots * 2, t->n, token_hash, t) < 0) return -1;
    } else {
        uint64_t j = hash_bytes(p, n) & (t->nslots - 1);
        while (t->slots[j] != NONE) j = (j + 1) & (t->nslots - 1);
        t->slots[j] = id;
    }
    return id;
}

static int tokens_init(Tokens *t) {
    memset(t, 0, sizeof *t);
    t->room = 4096;
    t->cap = 1024;
    t->bytes = malloc(t->room);
    t->off = malloc(t->cap * sizeof(uint64_t));
    t->len = malloc(t->cap * sizeof(uint32_t));
    if (!t->bytes || !t->off || !t->len) return -1;
    for (uint32_t b = 0; b < 256; b++) {
        t->bytes[b] = (uint8_t)b;
        t->off[b] = b;
        t->len[b] = 1;
    }
    t->used = t->n = 256;
    t->slots = NULL;
    return index_items(&t->slots, &t->nslots, 1024, 256, token_hash, t);
}

static void tokens_free(Tokens *t) {
    free(t->bytes);
    free(t->off);
    free(t->len);
    free(t->slots);
}

/* Byte-level strings compared (their characters' code points): <0, 0, >0. */
static int token_cmp(const Tokens *t, int32_t x, int32_t y) {
    const uint8_t *p = t->bytes + t->off[x], *q = t->bytes + t->off[y];
    uint32_t n = t->len[x], m = t->len[y];
    for (uint32_t k = 0; k < n && k < m; k++)
        if (p[k] != q[k]) return (int)byte_rank[p[k]] - (int)byte_rank[q[k]];
    return (n > m) - (n < m);
}

/* ---------------------------------------------------------------- pair tables */

typedef struct {
    uint64_t *keys;   /* pair_key(a, b), or UINT64_MAX for an empty slot */
    int64_t *count;
    Vec *where;
    uint64_t cap, n;
} Pairs;

static int pairs_init(Pairs *p, uint64_t cap) {
    p->cap = cap;
    p->n = 0;
    p->keys = malloc(cap * sizeof(uint64_t));
    p->count = calloc(cap, sizeof(int64_t));
    p->where = calloc(cap, sizeof(Vec));
    if (!p->keys || !p->count || !p->where) return -1;
    memset(p->keys, 0xff, cap * sizeof(uint64_t));
    return 0;
}

static void pairs_free(Pairs *p) {
    if (p->where)
        for (uint64_t i = 0; i < p->cap; i++) free(p->where[i].v);
    free(p->keys);
    free(p->count);
    free(p->where);
}

static int64_t pairs_find(const Pairs *p, uint64_t key) {
    uint64_t j = mix64(key) & (p->cap - 1);
    for (; p->keys[j] != UINT64_MAX; j = (j + 1) & (p->cap - 1))
        if (p->keys[j] == key) return (int64_t)j;
    return -1;
}

static int64_t pairs_count(const Pairs *p, uint64_t key) {
    int64_t j = pairs_find(p, key);
    return j < 0 ? 0 : p->count[j];
}

/* The slot of key, made if new (the table grows at half full); -1 when out of memory. */
static int64_t pairs_slot(Pairs *p, uint64_t key) {
    int64_t found = pairs_find(p, key);
    if (found >= 0) return found;
    if ((p->n + 1) * 2 > p->cap) {
        Pairs bigger;
        if (pairs_init(&bigger, p->cap * 2) < 0) {
            pairs_free(&bigger);
            return -1;
        }
        for (uint64_t i = 0; i < p->cap; i++) {
            if (p->keys[i] == UINT64_MAX) continue;
            uint64_t j = mix64(p->keys[i]) & (bigger.cap - 1);
            while (bigger.keys[j] != UINT64_MAX) j = (j + 1) & (bigger.cap - 1);
            bigger.keys[j] = p->keys[i];
            bigger.count[j] = p->count[i];
            bigger.where[j] = p->where[i];
            p->where[i].v = NULL;
        }
        bigger.n = p->n;
        pairs_free(p);
        *p = bigger;
    }
    uint64_t j = mix64(key) & (p->cap - 1);
    while (p->keys[j] != UINT64_MAX) j = (j + 1) & (p->cap - 1);
    p->keys[j] = key;
    p->n++;
    return (int64_t)j;
}

/* count(a, b) += delta, and record position (if >= 0); -1 when out of memory. */
static int pairs_add(Pairs *p, int32_t a, int32_t b, int64_t delta, int32_t position) {
    int64_t j = pairs_slot(p, pair_key(a, b));
    if (j < 0) return -1;
    p->count[j] += delta;
    return position >= 0 ? vec_push(&p->where[j], position) : 0;
}

/* ---------------------------------------------------------------- heaps */

typedef struct { int64_t count; int32_t a, b; } Entry;
typedef struct { Entry *e; uint64_t n, cap; } Heap;

static const Tokens *order_tokens; /* the tokens the heaps compare (NULL: smallest ids first) */

/* Whether x comes out of the heap before y: higher count, then the tie rule. */
static int before(Entry x, Entry y) {
    if (x.count != y.count) return x.count > y.count;
    if (order_tokens) {
        int c = x.a != y.a ? token_cmp(order_tokens, x.a, y.a) : 0;
        if (c == 0 && x.b != y.b) c = token_cmp(order_tokens, x.b, y.b);
        return c > 0;
    }
    return x.a != y.a ? x.a < y.a : x.b < y.b;
}

static int heap_push(Heap *h, Entry x) {
    if (h->n == h->cap) {
        uint64_t cap = grown_capacity(h->cap, h->n + 1, 64);
        Entry *e = realloc(h->e, cap * sizeof(Entry));
        if (!e) return -1;
        h->e = e;
        h->cap = cap;
    }
    uint64_t i = h->n++;
    while (i > 0 && before(x, h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = x;
    return 0;
}

static Entry heap_pop(Heap *h) {
    Entry top = h->e[0], last = h->e[--h->n];
    uint64_t i = 0;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(h->e[c + 1], h->e[c])) c++;
        if (!before(h->e[c], last)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n) h->e[i] = last;
    return top;
}

/* Push (a, b) with its current count if positive. */
static int queue_push(Heap *h, const Pairs *p, int32_t a, int32_t b) {
    int64_t count = pairs_count(p, pair_key(a, b));
    return count > 0 ? heap_push(h, (Entry){count, a, b}) : 0;
}

/* The pair with the highest count (left queued), or 0 when none is positive. The heap is lazy:
 * a pair is pushed when its count rises, so some entry holds at least its count. An entry above
 * the count is put back with the count; one below it is dropped, as a newer one holds more. */
static int queue_best(Heap *h, const Pairs *p, Entry *best) {
    while (h->n) {
        Entry top = h->e[0];
        int64_t count = pairs_count(p, pair_key(top.a, top.b));
        if (count == top.count && count > 0) {
            *best = top;
            return 1;
        }
        heap_pop(h);
        if (count > 0 && count < top.count) {
            top.count = count;
            if (heap_push(h, top) < 0) return -1;
        }
    }
    return 0;
}

/* The distinct keys of keys[0..n) in place (sorted); their number. */
static uint64_t unique_keys(uint64_t *keys, uint64_t n) {
    if (n < 2) return n;
    qsort(keys, n, sizeof(uint64_t), cmp_uint64);
    uint64_t m = 1;
    for (uint64_t i = 1; i < n; i++)
        if (keys[i] != keys[m - 1]) keys[m++] = keys[i];
    return m;
}

/* ---------------------------------------------------------------- corpora */

typedef struct {
    int32_t *sym, *prv, *nxt;
    int64_t *weight;
    uint64_t n;
    int64_t length;
    Pairs pairs;
    Heap heap;
} Words;

static void words_free(Words *w) {
    free(w->sym);
    free(w->prv);
    free(w->nxt);
    free(w->weight);
    pairs_free(&w->pairs);
    free(w->heap.e);
}

/* Link the words of (symbols, lengths, counts) and count their pairs; -1 (Python error set) on failure. */
static int words_init(Words *w, const uint8_t *symbols, uint64_t nsym, const int32_t *lengths, const int64_t *counts,
                      uint64_t nwords) {
    memset(w, 0, sizeof *w);
    if (nsym >= (uint64_t)INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many symbols in one language for the parity loop (2**31)");
        return -1;
    }
    w->sym = malloc((nsym + 1) * sizeof(int32_t));
    w->prv = malloc((nsym + 1) * sizeof(int32_t));
    w->nxt = malloc((nsym + 1) * sizeof(int32_t));
    w->weight = malloc((nsym + 1) * sizeof(int64_t));
    if (!w->sym || !w->prv || !w->nxt || !w->weight || pairs_init(&w->pairs, 1024) < 0) goto oom;
    uint64_t at = 0, k = 0;
    for (uint64_t i = 0; i < nwords; i++) {
        int64_t len = lengths[i], c = counts[i];
        if (len < 0 || at + (uint64_t)len > nsym) {
            PyErr_SetString(PyExc_ValueError, "word lengths do not add up to the number of symbols");
            return -1;
        }
        if (c > 0 && len > 0) {
            for (int64_t j = 0; j < len; j++, k++) {
                w->sym[k] = symbols[at + j];
                w->weight[k] = c;
                w->prv[k] = j ? (int32_t)k - 1 : -1;
                w->nxt[k] = j + 1 < len ? (int32_t)k + 1 : -1;
                if (j && pairs_add(&w->pairs, w->sym[k - 1], w->sym[k], c, (int32_t)k - 1) < 0) goto oom;
            }
            w->length += len * c;
        }
        at += (uint64_t)len;
    }
    if (at != nsym) {
        PyErr_SetString(PyExc_ValueError, "word lengths do not add up to the number of symbols");
        return -1;
    }
    w->n = k;
    return 0;
oom:
    PyErr_NoMemory();
    return -1;
}

static int cmp_int32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Replace each occurrence of (a, b) by x, left to right. The pairs whose counts rose go to raised
 * and those whose counts fell to lowered (as keys, repeated), when those are given; -1 when out
 * of memory. */
static int words_merge(Words *w, int32_t a, int32_t b, int32_t x, Keys *raised, Keys *lowered) {
    int64_t slot = pairs_find(&w->pairs, pair_key(a, b));
    if (slot < 0 || w->pairs.where[slot].v == NULL) return 0;
    Vec positions = w->pairs.where[slot];
    w->pairs.where[slot] = (Vec){NULL, 0, 0};
    uint32_t sorted = 1;
    while (sorted < positions.n && positions.v[sorted - 1] <= positions.v[sorted]) sorted++;
    if (sorted < positions.n) qsort(positions.v, positions.n, sizeof(int32_t), cmp_int32);
    int32_t *sym = w->sym, *prv = w->prv, *nxt = w->nxt;
    int rc = 0;
    for (uint32_t k = 0; k < positions.n && rc == 0; k++) {
        int32_t i = positions.v[k];
        if (k && i == positions.v[k - 1]) continue;
        int32_t j = nxt[i];
        if (sym[i] != a || j < 0 || sym[j] != b) continue;
        int64_t c = w->weight[i];
        int32_t left = prv[i], right = nxt[j];
        if (left >= 0) {
            int32_t l = sym[left];
            if (pairs_add(&w->pairs, l, a, -c, -1) < 0 || pairs_add(&w->pairs, l, x, c, left) < 0 ||
                (raised && keys_push(raised, pair_key(l, x)) < 0) ||
                (lowered && keys_push(lowered, pair_key(l, a)) < 0))
                rc = -1;
        }
        if (right >= 0 && rc == 0) {
            int32_t r = sym[right];
            if (pairs_add(&w->pairs, b, r, -c, -1) < 0 || pairs_add(&w->pairs, x, r, c, i) < 0 ||
                (raised && keys_push(raised, pair_key(x, r)) < 0) ||
                (lowered && keys_push(lowered, pair_key(b, r)) < 0))
                rc = -1;
        }
        sym[i] = x;
        sym[j] = DEAD;
        nxt[i] = right;
        if (right >= 0) prv[right] = i;
        w->length -= c;
    }
    free(positions.v);
    slot = pairs_find(&w->pairs, pair_key(a, b)); /* (the table may have grown) */
    if (slot >= 0) w->pairs.count[slot] = 0;
    return rc;
}

/* ---------------------------------------------------------------- choosing a language */

typedef struct {
    int window;
    int64_t window_size;
    double threshold;
    int32_t *ring;      /* the last window_size choices */
    int64_t ring_n, ring_at;
    int64_t *chosen;    /* how often each language is in the ring */
} Window;

/* The first k (unmasked, if mask) with the greatest values[k]; 0 when none is above -INFINITY,
 * and *found says whether one was. */
static int best_of(const double *values, const char *mask, int n, int *found) {
    int best = 0;
    double best_value = -INFINITY;
    for (int k = 0; k < n; k++)
        if ((!mask || mask[k]) && values[k] > best_value) {
            best = k;
            best_value = values[k];
        }
    if (found) *found = best_value > -INFINITY;
    return best;
}

static int choose(const double *values, int n, Window *win, char *mask) {
    if (!win->window) return best_of(values, NULL, n, NULL);
    memset(mask, 1, (size_t)n);
    int choice;
    for (;;) {
        int found;
        int best = best_of(values, mask, n, &found);
        if (!found && !mask[best]) { /* see parity_reference._select_window */
            choice = best_of(values, NULL, n, NULL);
            break;
        }
        if ((double)win->chosen[best] / (double)win->window_size <= win->threshold) {
            choice = best;
            break;
        }
        mask[best] = 0;
        int any = 0;
        for (int k = 0; k < n; k++) any |= mask[k];
        if (!any) {
            choice = best;
            break;
        }
    }
    if (win->ring_n == win->window_size) { /* the oldest choice leaves the window */
        win->chosen[win->ring[win->ring_at]]--;
        win->ring_at = (win->ring_at + 1) % win->window_size;
        win->ring_n--;
    }
    win->ring[(win->ring_at + win->ring_n) % win->window_size] = choice;
    win->ring_n++;
    win->chosen[choice]++;
    return choice;
}

/* ---------------------------------------------------------------- the loop */

typedef struct {
    int n, ndev;
    Words *train, *dev;
    Pairs summed;
    Heap global;
    Tokens tokens;
    Window win;
    double *initial, *ratio, *values;
    char *exhausted, *mask;
    Keys raised, lowered, changed_all;
} State;

static void state_free(State *s) {
    for (int k = 0; k < s->n; k++) words_free(&s->train[k]);
    for (int k = 0; k < s->ndev; k++) words_free(&s->dev[k]);
    free(s->train);
    free(s->dev);
    pairs_free(&s->summed);
    free(s->global.e);
    tokens_free(&s->tokens);
    free(s->win.ring);
    free(s->win.chosen);
    free(s->initial);
    free(s->ratio);
    free(s->values);
    free(s->exhausted);
    free(s->mask);
    free(s->raised.v);
    free(s->lowered.v);
    free(s->changed_all.v);
}

/* Each (symbols, lengths, counts) of the list `corpora` linked into words[k]; -1 (error set) on failure. */
static int load_corpora(PyObject *corpora, Words *words, int n) {
    for (int k = 0; k < n; k++) {
        PyObject *item = PyList_GET_ITEM(corpora, k);
        Py_buffer views[3];
        int got = 0, rc = -1;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "each corpus is a (symbols, lengths, counts) tuple of buffers");
            return -1;
        }
        for (; got < 3; got++)
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, got), &views[got], PyBUF_SIMPLE) < 0) break;
        if (got == 3) {
            if (views[1].len % 4 || views[2].len != views[1].len * 2)
                PyErr_SetString(PyExc_ValueError, "symbols must be uint8, lengths int32, counts int64, one per word");
            else
                rc = words_init(&words[k], views[0].buf, (uint64_t)views[0].len, views[1].buf, views[2].buf,
                                (uint64_t)views[1].len / 4);
        }
        for (int j = 0; j < got; j++) PyBuffer_Release(&views[j]);
        if (rc < 0) return -1;
    }
    return 0;
}

/* byte_rank from hf_ranks (merge_loop.huggingface_ranks: 256 int32 ranks by byte, or more), or
 * none when it is None (then the smallest ids win ties): 1, 0 (smallest ids), -1 with an error. */
static int set_byte_rank(PyObject *hf_ranks) {
    if (hf_ranks == Py_None) return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(hf_ranks, &view, PyBUF_SIMPLE) < 0) return -1;
    int ok = view.len >= 256 * 4;
    if (ok)
        for (int b = 0; b < 256; b++) {
            int32_t rank;
            memcpy(&rank, (const char *)view.buf + 4 * b, 4);
            ok &= rank >= 0 && rank < 256;
            byte_rank[b] = (uint8_t)rank;
        }
    PyBuffer_Release(&view);
    if (!ok) PyErr_SetString(PyExc_ValueError, "parity_train: hf_ranks must hold 256 int32 byte ranks (0-255)");
    return ok ? 1 : -1;
}

HF_INTERNAL PyObject *merge_parity_train(PyObject *self, PyObject *args) {
    PyObject *languages, *dev, *ratio, *hf_ranks, *on_merge;
    long long num_merges, window_size, global_merges, min_frequency;
    int window;
    double alpha;
    if (!PyArg_ParseTuple(args, "O!OOLpLdLLOO", &PyList_Type, &languages, &dev, &ratio, &num_merges, &window,
                          &window_size, &alpha, &global_merges, &min_frequency, &hf_ranks, &on_merge))
        return NULL;
    int n = (int)PyList_GET_SIZE(languages);
    if (n < 1 || window_size < 1 || (dev != Py_None && (!PyList_Check(dev) || PyList_GET_SIZE(dev) != n)) ||
        (ratio != Py_None && (!PyList_Check(ratio) || PyList_GET_SIZE(ratio) != n)) ||
        ((dev == Py_None) == (ratio == Py_None))) {
        PyErr_SetString(PyExc_ValueError, "parity_train: one or more languages, and a dev corpus or a ratio per "
                                          "language (one of them), window_size >= 1");
        return NULL;
    }
    State s;
    memset(&s, 0, sizeof s);
    PyObject *out = NULL;
    Vec merges = {NULL, 0, 0};
    s.n = n;
    s.train = calloc((size_t)n, sizeof(Words));
    s.initial = calloc((size_t)n, sizeof(double));
    s.ratio = calloc((size_t)n, sizeof(double));
    s.values = calloc((size_t)n, sizeof(double));
    s.exhausted = calloc((size_t)n, 1);
    s.mask = calloc((size_t)n, 1);
    s.win.ring = calloc((size_t)window_size, sizeof(int32_t));
    s.win.chosen = calloc((size_t)n, sizeof(int64_t));
    if (!s.train || !s.initial || !s.ratio || !s.values || !s.exhausted || !s.mask || !s.win.ring || !s.win.chosen ||
        tokens_init(&s.tokens) < 0 || pairs_init(&s.summed, 1024) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    s.win.window = window;
    s.win.window_size = window_size;
    s.win.threshold = alpha / n;
    if (load_corpora(languages, s.train, n) < 0) goto done;
    if (dev != Py_None) {
        s.dev = calloc((size_t)n, sizeof(Words));
        if (!s.dev) {
            PyErr_NoMemory();
            goto done;
        }
        s.ndev = n;
        if (load_corpora(dev, s.dev, n) < 0) goto done;
    } else {
        for (int k = 0; k < n; k++) {
            s.ratio[k] = PyFloat_AsDouble(PyList_GET_ITEM(ratio, k));
            if (PyErr_Occurred()) goto done;
        }
    }
    int hf_ties = set_byte_rank(hf_ranks);
    if (hf_ties < 0) goto done;
    order_tokens = hf_ties ? &s.tokens : NULL;
    for (int k = 0; k < n; k++) {
        Words *w = &s.train[k];
        s.initial[k] = (double)w->length;
        for (uint64_t i = 0; i < w->pairs.cap; i++) {
            if (w->pairs.keys[i] == UINT64_MAX || w->pairs.count[i] <= 0) continue;
            int32_t a = (int32_t)(w->pairs.keys[i] >> 32), b = (int32_t)(uint32_t)w->pairs.keys[i];
            if (heap_push(&w->heap, (Entry){w->pairs.count[i], a, b}) < 0) goto oom;
            if (global_merges > 0) {
                int64_t j = pairs_slot(&s.summed, w->pairs.keys[i]);
                if (j < 0) goto oom;
                s.summed.count[j] += w->pairs.count[i];
            }
        }
    }
    for (uint64_t i = 0; i < s.summed.cap; i++)
        if (s.summed.keys[i] != UINT64_MAX && s.summed.count[i] > 0 &&
            heap_push(&s.global, (Entry){s.summed.count[i], (int32_t)(s.summed.keys[i] >> 32),
                                         (int32_t)(uint32_t)s.summed.keys[i]}) < 0)
            goto oom;

    int exhausted = 0;
    int64_t made = 0;
    while (made < num_merges && exhausted < n) {
        int lang = -1;
        if (made >= global_merges) {
            for (int k = 0; k < n; k++) {
                if (s.exhausted[k])
                    s.values[k] = -INFINITY;
                else if (s.ndev)
                    s.values[k] = (double)s.dev[k].length;
                else
                    s.values[k] = -((s.initial[k] / (double)s.train[k].length) / s.ratio[k]);
            }
            lang = choose(s.values, n, &s.win, s.mask);
        }
        Entry best;
        int found = lang < 0 ? queue_best(&s.global, &s.summed, &best)
                             : queue_best(&s.train[lang].heap, &s.train[lang].pairs, &best);
        if (found < 0) goto oom;
        if (!found || best.count < min_frequency) {
            if (lang < 0) break;
            if (!s.exhausted[lang]) exhausted++;
            s.exhausted[lang] = 1;
            continue;
        }
        int64_t x = token_join(&s.tokens, best.a, best.b);
        if (x < 0 || x > INT32_MAX) goto oom;
        if (vec_push(&merges, best.a) < 0 || vec_push(&merges, best.b) < 0 || vec_push(&merges, (int32_t)x) < 0 ||
            vec_push(&merges, lang) < 0)
            goto oom;
        s.changed_all.n = 0;
        for (int k = 0; k < n; k++) {
            Words *w = &s.train[k];
            s.raised.n = s.lowered.n = 0;
            if (words_merge(w, best.a, best.b, (int32_t)x, &s.raised, global_merges > 0 ? &s.lowered : NULL) < 0)
                goto oom;
            s.raised.n = unique_keys(s.raised.v, s.raised.n);
            for (uint64_t i = 0; i < s.raised.n; i++) {
                uint64_t key = s.raised.v[i];
                if (queue_push(&w->heap, &w->pairs, (int32_t)(key >> 32), (int32_t)(uint32_t)key) < 0) goto oom;
                if (global_merges > 0 && keys_push(&s.changed_all, key) < 0) goto oom;
            }
            for (uint64_t i = 0; i < s.lowered.n; i++)
                if (keys_push(&s.changed_all, s.lowered.v[i]) < 0) goto oom;
        }
        if (global_merges > 0) {
            if (keys_push(&s.changed_all, pair_key(best.a, best.b)) < 0) goto oom;
            s.changed_all.n = unique_keys(s.changed_all.v, s.changed_all.n);
            for (uint64_t i = 0; i < s.changed_all.n; i++) {
                uint64_t key = s.changed_all.v[i];
                int64_t total = 0;
                for (int k = 0; k < n; k++) total += pairs_count(&s.train[k].pairs, key);
                if (total < 0) total = 0;
                int64_t j = pairs_slot(&s.summed, key);
                if (j < 0) goto oom;
                int64_t before_count = s.summed.count[j];
                s.summed.count[j] = total;
                if (total > before_count &&
                    heap_push(&s.global, (Entry){total, (int32_t)(key >> 32), (int32_t)(uint32_t)key}) < 0)
                    goto oom;
            }
        }
        for (int k = 0; k < s.ndev; k++)
            if (words_merge(&s.dev[k], best.a, best.b, (int32_t)x, NULL, NULL) < 0) goto oom;
        made++;
        if (on_merge != Py_None) {
            PyObject *r = PyObject_CallFunction(on_merge, "iiiiL", best.a, best.b, (int)x, lang,
                                                (long long)best.count);
            if (!r) goto done;
            Py_DECREF(r);
        }
    }
    out = PyBytes_FromStringAndSize((const char *)merges.v, (Py_ssize_t)merges.n * (Py_ssize_t)sizeof(int32_t));
    goto done;
oom:
    PyErr_NoMemory();
done:
    order_tokens = NULL;
    free(merges.v);
    state_free(&s);
    return out;
}
