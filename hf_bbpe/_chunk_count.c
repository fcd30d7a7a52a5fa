/*
 * Counting the chunks of a corpus in C (the input side of training), used by
 * hf_bbpe/native_counting.py; its readable twin is chunk_counting.py (with text_files.py for
 * reading files), which the tests hold this kernel to.
 *
 * Text is split by a _pretokenize scanner (a capsule holding a PretokScanner: GPT-2, GPT-4,
 * o200k, Llama 3, Qwen2, Tekken) over UTF-8, on threads (pthreads) that run without the GIL.
 * Each thread counts into its own table: open addressing over 64-bit slots (a 24-bit tag of the
 * hash and the offset of the chunk's record), and one arena of records, [count: 8 bytes]
 * [length: varint][bytes], appended in the order the thread first meets each chunk. No Python
 * object is made per chunk.
 *
 * Documents are never cut blindly: a document is one str, one row of an Arrow string column, or one
 * line (with its \n) of a text file, or the text field of one line of a .jsonl file; a long str is
 * counted in parts that hand over where their chunkings meet (see Part), as one pass. The work is cut
 * into units (ranges of documents, or byte ranges of files that own the lines starting in them),
 * numbered in input order; threads take units in that order (an atomic counter), and a thread
 * notes where each unit's records start in its arena (a segment with the unit's number). Within a
 * table, records are in order of first appearance in that thread's units, so the whole input's
 * order of first appearance is a merge of the tables by (unit, record): result() walks the
 * segments in unit order and emits each chunk where it is first met, with the sum of its counts
 * from every table (which it then zeroes in the others). The output is three flat buffers, the
 * merge loop's input: every chunk's bytes end to end (uint8), their lengths (int32), their counts
 * (int64).
 *
 * Input errors (invalid UTF-8, a .jsonl line that is not JSON, lacks the field or holds another
 * type, a null Arrow row) stop the work at the first one in input order: a thread that meets one
 * notes its unit and position, and no thread starts a later unit. The message names the file and
 * line (or row).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "scan/scanner.h"

#if (defined(__unix__) || defined(__APPLE__)) && (defined(__GNUC__) || defined(__clang__))
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define HAVE_THREADS 1
#define ATOMIC_NEXT(p) __atomic_fetch_add(p, 1, __ATOMIC_RELAXED)
#define ATOMIC_ADD(p, v) __atomic_fetch_add(p, v, __ATOMIC_RELAXED)
#define ATOMIC_GET(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define ATOMIC_SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#else /* one thread, the caller's */
#define HAVE_THREADS 0
#define ATOMIC_NEXT(p) ((*(p))++)
#define ATOMIC_ADD(p, v) (*(p) += (v))
#define ATOMIC_GET(p) (*(p))
#define ATOMIC_SET(p, v) (*(p) = (v))
#endif

#define MAX_THREADS 256
#define SCAN_BATCH 64 /* chunk ends asked of the scanner at a time */
#define NOT_UTF8_HINT "a binary file, or another encoding such as Latin-1?" /* (text_files.py says the same) */
/* a file written to while it was read (text_files.changed_while_read words it the same) */
#define CHANGED_WHILE_READ "changed while it was read"
#define CHANGED_HINT "; count it again once nothing writes to it"
#define PAD 64        /* readable bytes kept after any text given to the scanner */

/* ------------------------------------------------------------------------------------------ */
/* A thread's table                                                                            */

#define TAG_SHIFT 40
#define TAG_BITS (64 - TAG_SHIFT)
#define OFFSET_MASK ((UINT64_C(1) << TAG_SHIFT) - 1) /* a record's offset + 1 (0: empty slot) */

typedef struct {
    uint64_t arena_offset; /* where the unit's records start */
    int64_t unit;          /* the unit's number in input order */
} Segment;

typedef struct Spill Spill;

typedef struct {
    uint64_t *slots;
    uint64_t mask;    /* slots - 1 */
    int bits;         /* slots = 2**bits; a chunk's first slot is the top bits of its hash */
    uint64_t records; /* distinct chunks */
    uint64_t chunk_bytes;
    uint8_t *arena;
    uint64_t len, cap;
    Segment *segs;
    size_t nsegs, capsegs;
    /* spilling (see Spill): a table with a limit spills to disk rather than grow past it */
    uint64_t limit;    /* bytes of slots and arena it may hold (0: no limit) */
    uint64_t seq_base; /* records it spilled before: a record's number is seq_base + its rank in the arena */
    Spill *spill;
} Table;

static inline uint64_t load_count(const uint8_t *record) {
    uint64_t c;
    memcpy(&c, record, 8);
    return c;
}
static inline void store_count(uint8_t *record, uint64_t c) { memcpy(record, &c, 8); }

/* The bytes of a record and their length. */
static inline const uint8_t *record_chunk(const uint8_t *record, uint64_t *len) {
    const uint8_t *q = record + 8;
    uint64_t v = 0;
    int shift = 0;
    while (*q & 0x80) {
        v |= (uint64_t)(*q++ & 0x7F) << shift;
        shift += 7;
    }
    *len = v | (uint64_t)*q++ << shift;
    return q;
}

/* An empty table (small when its limit is small: tests spill after a few records). */
static int table_init_limited(Table *t, uint64_t limit, Spill *spill) {
    memset(t, 0, sizeof *t);
    int small = limit && limit < (UINT64_C(1) << 24);
    t->bits = small ? 6 : 16;
    t->mask = ((uint64_t)1 << t->bits) - 1;
    t->slots = calloc(t->mask + 1, sizeof(uint64_t));
    t->cap = small ? 1 << 10 : 1 << 20;
    t->arena = malloc(t->cap);
    t->limit = limit;
    t->spill = spill;
    if (!t->slots || !t->arena) return -1;
    return 0;
}

static int table_init(Table *t) { return table_init_limited(t, 0, NULL); }

static void table_free(Table *t) {
    free(t->slots);
    free(t->arena);
    free(t->segs);
    memset(t, 0, sizeof *t);
}

static inline uint64_t home_slot(const Table *t, uint64_t h) { return h >> (64 - t->bits); }

/* The slot of chunk p[0:n] with hash h: its record's slot, or the empty slot where it goes. */
static inline uint64_t *table_slot(const Table *t, const uint8_t *p, uint64_t n, uint64_t h) {
    uint64_t tag = h >> TAG_SHIFT, i = home_slot(t, h);
    for (;; i = (i + 1) & t->mask) {
        uint64_t s = t->slots[i];
        if (!s) return &t->slots[i];
        if (s >> TAG_SHIFT == tag) {
            uint64_t len;
            const uint8_t *q = record_chunk(t->arena + (s & OFFSET_MASK) - 1, &len);
            if (len == n && memcmp(q, p, n) == 0) return &t->slots[i];
        }
    }
}

/* Twice the slots of an open-addressing table over arena[0:len), whose records are `head` bytes
 * and then a count and its chunk (record_chunk's layout). A slot's tag is the top bits of its
 * chunk's hash, where its first slot comes from: up to 2**TAG_BITS slots, the slots are read in
 * order and written nearly in order (first slots keep their order); past that, every record is
 * hashed again, walking the arena. */
static int slots_grow(uint64_t **slots_io, uint64_t *mask_io, int *bits_io, const uint8_t *arena, uint64_t len,
                      uint64_t head) {
    int bits = *bits_io + 1;
    uint64_t old_mask = *mask_io, mask = old_mask * 2 + 1, *old = *slots_io;
    uint64_t *slots = calloc(mask + 1, sizeof(uint64_t));
    if (!slots) return -1;
    if (bits <= TAG_BITS) {
        for (uint64_t j = 0; j <= old_mask; j++) {
            uint64_t s = old[j];
            if (!s) continue;
            uint64_t i = (s >> TAG_SHIFT) >> (TAG_BITS - bits);
            while (slots[i]) i = (i + 1) & mask;
            slots[i] = s;
        }
    } else {
        for (uint64_t off = 0; off < len;) {
            uint64_t n;
            const uint8_t *q = record_chunk(arena + off + head, &n);
            uint64_t h = hash_bytes(q, n), i = h >> (64 - bits);
            while (slots[i]) i = (i + 1) & mask;
            slots[i] = (h >> TAG_SHIFT) << TAG_SHIFT | (off + 1);
            off = (uint64_t)(q - arena) + n;
        }
    }
    free(old);
    *slots_io = slots;
    *mask_io = mask;
    *bits_io = bits;
    return 0;
}

static int table_grow(Table *t) { return slots_grow(&t->slots, &t->mask, &t->bits, t->arena, t->len, 0); }

#define TABLE_FULL UINT64_MAX /* table_add: the table must spill first (its limit) */

/* Count one occurrence of chunk p[0:n] (hash h): the offset + 1 of its record, 0 when out of
 * memory, or TABLE_FULL when a new record would make it grow past its limit (it then holds at
 * least one record; the slots' growth counts three times their size: old and new side by side). */
static uint64_t table_add(Table *t, const uint8_t *p, uint64_t n, uint64_t h) {
    uint64_t *slot = table_slot(t, p, n, h);
    if (*slot) {
        uint8_t *record = t->arena + (*slot & OFFSET_MASK) - 1;
        store_count(record, load_count(record) + 1);
        return *slot & OFFSET_MASK;
    }
    uint64_t need = t->len + 8 + 10 + n, cap = t->cap;
    int grow_slots = (t->records + 1) * 10 > (t->mask + 1) * 7;
    while (cap < need) cap *= 2;
    if (t->limit && t->records && cap + (t->mask + 1) * 8 * (grow_slots ? 3 : 1) > t->limit) return TABLE_FULL;
    if (need > OFFSET_MASK - 1) return 0;
    if (cap > t->cap) {
        uint8_t *arena = realloc(t->arena, cap);
        if (!arena) return 0;
        t->arena = arena;
        t->cap = cap;
    }
    uint64_t at = t->len;
    uint8_t *record = t->arena + at;
    store_count(record, 1);
    uint8_t *q = record + 8;
    uint64_t v = n;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    memcpy(q, p, n);
    *slot = (h >> TAG_SHIFT) << TAG_SHIFT | (at + 1);
    t->len = (uint64_t)(q - t->arena) + n;
    t->records++;
    t->chunk_bytes += n;
    if (grow_slots && table_grow(t) < 0) return 0;
    return at + 1;
}

/* A thread's front cache: the chunks of up to FRONT_MAX bytes it met last, direct-mapped by their
 * bytes, each with the occurrences not yet added to its record. Most occurrences are of a few
 * frequent chunks: a hit costs no hash loop and touches neither the slots nor the arena, where
 * each would be a cache miss in a table of hundreds of thousands of chunks. A chunk enters the
 * table (its record, in order of first appearance) when it enters the cache; the count it
 * gathered there is added to its record when it leaves (see front_flush). */
#define FRONT_BITS 14
#define FRONT_MAX 16

typedef struct {
    uint64_t w0, w1; /* the bytes, zero-padded */
    uint64_t record; /* offset + 1 of its record, 0: empty */
    uint32_t len, pending;
} Front;

static inline void front_flush(Table *t, Front *e) {
    if (e->pending) {
        uint8_t *record = t->arena + e->record - 1;
        store_count(record, load_count(record) + e->pending);
        e->pending = 0;
    }
}

static void front_flush_all(Table *t, Front *front) {
    for (size_t i = 0; i < (size_t)1 << FRONT_BITS; i++) front_flush(t, &front[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* Spilling: counts larger than memory (native_counting.py's max_memory)                       */

/* With a spill folder (Counter.spill_to), a thread's table that would grow past its limit writes
 * its records to a run file and starts again empty, and after each call all the tables do so when
 * together they hold more than the counter's limit. A run file holds one table's records in
 * SPILL_PARTS sections by the low bits of their chunk's hash, each record the varints [unit]
 * [number][count][length] and the bytes: the unit of its segment, and its number in the table
 * (seq_base + its rank in the arena), which orders the records of one unit, a unit being counted
 * into one table, across that table's spills. At the end (merge_spills), each partition of all the
 * runs is merged alone within the limit (one too large is split again by the next bits of the
 * hash) into a file of its distinct chunks, each with its summed count and its smallest (unit,
 * number), sorted by that key; write_spilled merges these files by key into the counts file's
 * three sections. A chunk's smallest key is its first record in the unit where it first appears,
 * so the order is the order of first appearance, as merge_tables gives it in memory. */
#define SPILL_BITS 8
#define SPILL_PARTS (1 << SPILL_BITS)
#define SPILL_MAGIC "HFBBPERN" /* a run file: the magic, SPILL_PARTS + 1 section offsets (u64), the sections */
#define SPILL_HEAD (8 + 8 * (SPILL_PARTS + 1))
#define SPILL_BUF (1 << 14)    /* bytes of a section kept before they are written */
#define RECORD_HEAD 40         /* room for a record's four varints */

struct Spill {
    char *dir;
    uint64_t limit;        /* bytes the tables may hold together; a partition's merge gets limit / threads */
    int64_t runs, splits;  /* run files written (run-N), partitions split again (split-N) */
    int64_t parts;         /* sorted partition files written (part-N) */
    uint64_t chunks, symbols; /* after merge_spills: the distinct chunks and their bytes */
    int error;             /* errno of the first failure, or 0 */
};

static void spill_fail(Spill *s, int err) {
#if HAVE_THREADS
    int none = 0;
    __atomic_compare_exchange_n(&s->error, &none, err ? err : EIO, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#else
    if (!s->error) s->error = err ? err : EIO;
#endif
}

static inline uint8_t *put_varint(uint8_t *q, uint64_t v) {
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    return q;
}

/* A varint at *p (below end): *p moves past it; -1 when it runs past end or past 64 bits. */
static inline int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* One spilled record, parsed: its key, count and bytes. */
typedef struct {
    uint64_t unit, number, count, len;
    const uint8_t *chunk;
} SpillRecord;

/* The record at *p (below end): *p moves past it; -1 when it is cut (or not a record). */
static inline int get_record(const uint8_t **p, const uint8_t *end, SpillRecord *r) {
    if (get_varint(p, end, &r->unit) < 0 || get_varint(p, end, &r->number) < 0 || get_varint(p, end, &r->count) < 0 ||
        get_varint(p, end, &r->len) < 0 || r->len > (uint64_t)(end - *p))
        return -1;
    r->chunk = *p;
    *p += r->len;
    return 0;
}

static inline int key_before(uint64_t unit_a, uint64_t number_a, uint64_t unit_b, uint64_t number_b) {
    return unit_a < unit_b || (unit_a == unit_b && number_a < number_b);
}

#if HAVE_THREADS
static int write_at(int fd, const uint8_t *p, uint64_t n, uint64_t at) {
    while (n) {
        ssize_t w = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (uint64_t)w;
        at += (uint64_t)w;
    }
    return 0;
}

/* A run file being written: a buffer per section, each written at its running offset. */
typedef struct {
    int fd;
    uint64_t at[SPILL_PARTS];
    uint32_t used[SPILL_PARTS];
    uint8_t *buf;
} RunWriter;

static int run_put(RunWriter *w, int part, const uint8_t *p, uint64_t n) {
    uint8_t *b = w->buf + (size_t)part * SPILL_BUF;
    if (w->used[part] + n > SPILL_BUF) {
        if (write_at(w->fd, b, w->used[part], w->at[part]) < 0) return -1;
        w->at[part] += w->used[part];
        w->used[part] = 0;
        if (n > SPILL_BUF) {
            if (write_at(w->fd, p, n, w->at[part]) < 0) return -1;
            w->at[part] += n;
            return 0;
        }
    }
    memcpy(b + w->used[part], p, n);
    w->used[part] += (uint32_t)n;
    return 0;
}

static int run_record(RunWriter *w, int part, const SpillRecord *r) {
    uint8_t head[RECORD_HEAD], *e = put_varint(put_varint(put_varint(put_varint(head, r->unit), r->number), r->count), r->len);
    return run_put(w, part, head, (uint64_t)(e - head)) < 0 || run_put(w, part, r->chunk, r->len) < 0 ? -1 : 0;
}

static inline uint64_t record_size(const SpillRecord *r) {
    uint8_t head[RECORD_HEAD];
    return (uint64_t)(put_varint(put_varint(put_varint(put_varint(head, r->unit), r->number), r->count), r->len) - head) + r->len;
}

static void spill_path(char *out, size_t room, const Spill *s, const char *kind, int64_t number) {
    snprintf(out, room, "%s/%s-%08lld", s->dir, kind, (long long)number);
}

/* Open run file kind-number for sections of sizes[part] bytes. -1 (errno set) when that fails. */
static int run_open(RunWriter *w, const Spill *s, const char *kind, int64_t number, const uint64_t *sizes) {
    char path[4096];
    spill_path(path, sizeof path, s, kind, number);
    memset(w, 0, sizeof *w);
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (w->fd < 0) return -1;
    uint8_t head[SPILL_HEAD];
    memcpy(head, SPILL_MAGIC, 8);
    uint64_t at = SPILL_HEAD;
    for (int p = 0; p <= SPILL_PARTS; p++) {
        memcpy(head + 8 + 8 * p, &at, 8);
        if (p < SPILL_PARTS) {
            w->at[p] = at;
            at += sizes[p];
        }
    }
    w->buf = malloc((size_t)SPILL_PARTS * SPILL_BUF);
    if (!w->buf) {
        errno = ENOMEM;
        close(w->fd);
        return -1;
    }
    if (write_at(w->fd, head, SPILL_HEAD, 0) < 0) {
        free(w->buf);
        close(w->fd);
        return -1;
    }
    return 0;
}

static int run_close(RunWriter *w) {
    int failed = 0;
    for (int p = 0; p < SPILL_PARTS && !failed; p++)
        failed = w->used[p] && write_at(w->fd, w->buf + (size_t)p * SPILL_BUF, w->used[p], w->at[p]) < 0;
    int err = errno;
    free(w->buf);
    if (close(w->fd) < 0 && !failed) failed = 1, err = errno;
    errno = err;
    return failed ? -1 : 0;
}

/* A table's records (those with a count) into a new run file, in two passes: sizes, then bytes. */
static int table_write_run(Table *t) {
    Spill *s = t->spill;
    uint64_t sizes[SPILL_PARTS] = {0};
    RunWriter w;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t number = t->seq_base;
        for (size_t g = 0; g < t->nsegs; g++) {
            uint64_t off = t->segs[g].arena_offset, end = g + 1 < t->nsegs ? t->segs[g + 1].arena_offset : t->len;
            while (off < end) {
                uint8_t *record = t->arena + off;
                SpillRecord r = {(uint64_t)t->segs[g].unit, number++, load_count(record), 0, NULL};
                r.chunk = record_chunk(record, &r.len);
                off = (uint64_t)(r.chunk - t->arena) + r.len;
                if (!r.count) continue;
                int part = (int)(hash_bytes(r.chunk, r.len) & (SPILL_PARTS - 1));
                if (pass == 0) sizes[part] += record_size(&r);
                else if (run_record(&w, part, &r) < 0) {
                    int err = errno;
                    run_close(&w);
                    spill_fail(s, err);
                    return -1;
                }
            }
        }
        if (pass == 0 && run_open(&w, s, "run", ATOMIC_NEXT(&s->runs), sizes) < 0) {
            spill_fail(s, errno);
            return -1;
        }
    }
    if (run_close(&w) < 0) {
        spill_fail(s, errno);
        return -1;
    }
    return 0;
}
#else
static int table_write_run(Table *t) {
    spill_fail(t->spill, ENOSYS);
    return -1;
}
#endif

/* Write the table's records to disk and empty it; it goes on with the unit it was counting (a
 * front cache that points into it is emptied first). -1 when that fails (see Spill.error). */
static int table_spill(Table *t, Front *front) {
    if (front) {
        front_flush_all(t, front);
        memset(front, 0, sizeof(Front) << FRONT_BITS);
    }
    if (!t->records) return 0;
    if (table_write_run(t) < 0) return -1;
    Segment *segs = t->segs;
    size_t capsegs = t->capsegs;
    int64_t unit = t->nsegs ? segs[t->nsegs - 1].unit : 0;
    uint64_t seq = t->seq_base + t->records, limit = t->limit;
    Spill *spill = t->spill;
    free(t->slots);
    free(t->arena);
    int status = table_init_limited(t, limit, spill);
    t->segs = segs;
    t->capsegs = capsegs;
    t->nsegs = segs ? 1 : 0;
    if (segs) segs[0] = (Segment){0, unit};
    t->seq_base = seq;
    if (status < 0) spill_fail(spill, ENOMEM);
    return status;
}

/* The front-cache key of chunk p[0:n] (n <= FRONT_MAX): its bytes zero-padded in *w0, *w1, and
 * its entry. p[0:16] may be read when p + 16 <= readable. */
static inline uint64_t front_key(const uint8_t *p, uint64_t n, const uint8_t *readable, uint64_t *w0, uint64_t *w1) {
    /* (the masks keep the chunk's n bytes of the two words: the first 8, then the rest) */
#define LOW_MASK(n) ((n) >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * (n))) - 1)
#define HIGH_MASK(n) ((n) <= 8 ? 0 : (n) >= 16 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * ((n) - 8))) - 1)
    static const uint64_t low[FRONT_MAX + 1] = {LOW_MASK(0), LOW_MASK(1), LOW_MASK(2), LOW_MASK(3), LOW_MASK(4),
        LOW_MASK(5), LOW_MASK(6), LOW_MASK(7), LOW_MASK(8), LOW_MASK(9), LOW_MASK(10), LOW_MASK(11), LOW_MASK(12),
        LOW_MASK(13), LOW_MASK(14), LOW_MASK(15), LOW_MASK(16)};
    static const uint64_t high[FRONT_MAX + 1] = {HIGH_MASK(0), HIGH_MASK(1), HIGH_MASK(2), HIGH_MASK(3),
        HIGH_MASK(4), HIGH_MASK(5), HIGH_MASK(6), HIGH_MASK(7), HIGH_MASK(8), HIGH_MASK(9), HIGH_MASK(10),
        HIGH_MASK(11), HIGH_MASK(12), HIGH_MASK(13), HIGH_MASK(14), HIGH_MASK(15), HIGH_MASK(16)};
    if (p + 16 <= readable) {
        memcpy(w0, p, 8);
        memcpy(w1, p + 8, 8);
        *w0 &= low[n];
        *w1 &= high[n];
    } else {
        uint8_t b[16] = {0};
        memcpy(b, p, n);
        memcpy(w0, b, 8);
        memcpy(w1, b + 8, 8);
    }
    return ((*w0 ^ (*w1 * UINT64_C(0x9E3779B97F4A7C15)) ^ n) * UINT64_C(0xD6E8FEB86659FD93)) >> (64 - FRONT_BITS);
}

static inline int front_hit(Table *t, Front *e, uint64_t w0, uint64_t w1, uint64_t n) {
    if ((e->w0 ^ w0) | (e->w1 ^ w1) | (e->len ^ n)) return 0; /* (an empty entry has length 0) */
    if (++e->pending == UINT32_MAX) front_flush(t, e);
    return 1;
}

/* A chunk on its way through counting (see count_chunks): where it is, its front-cache key and
 * entry, its hash. */
typedef struct {
    const uint8_t *at;
    uint64_t len, w0, w1, h, key;
} Pending;

/* What a thread counts into: its table, its front cache, the chunks met since the last batch, and
 * those of the last two batches that missed the front cache (see tally_batch); they all still
 * point into their text. */
typedef struct {
    Table *table;
    Front *front;
    Pending fresh[SCAN_BATCH]; /* of any documents, their front entries prefetched */
    int nfresh;
    Pending waiting[2][SCAN_BATCH]; /* [older]: its records prefetched; [!older]: its slots prefetched */
    int nwaiting[2], older;
} Tally;

/* The table's part of counting: each waiting chunk of the older batch in order (the front cache
 * first, as an earlier one may have brought it there), then the newer batch's records
 * prefetched (its slots were), and it becomes the older. -1 when out of memory. */
static int tally_step(Tally *y) {
    Table *t = y->table;
    Pending *old = y->waiting[y->older];
    for (int m = 0; m < y->nwaiting[y->older]; m++) {
        uint64_t n = old[m].len;
        Front *e = &y->front[old[m].key];
        if (n <= FRONT_MAX && front_hit(t, e, old[m].w0, old[m].w1, n)) continue;
        uint64_t record = table_add(t, old[m].at, n, old[m].h);
        if (record == TABLE_FULL) { /* (its limit: to disk, then into the emptied table) */
            if (table_spill(t, y->front) < 0) return -1;
            e = &y->front[old[m].key];
            record = table_add(t, old[m].at, n, old[m].h);
        }
        if (!record || record == TABLE_FULL) return -1;
        if (n <= FRONT_MAX) {
            if (e->record) front_flush(t, e);
            *e = (Front){old[m].w0, old[m].w1, record, (uint32_t)n, 0};
        }
    }
    y->nwaiting[y->older] = 0;
    y->older ^= 1;
    Pending *next = y->waiting[y->older];
    for (int m = 0; m < y->nwaiting[y->older]; m++) {
        uint64_t s = t->slots[home_slot(t, next[m].h)];
        if (s >> TAG_SHIFT == next[m].h >> TAG_SHIFT) /* the record of the first slot, if it may be the chunk's */
            PREFETCH(t->arena + (s & OFFSET_MASK) - 1);
        const Front *e = &y->front[next[m].key];
        if (next[m].len <= FRONT_MAX && e->pending) /* the record its front entry's count will go to */
            PREFETCH(t->arena + e->record - 1);
    }
    return 0;
}

/* The fresh chunks (see count_chunks) in order: front-cache hits are counted there; the others
 * wait for the table while two more batches go by (their slots prefetched now, their records at
 * the next batch; see tally_step), which keeps their order. -1 when out of memory. */
static int tally_batch(Tally *y) {
    if (tally_step(y) < 0) return -1; /* (the older batch to the table, making room) */
    Table *t = y->table;
    Pending *miss = y->waiting[y->older ^ 1];
    int nmiss = 0;
    for (int c = 0; c < y->nfresh; c++) {
        const Pending *f = &y->fresh[c];
        if (f->len <= FRONT_MAX && front_hit(t, &y->front[f->key], f->w0, f->w1, f->len)) continue;
        Pending *m = &miss[nmiss++];
        *m = *f;
        m->h = hash_bytes(m->at, m->len);
        PREFETCH(&t->slots[home_slot(t, m->h)]);
    }
    y->nwaiting[y->older ^ 1] = nmiss;
    y->nfresh = 0;
    return 0;
}

/* Every chunk met so far into the table: before the text they point into goes, and before a new
 * unit (whose records must follow this one's). */
static int tally_drain(Tally *y) {
    return tally_batch(y) < 0 || tally_step(y) < 0 || tally_step(y) < 0 ? -1 : 0;
}

/* Count the chunks p[start:ends[0]], p[ends[0]:ends[1]], ... (from the scanner), in passes over
 * batches of chunks (of any documents) so that the memory loads of many chunks overlap instead of
 * waiting one for another: a chunk's front-cache entry is prefetched here, looked up when its batch
 * is full (tally_batch). The chunks keep pointing into their text until they are drained. -1 when
 * out of memory. */
static int count_chunks(Tally *y, const uint8_t *p, Py_ssize_t start, const Py_ssize_t *ends, Py_ssize_t k,
                        const uint8_t *readable) {
    for (Py_ssize_t c = 0; c < k; start = ends[c++]) {
        uint64_t n = (uint64_t)(ends[c] - start), w0 = 0, w1 = 0, key = 0;
        if (n <= FRONT_MAX) {
            key = front_key(p + start, n, readable, &w0, &w1);
            PREFETCH(&y->front[key]);
        }
        y->fresh[y->nfresh++] = (Pending){p + start, n, w0, w1, 0, key};
        if (y->nfresh == SCAN_BATCH && tally_batch(y) < 0) return -1;
    }
    return 0;
}

/* The records from here on belong to unit u. */
static int table_segment(Table *t, int64_t u) {
    if (t->nsegs && t->segs[t->nsegs - 1].arena_offset == t->len) { /* the last unit added nothing */
        t->segs[t->nsegs - 1].unit = u;
        return 0;
    }
    if (t->nsegs == t->capsegs) {
        size_t cap = t->capsegs ? t->capsegs * 2 : 64;
        Segment *segs = realloc(t->segs, cap * sizeof(Segment));
        if (!segs) return -1;
        t->segs = segs;
        t->capsegs = cap;
    }
    t->segs[t->nsegs++] = (Segment){t->len, u};
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* UTF-8 and JSON                                                                              */

/* The offset of the first byte of s[0:n] that is not part of valid UTF-8 (what Python's strict
 * decoder rejects: overlong forms, surrogates, code points past U+10FFFF, cut characters), or -1. */
static Py_ssize_t utf8_invalid_at(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        while (i + 16 <= n) {
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            if ((a | b) & UINT64_C(0x8080808080808080)) break;
            i += 16;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c < 0xC2 || c > 0xF4) return i;
        int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + len > n) return i;
        uint8_t c1 = s[i + 1];
        if ((c1 & 0xC0) != 0x80) return i;
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
            return i;
        for (int k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return -1;
}

#if HAVE_THREADS /* (.jsonl files are read by run_file only) */
/* What went wrong with a line of a .jsonl file (besides invalid UTF-8). */
enum { JSON_OK, JSON_BAD, JSON_NO_FIELD, JSON_NOT_STRING, JSON_SURROGATE, JSON_TOO_DEEP };
#define JSON_MAX_DEPTH 1000

typedef struct {
    const uint8_t *p, *end, *start;
    int error;
    const char *what; /* for JSON_BAD: what is wrong; JSON_NOT_STRING, JSON_NO_FIELD: the value's type */
    char names[96];   /* for JSON_NO_FIELD: the object's field names, as written, quoted */
} JsonScan;

/* Note a field name (for the error when the wanted one is missing): 'name', ... cut before 80 bytes. */
static void json_note_name(JsonScan *j, const uint8_t *name, size_t n) {
    size_t used = strlen(j->names);
    if (used && j->names[used - 1] == '.') return; /* cut already */
    if (used + (used ? 2 : 0) + n + 2 >= 80) {
        strcpy(j->names + used, used ? ", ..." : "...");
        return;
    }
    snprintf(j->names + used, sizeof j->names - used, "%s'%.*s'", used ? ", " : "", (int)n, (const char *)name);
}

static inline int json_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static inline void json_skip_ws(JsonScan *j) {
    while (j->p < j->end && json_ws(*j->p)) j->p++;
}
static inline int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
}
static int json_fail(JsonScan *j, const char *what) {
    j->error = JSON_BAD;
    j->what = what;
    return -1;
}

/* The string at j->p (its opening quote): checked and skipped; *escaped says whether it holds a
 * backslash (it must then be decoded). */
static int json_string(JsonScan *j, const uint8_t **body, const uint8_t **body_end, int *escaped) {
    j->p++;
    *body = j->p;
    *escaped = 0;
    while (j->p < j->end) {
        uint8_t c = *j->p;
        if (c == '"') {
            *body_end = j->p++;
            return 0;
        }
        if (c < 0x20) return json_fail(j, "a raw control character in a string");
        if (c == '\\') {
            *escaped = 1;
            if (j->p + 1 >= j->end) break;
            uint8_t e = j->p[1];
            if (e == 'u') {
                if (j->p + 6 > j->end) return json_fail(j, "expected 4 hex digits after \\u");
                for (int k = 2; k < 6; k++)
                    if (hex_value(j->p[k]) < 0) return json_fail(j, "expected 4 hex digits after \\u");
                j->p += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || !e) return json_fail(j, "expected a valid escape");
            j->p += 2;
            continue;
        }
        j->p++;
    }
    return json_fail(j, "expected the string's closing quote");
}

/* Decode a string body with escapes into out (room: its length); lone surrogates become their
 * 3-byte form (never valid UTF-8) and set *lone. Returns the decoded length. */
static size_t json_decode(const uint8_t *p, const uint8_t *end, uint8_t *out, int *lone) {
    uint8_t *o = out;
    *lone = 0;
    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        uint8_t e = p[1];
        p += 2;
        switch (e) {
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default: *o++ = e; continue; /* " \ / */
        }
        uint32_t u = 0;
        for (int k = 0; k < 4; k++) u = u << 4 | (uint32_t)hex_value(p[k]);
        p += 4;
        if (u >= 0xD800 && u < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            uint32_t v = 0;
            for (int k = 2; k < 6; k++) v = v << 4 | (uint32_t)hex_value(p[k]);
            if (v >= 0xDC00 && v < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00);
                p += 6;
            }
        }
        if (u >= 0xD800 && u < 0xE000) *lone = 1;
        if (u < 0x80) {
            *o++ = (uint8_t)u;
        } else if (u < 0x800) {
            *o++ = (uint8_t)(0xC0 | u >> 6);
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        } else if (u < 0x10000) {
            *o++ = (uint8_t)(0xE0 | u >> 12);
            *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        } else {
            *o++ = (uint8_t)(0xF0 | u >> 18);
            *o++ = (uint8_t)(0x80 | (u >> 12 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        }
    }
    return (size_t)(o - out);
}

static int json_literal(JsonScan *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) return json_fail(j, "expected a JSON value");
    j->p += n;
    return 0;
}

/* A number as Python's json reads it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, or -Infinity. */
static int json_number(JsonScan *j) {
    if (*j->p == '-') {
        j->p++;
        if (j->p < j->end && *j->p == 'I') return json_literal(j, "Infinity");
    }
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return json_fail(j, "expected a JSON value");
    if (*j->p++ != '0')
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p + 1 < j->end && *j->p == '.' && j->p[1] >= '0' && j->p[1] <= '9') {
        j->p += 2;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p | 0x20) == 'e') {
        const uint8_t *q = j->p + 1;
        if (q < j->end && (*q == '+' || *q == '-')) q++;
        if (q < j->end && *q >= '0' && *q <= '9') {
            while (q < j->end && *q >= '0' && *q <= '9') q++;
            j->p = q;
        }
    }
    return 0;
}

/* Skip (and check) the value at j->p; its JSON type name in *type. */
static int json_value(JsonScan *j, int depth, const char **type) {
    json_skip_ws(j);
    if (j->p >= j->end) return json_fail(j, "expected a JSON value");
    uint8_t c = *j->p;
    const uint8_t *b, *e;
    int escaped;
    if (c == '"') {
        *type = "string";
        return json_string(j, &b, &e, &escaped);
    }
    if (c == '{' || c == '[') {
        *type = c == '{' ? "object" : "array";
        if (depth >= JSON_MAX_DEPTH) {
            j->error = JSON_TOO_DEEP;
            return -1;
        }
        uint8_t close = c == '{' ? '}' : ']';
        j->p++;
        json_skip_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            const char *inner;
            if (c == '{') {
                json_skip_ws(j);
                if (j->p >= j->end || *j->p != '"') return json_fail(j, "expected a property name in double quotes");
                if (json_string(j, &b, &e, &escaped) < 0) return -1;
                json_skip_ws(j);
                if (j->p >= j->end || *j->p != ':') return json_fail(j, "expected ':' after a property name");
                j->p++;
            }
            if (json_value(j, depth + 1, &inner) < 0) return -1;
            json_skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return 0;
            }
            return json_fail(j, c == '{' ? "',' or '}'" : "',' or ']'");
        }
    }
    if (c == 't') { *type = "boolean"; return json_literal(j, "true"); }
    if (c == 'f') { *type = "boolean"; return json_literal(j, "false"); }
    if (c == 'n') { *type = "null"; return json_literal(j, "null"); }
    if (c == 'N') { *type = "number"; return json_literal(j, "NaN"); }
    if (c == 'I') { *type = "number"; return json_literal(j, "Infinity"); }
    if (c == '-' || (c >= '0' && c <= '9')) { *type = "number"; return json_number(j); }
    return json_fail(j, "expected a JSON value");
}

/* The text of field (field[0:nfield], UTF-8) of the JSON object on line[0:n]: *text and *len
 * point into the line, or into scratch (room: n) when it had escapes. Duplicate names: the last
 * one counts, as in Python's json. Returns JSON_OK or an error (details in j). */
static int json_field(JsonScan *j, const uint8_t *line, size_t n, const uint8_t *field, size_t nfield,
                      uint8_t *scratch, const uint8_t **text, size_t *len) {
    j->p = j->start = line;
    j->end = line + n;
    j->error = JSON_OK;
    j->what = NULL;
    j->names[0] = 0;
    json_skip_ws(j);
    if (j->p >= j->end || *j->p != '{') {
        const char *type = "value";
        if (json_value(j, 0, &type) < 0) return j->error;
        json_skip_ws(j);
        if (j->p < j->end) return json_fail(j, "expected the end of the line"), JSON_BAD;
        j->what = type;
        return j->error = JSON_NO_FIELD;
    }
    j->p++;
    const uint8_t *vb = NULL, *ve = NULL;
    int vescaped = 0;
    const char *vtype = NULL;
    json_skip_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
    } else {
        for (;;) {
            const uint8_t *kb, *ke;
            int kescaped;
            json_skip_ws(j);
            if (j->p >= j->end || *j->p != '"') return json_fail(j, "expected a property name in double quotes"), JSON_BAD;
            if (json_string(j, &kb, &ke, &kescaped) < 0) return j->error;
            int match;
            if (kescaped) {
                int lone;
                size_t klen = json_decode(kb, ke, scratch, &lone);
                match = klen == nfield && memcmp(scratch, field, nfield) == 0;
            } else {
                match = (size_t)(ke - kb) == nfield && memcmp(kb, field, nfield) == 0;
            }
            if (!match) json_note_name(j, kb, (size_t)(ke - kb));
            json_skip_ws(j);
            if (j->p >= j->end || *j->p != ':') return json_fail(j, "expected ':' after a property name"), JSON_BAD;
            j->p++;
            json_skip_ws(j);
            const uint8_t *value = j->p;
            const char *type;
            if (json_value(j, 1, &type) < 0) return j->error;
            if (match) {
                vtype = type;
                vb = value + 1;
                ve = j->p - 1;
            }
            json_skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == '}') {
                j->p++;
                break;
            }
            return json_fail(j, "expected ',' or '}'"), JSON_BAD;
        }
    }
    json_skip_ws(j);
    if (j->p < j->end) return json_fail(j, "expected the end of the line"), JSON_BAD;
    if (!vtype) {
        j->what = "object";
        return j->error = JSON_NO_FIELD;
    }
    if (strcmp(vtype, "string") != 0) {
        j->what = vtype;
        return j->error = JSON_NOT_STRING;
    }
    vescaped = memchr(vb, '\\', (size_t)(ve - vb)) != NULL;
    if (!vescaped) {
        *text = vb;
        *len = (size_t)(ve - vb);
        return JSON_OK;
    }
    int lone;
    *len = json_decode(vb, ve, scratch, &lone);
    *text = scratch;
    if (lone) return j->error = JSON_SURROGATE;
    return JSON_OK;
}

#endif

/* ------------------------------------------------------------------------------------------ */
/* Work: units and the threads that take them                                                  */

enum { JOB_TEXTS, JOB_ARROW, JOB_FILES };
enum { FILE_TEXT, FILE_JSONL, FILE_PARAGRAPHS, FILE_WHOLE }; /* (count_files' formats, as native_counting.py numbers them) */
enum { ERR_NONE, ERR_MEMORY, ERR_UTF8, ERR_JSON, ERR_NULL, ERR_IO, ERR_TOO_LONG, ERR_CHANGED };

typedef struct {
    char *path;
    int format;
    int64_t size; /* when the call began: a file read short of it, or of another size at the end, changed */
    struct timespec mtime;
} FileInput;

typedef struct {
    int file;
    int64_t start, end; /* owns the lines that start in [start, end) */
} FileUnit;

typedef struct {
    int kind;      /* ERR_ */
    int64_t unit;  /* where: the unit ... */
    int64_t where; /* ... and a byte offset in the file, or a row */
    int64_t line_start;
    int json_error;
    char detail[160];
    int io_errno;
} InputError;

typedef struct Counter Counter;

/* A long document is cut into parts for the threads (see count_texts). The scanner's chunk at a
 * position depends only on the text from there on (no pattern it knows looks behind), so two
 * chunkings of the same text that share one boundary share every boundary after it. Part k > 0
 * starts at an arbitrary character; its first SYNC_MARKS chunk boundaries (marks), found
 * beforehand, are where part k - 1 may hand over to it: part k - 1 goes on past its end until one
 * of its boundaries is one of part k's marks (met), and part k counts from its last mark on, into
 * a table of its own. The chunks between the mark met and the last mark are then counted into the
 * seam table, in order between the two parts. The first part starts at a true boundary (0), hence
 * every part it hands over to. A part that meets no mark runs to the end of the document, and the
 * parts after it are dropped (their tables emptied). */
#define SYNC_MARKS 64

typedef struct {
    Py_ssize_t doc, start, end;
    Py_ssize_t marks[SYNC_MARKS];
    int nmarks;
    int table; /* its own table (an index in the counter's tables), or -1: the first part, the thread's */
    int met;   /* the next part's mark where this part stopped, or -1: it ran to the end of the document */
    int has_next;
} Part;

typedef struct {
    int kind; /* JOB_ */
    Counter *counter;
    int64_t nunits, next_unit, unit_base;
    int64_t stop_after; /* units after this one are not started (an error was met) */
    /* JOB_TEXTS: document d is docs[d][0:lens[d]]; unit u is documents first[u] .. first[u + 1], or
     * (part[u] >= 0) the part parts[part[u]] of a long document */
    const uint8_t **docs;
    Py_ssize_t *lens;
    Py_ssize_t *first;
    Py_ssize_t *part;
    Part *parts;
    /* JOB_ARROW: row r is data[offsets[r] : offsets[r + 1]] (int32 or int64 offsets) */
    const uint8_t *data;
    Py_ssize_t data_len;
    const void *offsets;
    int offsets64;
    const uint8_t *validity; /* NULL: no nulls */
    int64_t validity_offset, row_base;
    /* JOB_FILES */
    FileInput *files;
    FileUnit *units;
    const uint8_t *field;
    size_t nfield;
    /* progress and the first error */
    int64_t bytes_done;
    int64_t documents;
#if HAVE_THREADS
    pthread_mutex_t lock;
    pthread_cond_t done;
#endif
    int running;
    InputError error;
} Job;

struct Counter {
    PyObject_HEAD
    const PretokScanner *scanner;
    PyObject *capsule;
    int nthreads;
    Table *tables; /* the threads' (nthreads), then the long documents' parts' and the seam table */
    int ntables, seam; /* seam: the seam table's index, or -1 */
    int64_t next_unit; /* units of earlier calls */
    int64_t bytes, documents;
    int broken; /* a call failed: the counts are partial */
    Spill *spill; /* NULL: the counts stay in memory (see Spill) */
    int merged;   /* merge_spills() was called: the tables are gone */
};

typedef struct {
    Job *job;
    Tally tally;
    uint8_t *buf, *scratch;
    size_t bufcap, scratchcap;
    int fd, fd_file;
} Worker;

static int ensure(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need) c *= 2;
    uint8_t *b = realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

/* Note the first error in input order (unit, then position); later units are not started. */
static void job_error_at(Job *job, const InputError *found) {
#if HAVE_THREADS
    pthread_mutex_lock(&job->lock);
#endif
    InputError *e = &job->error;
    if (e->kind == ERR_NONE || found->unit < e->unit || (found->unit == e->unit && found->where < e->where)) {
        *e = *found;
        if (found->unit < job->stop_after) ATOMIC_SET(&job->stop_after, found->unit);
    }
#if HAVE_THREADS
    pthread_mutex_unlock(&job->lock);
#endif
}

static void job_error(Job *job, int64_t unit, int kind, int64_t where) {
    InputError e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.unit = unit;
    e.where = where;
    job_error_at(job, &e);
}

/* Count the chunks of one document (valid UTF-8 with a readable byte after it; bytes up to readable
 * may be read). Some of its chunks may still wait (see count_chunks): drain y before its text goes. */
static int count_document(const PretokScanner *scanner, Tally *y, const uint8_t *p, Py_ssize_t n,
                          const uint8_t *readable) {
    PretokText text = {PRETOK_UTF8_KIND, p, n};
    Py_ssize_t ends[SCAN_BATCH];
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t k = scanner->chunks(&text, i, ends, SCAN_BATCH);
        if (count_chunks(y, p, i, ends, k, readable) < 0) return -1;
        i = ends[k - 1];
    }
    return 0;
}

/* A document that may end at the end of its buffer: copied with padding when it does. */
static int count_unpadded(Worker *w, const uint8_t *p, Py_ssize_t n, int padded) {
    if (!padded) {
        if (ensure(&w->scratch, &w->scratchcap, (size_t)n + PAD) < 0) return -1;
        memcpy(w->scratch, p, (size_t)n);
        memset(w->scratch + n, 0, PAD);
        p = w->scratch;
    }
    if (count_document(w->job->counter->scanner, &w->tally, p, n, p + n + PAD) < 0) return -1;
    return padded ? 0 : tally_drain(&w->tally); /* (the scratch copy is reused) */
}

static void run_part(Worker *w, int64_t u, Part *part);

static void run_texts(Worker *w, int64_t u) {
    Job *job = w->job;
    if (job->part && job->part[u] >= 0) {
        run_part(w, u, &job->parts[job->part[u]]);
        return;
    }
    for (Py_ssize_t d = job->first[u]; d < job->first[u + 1]; d++)
        if (count_document(job->counter->scanner, &w->tally, job->docs[d], job->lens[d],
                           job->docs[d] + job->lens[d] + 1) < 0) {
            job_error(job, u, ERR_MEMORY, d);
            return;
        }
    Py_ssize_t bytes = 0;
    for (Py_ssize_t d = job->first[u]; d < job->first[u + 1]; d++) bytes += job->lens[d];
    ATOMIC_ADD(&job->bytes_done, bytes);
    ATOMIC_ADD(&job->documents, job->first[u + 1] - job->first[u]);
}

/* Switch the worker's counting to table t (its front cache emptied into the table it leaves). */
static int tally_switch(Tally *y, Table *t) {
    if (tally_drain(y) < 0) return -1;
    front_flush_all(y->table, y->front);
    memset(y->front, 0, sizeof(Front) << FRONT_BITS);
    y->table = t;
    return 0;
}

/* One part of a long document (see Part): from its last mark (the first part: from 0) to its end,
 * then on until one of its boundaries is a mark of the next part, or to the end of the document. */
static void run_part(Worker *w, int64_t u, Part *part) {
    Job *job = w->job;
    Tally *y = &w->tally;
    Table *own = part->table >= 0 ? &job->counter->tables[part->table] : NULL, *thread_table = y->table;
    if (own && (tally_switch(y, own) < 0 || table_segment(own, 2 * (job->unit_base + u)) < 0)) {
        job_error(job, u, ERR_MEMORY, 0);
        return;
    }
    const uint8_t *p = job->docs[part->doc];
    Py_ssize_t n = job->lens[part->doc], ends[SCAN_BATCH];
    PretokText text = {PRETOK_UTF8_KIND, p, n};
    const Part *next = part->has_next ? part + 1 : NULL;
    int stop = 0, failed = 0;
    part->met = -1;
    for (Py_ssize_t i = part->table >= 0 ? part->marks[part->nmarks - 1] : 0; i < n && !failed;) {
        Py_ssize_t k = job->counter->scanner->chunks(&text, i, ends, SCAN_BATCH), take = k;
        for (Py_ssize_t c = 0; next && c < k; c++) {
            if (ends[c] < part->end) continue;
            while (stop < next->nmarks && next->marks[stop] < ends[c]) stop++;
            if (stop == next->nmarks) {
                next = NULL; /* past every mark: on to the end of the document */
            } else if (next->marks[stop] == ends[c]) {
                part->met = stop;
                take = c + 1;
            }
            if (part->met >= 0) break;
        }
        failed = count_chunks(y, p, i, ends, take, p + n + 1) < 0;
        i = ends[take - 1];
        if (part->met >= 0) break;
    }
    if (failed || (own && tally_switch(y, thread_table) < 0)) {
        job_error(job, u, ERR_MEMORY, 0);
        return;
    }
    ATOMIC_ADD(&job->bytes_done, part->end - part->start);
    if (part->start == 0) ATOMIC_ADD(&job->documents, 1);
}

static inline int64_t arrow_offset(const Job *job, int64_t r) {
    return job->offsets64 ? ((const int64_t *)job->offsets)[r] : ((const int32_t *)job->offsets)[r];
}

static void run_arrow(Worker *w, int64_t u) {
    Job *job = w->job;
    int64_t r0 = job->first[u], r1 = job->first[u + 1];
    int64_t b0 = arrow_offset(job, r0), b1 = arrow_offset(job, r1);
    Py_ssize_t bad = utf8_invalid_at(job->data + b0, (Py_ssize_t)(b1 - b0));
    for (int64_t r = r0; r < r1; r++) {
        int64_t s = arrow_offset(job, r), e = arrow_offset(job, r + 1);
        if (job->validity) {
            int64_t bit = job->validity_offset + r;
            if (!(job->validity[bit >> 3] >> (bit & 7) & 1)) {
                job_error(job, u, ERR_NULL, r);
                return;
            }
        }
        if (bad >= 0 && b0 + bad < e) {
            InputError err = {.kind = ERR_UTF8, .unit = u, .where = r, .line_start = b0 + bad - s}; /* (byte in row) */
            job_error_at(job, &err);
            return;
        }
        if (count_unpadded(w, job->data + s, (Py_ssize_t)(e - s), e + PAD <= job->data_len) < 0) {
            job_error(job, u, ERR_MEMORY, r);
            return;
        }
    }
    ATOMIC_ADD(&job->bytes_done, b1 - b0);
    ATOMIC_ADD(&job->documents, r1 - r0);
}

#if HAVE_THREADS
/* Read file bytes [at, at + n) into buf; the count read (short at the end of the file), or -1. */
static int64_t read_at(int fd, uint8_t *buf, int64_t n, int64_t at) {
    int64_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += r;
    }
    return got;
}

#define LINE_READ 4096 /* the first read past a unit's end (then twice as much each time) */

/* Whether the line that ends with the \n at file offset at - 1 is blank (nothing but \r before its
 * \n), reading back from buf (file bytes [from, from + held)) and, before it, from the file. */
static int blank_line_before(int fd, const uint8_t *buf, int64_t from, int64_t at) {
    int64_t k = at - 2; /* (the byte before that \n) */
    for (; k >= from; k--)
        if (buf[k - from] != '\r') return buf[k - from] == '\n';
    uint8_t back[256];
    while (k >= 0) { /* a run of \r reaching back past the buffer: read on backwards */
        int64_t n = k + 1 < (int64_t)sizeof back ? k + 1 : (int64_t)sizeof back;
        if (read_at(fd, back, n, k + 1 - n) != n) return 0;
        for (int64_t j = n - 1; j >= 0; j--, k--)
            if (back[j] != '\r') return back[j] == '\n';
    }
    return 1; /* (the file's first line) */
}

/* Make the worker's buffer hold the file bytes [from, from + want) (fewer at the end of the file),
 * PAD zeroed bytes after them; *held: the bytes it holds (read on from there). The text counted so
 * far is drained first: the buffer may move. -1 (the error noted) when that fails. */
static int file_hold(Worker *w, int64_t u, FileInput *f, int64_t from, int64_t *held, int64_t want) {
    Job *job = w->job;
    if (want > f->size - from) want = f->size - from; /* (the bytes past the size taken at the start are not read) */
    if (want <= *held) return 0;
    if (tally_drain(&w->tally) < 0 || ensure(&w->buf, &w->bufcap, (size_t)want + PAD) < 0) {
        job_error(job, u, ERR_MEMORY, from + *held);
        return -1;
    }
    int64_t got = read_at(w->fd, w->buf + *held, want - *held, from + *held);
    if (got < 0) {
        InputError err = {.kind = ERR_IO, .unit = u, .where = from + *held, .io_errno = errno};
        job_error_at(job, &err);
        return -1;
    }
    *held += got;
    memset(w->buf + *held, 0, PAD);
    if (*held < want) { /* the file is shorter than it was when the call began */
        job_error(job, u, ERR_CHANGED, from + *held);
        return -1;
    }
    return 0;
}

/* A unit of a text file whose documents are paragraphs or the whole file: it counts the documents
 * that start in [start, end), the last one read on to its end. A document starts at the start of
 * the file and (paragraphs) at each line that is not blank after a line that is (blank: nothing but
 * \r before its \n), as chunk_counting.paragraphs cuts lines; a document counted here is its bytes
 * whole, however long (one thread, in the worker's buffer). */
static void run_file_documents(Worker *w, int64_t u, FileUnit *unit, FileInput *f) {
    Job *job = w->job;
    if (f->format == FILE_WHOLE && unit->start > 0) { /* (the first unit owns the file's one document) */
        ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
        return;
    }
    int64_t from = unit->start > 0 ? unit->start - 1 : 0, held = 0, step = unit->end - from;
    if (file_hold(w, u, f, from, &held, step) < 0) return;
    int64_t i = 0; /* a line start (relative to from) */
    int prev_blank = 0;
    if (unit->start > 0) {
        const uint8_t *nl = memchr(w->buf, '\n', (size_t)held);
        if (!nl || nl - w->buf + 1 >= unit->end - from) { /* no line starts here */
            ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
            return;
        }
        i = nl - w->buf + 1;
        prev_blank = f->format == FILE_PARAGRAPHS && blank_line_before(w->fd, w->buf, from, from + i);
    }
    int64_t doc = -1, documents = 0; /* doc: the start of the open document, or -1 */
    for (;;) {
        if (doc < 0 && from + i >= unit->end) break; /* no document starts in this unit */
        int at_end = from + i >= f->size;
        int starts = 0, blank = 0;
        int64_t next = i;
        if (!at_end) {
            for (;;) { /* the line at i: its end, read on as far as it goes */
                const uint8_t *nl = memchr(w->buf + next, '\n', (size_t)(held - next));
                if (nl) {
                    next = nl - w->buf + 1;
                    break;
                }
                next = held;
                if (from + held >= f->size) break;
                step = step < ((int64_t)1 << 26) ? step * 2 : step;
                if (file_hold(w, u, f, from, &held, held + step) < 0) return;
            }
            if (f->format == FILE_PARAGRAPHS) {
                int64_t k = i, stop = next - (w->buf[next - 1] == '\n');
                while (k < stop && w->buf[k] == '\r') k++;
                blank = k == stop;
            }
            starts = from + i == 0 || (f->format == FILE_PARAGRAPHS && prev_blank && !blank);
        }
        if (at_end || starts) {
            if (doc >= 0) { /* the open document ends here */
                Py_ssize_t n = (Py_ssize_t)(i - doc), bad = utf8_invalid_at(w->buf + doc, n);
                if (bad >= 0) {
                    job_error(job, u, ERR_UTF8, from + doc + bad);
                    return;
                }
                if (count_document(job->counter->scanner, &w->tally, w->buf + doc, n, w->buf + held + PAD) < 0) {
                    job_error(job, u, ERR_MEMORY, from + doc);
                    return;
                }
                documents++;
            }
            if (at_end || from + i >= unit->end) break;
            doc = i;
        }
        prev_blank = blank;
        i = next;
    }
    ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
    ATOMIC_ADD(&job->documents, documents);
}

/* The lines of a file unit: read [start - 1, end) and on to the end of the line that runs past end,
 * then each line that starts in [start, end): a document (text), or the field of a JSON object. */
static void run_file(Worker *w, int64_t u) {
    Job *job = w->job;
    FileUnit *unit = &job->units[u];
    FileInput *f = &job->files[unit->file];
    if (w->fd_file != unit->file) {
        if (w->fd >= 0) close(w->fd);
        w->fd_file = -1;
        w->fd = open(f->path, O_RDONLY);
        if (w->fd < 0) {
            InputError err = {.kind = ERR_IO, .unit = u, .where = unit->start, .io_errno = errno};
            job_error_at(job, &err);
            return;
        }
        w->fd_file = unit->file;
    }
    if (f->format == FILE_PARAGRAPHS || f->format == FILE_WHOLE) {
        run_file_documents(w, u, unit, f);
        return;
    }
    int64_t from = unit->start > 0 ? unit->start - 1 : 0, want = unit->end - from;
    if (ensure(&w->buf, &w->bufcap, (size_t)want + PAD) < 0) {
        job_error(job, u, ERR_MEMORY, unit->start);
        return;
    }
    int64_t n = read_at(w->fd, w->buf, want, from);
    if (n < 0) {
        InputError err = {.kind = ERR_IO, .unit = u, .where = unit->start, .io_errno = errno};
        job_error_at(job, &err);
        return;
    }
    if (n < want) { /* the file is shorter than it was when the call began */
        job_error(job, u, ERR_CHANGED, from + n);
        return;
    }
    int64_t s = 0; /* the first line start at or after unit->start, relative to from */
    if (unit->start > 0) {
        const uint8_t *nl = memchr(w->buf, '\n', (size_t)n);
        s = nl ? nl - w->buf + 1 : n;
    }
    int64_t e = n;
    if (n == want && n > 0 && w->buf[n - 1] != '\n' && unit->end < f->size && s < n) {
        for (int64_t step = LINE_READ;; step *= step < (1 << 24) ? 2 : 1) { /* the last line goes on past end */
            if (step > f->size - (from + e)) step = f->size - (from + e); /* (up to the size taken at the start) */
            if (step == 0) break;
            if (ensure(&w->buf, &w->bufcap, (size_t)(e + step) + PAD) < 0) {
                job_error(job, u, ERR_MEMORY, unit->start);
                return;
            }
            int64_t m = read_at(w->fd, w->buf + e, step, from + e);
            if (m < 0) {
                InputError err = {.kind = ERR_IO, .unit = u, .where = from + e, .io_errno = errno};
                job_error_at(job, &err);
                return;
            }
            const uint8_t *nl = memchr(w->buf + e, '\n', (size_t)m);
            if (nl) {
                e = nl - w->buf + 1;
                break;
            }
            e += m;
            if (m < step) { /* the file is shorter than it was when the call began */
                job_error(job, u, ERR_CHANGED, from + e);
                return;
            }
        }
    }
    memset(w->buf + e, 0, PAD);
    const PretokScanner *scanner = job->counter->scanner;
    int64_t documents = 0;
    if (f->format == FILE_TEXT) {
        Py_ssize_t bad = utf8_invalid_at(w->buf + s, (Py_ssize_t)(e - s));
        if (bad >= 0) { /* count nothing from this unit: it will not be used */
            job_error(job, u, ERR_UTF8, from + s + bad);
            return;
        }
    }
    for (int64_t i = s; i < e;) {
        const uint8_t *nl = memchr(w->buf + i, '\n', (size_t)(e - i));
        int64_t end = nl ? nl - w->buf + 1 : e;
        const uint8_t *line = w->buf + i;
        size_t len = (size_t)(end - i);
        if (f->format == FILE_TEXT) {
            if (count_document(scanner, &w->tally, line, (Py_ssize_t)len, w->buf + e + PAD) < 0) {
                job_error(job, u, ERR_MEMORY, from + i);
                return;
            }
            documents++;
        } else {
            size_t blank = 0;
            while (blank < len && json_ws(line[blank])) blank++;
            if (blank < len) {
                Py_ssize_t bad = utf8_invalid_at(line, (Py_ssize_t)len);
                if (bad >= 0) {
                    job_error(job, u, ERR_UTF8, from + i + bad);
                    return;
                }
                if (ensure(&w->scratch, &w->scratchcap, len + PAD) < 0) {
                    job_error(job, u, ERR_MEMORY, from + i);
                    return;
                }
                JsonScan j;
                const uint8_t *text = NULL;
                size_t tlen = 0;
                int status = json_field(&j, line, len, job->field, job->nfield, w->scratch, &text, &tlen);
                if (status != JSON_OK) {
                    InputError err = {.kind = ERR_JSON, .unit = u, .where = from + i, .line_start = from + i,
                                      .json_error = status};
                    if (status == JSON_BAD)
                        snprintf(err.detail, sizeof err.detail, "%s at column %lld", j.what,
                                 (long long)(j.p - line + 1));
                    else if (status == JSON_NO_FIELD && j.names[0])
                        snprintf(err.detail, sizeof err.detail, "%s (its fields: %s; ", j.what, j.names);
                    else if (status == JSON_NO_FIELD)
                        snprintf(err.detail, sizeof err.detail, "%s (", j.what);
                    else if (j.what)
                        snprintf(err.detail, sizeof err.detail, "%s", j.what);
                    job_error_at(job, &err);
                    return;
                }
                if (text == w->scratch) memset(w->scratch + tlen, 0, PAD);
                const uint8_t *readable = text == w->scratch ? w->scratch + tlen + PAD : w->buf + e + PAD;
                if (count_document(scanner, &w->tally, text, (Py_ssize_t)tlen, readable) < 0 ||
                    (text == w->scratch && tally_drain(&w->tally) < 0)) { /* (the scratch is reused) */
                    job_error(job, u, ERR_MEMORY, from + i);
                    return;
                }
                documents++;
            }
        }
        i = end;
    }
    ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
    ATOMIC_ADD(&job->documents, documents);
}

#endif

static void *work(void *arg) {
    Worker *w = arg;
    Job *job = w->job;
    for (;;) {
        int64_t u = ATOMIC_NEXT(&job->next_unit);
        if (u >= job->nunits || u > ATOMIC_GET(&job->stop_after)) break;
        if (table_segment(w->tally.table, 2 * (job->unit_base + u)) < 0) { /* (odd: seams, see Part) */
            job_error(job, u, ERR_MEMORY, 0);
            break;
        }
        if (job->kind == JOB_TEXTS) run_texts(w, u);
        else if (job->kind == JOB_ARROW) run_arrow(w, u);
#if HAVE_THREADS
        else run_file(w, u);
#endif
        if (tally_drain(&w->tally) < 0) { /* (this unit's records in its segment) */
            job_error(job, u, ERR_MEMORY, 0);
            break;
        }
    }
    front_flush_all(w->tally.table, w->tally.front);
#if HAVE_THREADS
    pthread_mutex_lock(&job->lock);
    job->running--;
    pthread_cond_signal(&job->done);
    pthread_mutex_unlock(&job->lock);
#endif
    return NULL;
}

/* Run the job's units on the counter's threads, without the GIL; every interval, with it, call
 * progress(bytes done) and check for signals (Ctrl-C stops the threads). -1 with an exception set
 * when that fails (the job's own errors are in job->error). */
static int run_job(Counter *self, Job *job, PyObject *progress) {
    int nthreads = self->nthreads;
    if (nthreads > job->nunits) nthreads = job->nunits > 0 ? (int)job->nunits : 1;
    Worker *workers = calloc((size_t)nthreads, sizeof(Worker));
    job->counter = self;
    job->unit_base = self->next_unit;
    job->stop_after = INT64_MAX;
    int failed = workers == NULL;
    for (int k = 0; k < nthreads && !failed; k++) {
        Worker *w = &workers[k];
        w->job = job;
        w->tally.table = &self->tables[k];
        w->tally.front = calloc((size_t)1 << FRONT_BITS, sizeof(Front));
        w->fd = w->fd_file = -1;
        if (!w->tally.front) failed = 1;
    }
    if (failed) {
        for (int k = 0; workers && k < nthreads; k++) free(workers[k].tally.front);
        free(workers);
        PyErr_NoMemory();
        return -1;
    }
#if HAVE_THREADS
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->done, NULL);
    pthread_t threads[MAX_THREADS];
    int started = 0;
    PyThreadState *state = PyEval_SaveThread();
    pthread_mutex_lock(&job->lock);
    for (int k = 0; k < nthreads; k++) {
        if (pthread_create(&threads[k], NULL, work, &workers[k]) != 0) break;
        started++;
        job->running++;
    }
    if (started == 0) { /* no thread to be had: here */
        job->running = 1;
        pthread_mutex_unlock(&job->lock);
        work(&workers[0]);
        pthread_mutex_lock(&job->lock);
    }
    int64_t reported = -1;
    while (job->running > 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&job->done, &job->lock, &until);
        if (job->running == 0 || failed) continue;
        pthread_mutex_unlock(&job->lock);
        PyEval_RestoreThread(state);
        int64_t done = ATOMIC_GET(&job->bytes_done);
        if (PyErr_CheckSignals() < 0) failed = 1;
        if (!failed && progress != Py_None && done != reported) {
            PyObject *r = PyObject_CallFunction(progress, "L", (long long)done);
            if (!r) failed = 1;
            Py_XDECREF(r);
            reported = done;
        }
        if (failed) ATOMIC_SET(&job->stop_after, (int64_t)-1);
        state = PyEval_SaveThread();
        pthread_mutex_lock(&job->lock);
    }
    pthread_mutex_unlock(&job->lock);
    for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
    PyEval_RestoreThread(state);
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->done);
#else
    work(&workers[0]);
#endif
    for (int k = 0; k < nthreads; k++) {
        free(workers[k].tally.front);
        free(workers[k].buf);
        free(workers[k].scratch);
#if HAVE_THREADS
        if (workers[k].fd >= 0) close(workers[k].fd);
#endif
    }
    free(workers);
    self->next_unit += job->nunits;
    self->bytes += job->bytes_done;
    self->documents += job->documents;
    if (failed || job->error.kind != ERR_NONE) self->broken = 1;
    if (!failed && progress != Py_None) {
        PyObject *r = PyObject_CallFunction(progress, "L", (long long)job->bytes_done);
        if (!r) failed = 1;
        Py_XDECREF(r);
    }
    return failed ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Merging spilled runs (see Spill)                                                            */

#if HAVE_THREADS
/* A partition's distinct chunks while its runs are merged: open addressing as in Table, over an
 * arena of records [unit: 8][number: 8][count: 8][length: varint][bytes]. */
typedef struct {
    uint64_t *slots, mask, n;
    int bits;
    uint8_t *arena;
    uint64_t len, cap, symbols;
} MergeTable;

static int merge_table_add(MergeTable *m, const SpillRecord *r) {
    uint64_t h = hash_bytes(r->chunk, r->len), tag = h >> TAG_SHIFT, i = h >> (64 - m->bits);
    for (;; i = (i + 1) & m->mask) {
        uint64_t s = m->slots[i];
        if (!s) break;
        if (s >> TAG_SHIFT != tag) continue;
        uint8_t *record = m->arena + (s & OFFSET_MASK) - 1;
        uint64_t len;
        const uint8_t *q = record_chunk(record + 16, &len);
        if (len != r->len || memcmp(q, r->chunk, len) != 0) continue;
        uint64_t unit, number;
        memcpy(&unit, record, 8);
        memcpy(&number, record + 8, 8);
        if (key_before(r->unit, r->number, unit, number)) {
            memcpy(record, &r->unit, 8);
            memcpy(record + 8, &r->number, 8);
        }
        store_count(record + 16, load_count(record + 16) + r->count);
        return 0;
    }
    uint64_t need = m->len + 24 + 10 + r->len;
    if (need > OFFSET_MASK - 1) return -1;
    if (need > m->cap) {
        uint64_t cap = m->cap ? m->cap * 2 : 1 << 16;
        while (cap < need) cap *= 2;
        uint8_t *arena = realloc(m->arena, cap);
        if (!arena) return -1;
        m->arena = arena;
        m->cap = cap;
    }
    uint8_t *record = m->arena + m->len;
    memcpy(record, &r->unit, 8);
    memcpy(record + 8, &r->number, 8);
    store_count(record + 16, r->count);
    uint8_t *q = put_varint(record + 24, r->len);
    memcpy(q, r->chunk, r->len);
    m->slots[i] = tag << TAG_SHIFT | (m->len + 1);
    m->len = (uint64_t)(q - m->arena) + r->len;
    m->symbols += r->len;
    if (++m->n * 10 > (m->mask + 1) * 7 && slots_grow(&m->slots, &m->mask, &m->bits, m->arena, m->len, 16) < 0)
        return -1;
    return 0;
}

/* Part of one partition's records: bytes [offset, offset + size) of run file run-N (run >= 0),
 * or of an open file (fd). */
typedef struct {
    int64_t run;
    int fd;
    uint64_t offset, size;
} Section;

typedef struct {
    Spill *spill;
    int nthreads;
    uint64_t budget;     /* bytes one partition's merge may take */
    int nruns;
    uint64_t *run_offsets; /* run r's section p: [run_offsets[r * (SPILL_PARTS + 1) + p], ... p + 1) */
    int64_t next_part;
    pthread_mutex_t lock;
} MergeJob;

static int read_section(const Spill *s, const Section *sec, uint8_t **buf, size_t *cap) {
    if (ensure(buf, cap, (size_t)sec->size + 1) < 0) {
        errno = ENOMEM;
        return -1;
    }
    int fd = sec->fd;
    if (sec->run >= 0) { /* (run files are opened one at a time: there may be thousands) */
        char path[4096];
        spill_path(path, sizeof path, s, "run", sec->run);
        if ((fd = open(path, O_RDONLY)) < 0) return -1;
    }
    int64_t got = read_at(fd, *buf, (int64_t)sec->size, (int64_t)sec->offset);
    int err = errno;
    if (sec->run >= 0) close(fd);
    errno = err;
    if (got != (int64_t)sec->size) {
        if (got >= 0) errno = EIO; /* (a run file cut short) */
        return -1;
    }
    return 0;
}

typedef struct {
    uint64_t unit, number, offset;
} KeyedRecord;

static int compare_keys(const void *a, const void *b) {
    const KeyedRecord *x = a, *y = b;
    return key_before(x->unit, x->number, y->unit, y->number) ? -1 : key_before(y->unit, y->number, x->unit, x->number);
}

static int merge_sections(MergeJob *job, Section *secs, int nsecs, int shift);

/* visit(ctx, record) for each record of the sections, in order, each section read whole into
 * *buf. 0, or -1 with errno set: a section that cannot be read, a record cut short, or visit's
 * own failure. */
static int each_record(const Spill *s, const Section *secs, int nsecs, uint8_t **buf, size_t *cap,
                       int (*visit)(void *ctx, const SpillRecord *r), void *ctx) {
    for (int k = 0; k < nsecs; k++) {
        if (read_section(s, &secs[k], buf, cap) < 0) return -1;
        const uint8_t *p = *buf, *end = *buf + secs[k].size;
        SpillRecord r;
        while (p < end) {
            if (get_record(&p, end, &r) < 0) {
                errno = EIO;
                return -1;
            }
            if (visit(ctx, &r) < 0) return -1;
        }
    }
    return 0;
}

/* split_sections' visit: a record's size into its sub-partition (pass 0), or the record into
 * the run file (pass 1). */
typedef struct {
    int next, pass;
    uint64_t *sizes;
    RunWriter *w;
} SplitVisit;

static int split_visit(void *ctx, const SpillRecord *r) {
    SplitVisit *v = ctx;
    int part = (int)((hash_bytes(r->chunk, r->len) >> v->next) & (SPILL_PARTS - 1));
    if (v->pass == 0) {
        v->sizes[part] += record_size(r);
        return 0;
    }
    return run_record(v->w, part, r);
}

static int merge_visit(void *ctx, const SpillRecord *r) {
    if (merge_table_add(ctx, r) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}


/* A partition too large for the budget: its records split by the next SPILL_BITS bits of the hash
 * into a new run file, whose sections are then merged one by one. */
static int split_sections(MergeJob *job, Section *secs, int nsecs, int shift) {
    Spill *s = job->spill;
    uint64_t sizes[SPILL_PARTS] = {0};
    uint8_t *buf = NULL;
    size_t cap = 0;
    RunWriter w;
    int64_t number = ATOMIC_NEXT(&s->splits);
    int next = shift + SPILL_BITS, opened = 0, failed = 0;
    for (int pass = 0; pass < 2 && !failed; pass++) {
        SplitVisit visit = {next, pass, sizes, &w};
        failed = each_record(s, secs, nsecs, &buf, &cap, split_visit, &visit) < 0;
        if (pass == 0 && !failed) {
            failed = run_open(&w, s, "split", number, sizes) < 0;
            opened = !failed;
        }
    }
    free(buf);
    if (opened && run_close(&w) < 0) failed = 1;
    char path[4096];
    spill_path(path, sizeof path, s, "split", number);
    int fd = failed ? -1 : open(path, O_RDONLY);
    if (fd < 0) {
        spill_fail(s, errno);
        if (opened) unlink(path);
        return -1;
    }
    unlink(path); /* (gone when closed) */
    uint64_t at = SPILL_HEAD;
    for (int p = 0; p < SPILL_PARTS && !failed; p++) {
        Section sec = {-1, fd, at, sizes[p]};
        at += sizes[p];
        if (sizes[p]) failed = merge_sections(job, &sec, 1, next) < 0;
    }
    close(fd);
    return failed ? -1 : 0;
}

/* Merge the sections of one partition (records whose hash >> shift share their low bits) into a
 * sorted partition file, or split them when they are too large for the budget. */
static int merge_sections(MergeJob *job, Section *secs, int nsecs, int shift) {
    Spill *s = job->spill;
    uint64_t total = 0;
    for (int k = 0; k < nsecs; k++) total += secs[k].size;
    if (total == 0) return 0;
    if (total * 3 > job->budget && shift + 2 * SPILL_BITS <= 64) return split_sections(job, secs, nsecs, shift);
    MergeTable m = {0};
    m.bits = 10;
    m.mask = ((uint64_t)1 << m.bits) - 1;
    m.slots = calloc(m.mask + 1, sizeof(uint64_t));
    uint8_t *buf = NULL, *out = NULL;
    size_t cap = 0;
    KeyedRecord *order = NULL;
    int failed = !m.slots, err = ENOMEM, fd = -1;
    if (!failed && each_record(s, secs, nsecs, &buf, &cap, merge_visit, &m) < 0) {
        err = errno;
        failed = 1;
    }
    free(buf);
    if (!failed) {
        order = malloc((m.n ? m.n : 1) * sizeof(KeyedRecord));
        failed = !order;
    }
    if (!failed) {
        uint64_t k = 0;
        for (uint64_t off = 0; off < m.len; k++) {
            uint64_t len;
            order[k].offset = off;
            memcpy(&order[k].unit, m.arena + off, 8);
            memcpy(&order[k].number, m.arena + off + 8, 8);
            const uint8_t *c = record_chunk(m.arena + off + 16, &len);
            off = (uint64_t)(c - m.arena) + len;
        }
        qsort(order, m.n, sizeof(KeyedRecord), compare_keys);
        free(m.slots);
        m.slots = NULL;
        char path[4096];
        spill_path(path, sizeof path, s, "part", ATOMIC_NEXT(&s->parts));
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        out = malloc(1 << 20);
        if (fd < 0 || !out) {
            err = fd < 0 ? errno : ENOMEM;
            failed = 1;
        }
        uint64_t used = 0, at = 0;
        for (uint64_t j = 0; j < m.n && !failed; j++) {
            const uint8_t *record = m.arena + order[j].offset;
            SpillRecord r;
            memcpy(&r.unit, record, 8);
            memcpy(&r.number, record + 8, 8);
            r.count = load_count(record + 16);
            r.chunk = record_chunk(record + 16, &r.len);
            if (used + RECORD_HEAD + r.len > (1 << 20)) {
                if (write_at(fd, out, used, at) < 0) {
                    err = errno;
                    failed = 1;
                    break;
                }
                at += used;
                used = 0;
            }
            if (RECORD_HEAD + r.len > (1 << 20)) { /* (a chunk longer than the buffer) */
                uint8_t head[RECORD_HEAD], *e = put_varint(put_varint(put_varint(put_varint(head, r.unit), r.number), r.count), r.len);
                if (write_at(fd, head, (uint64_t)(e - head), at) < 0 || write_at(fd, r.chunk, r.len, at + (uint64_t)(e - head)) < 0) {
                    err = errno;
                    failed = 1;
                    break;
                }
                at += (uint64_t)(e - head) + r.len;
                continue;
            }
            uint8_t *e = put_varint(put_varint(put_varint(put_varint(out + used, r.unit), r.number), r.count), r.len);
            memcpy(e, r.chunk, r.len);
            used = (uint64_t)(e - out) + r.len;
        }
        if (!failed && used && write_at(fd, out, used, at) < 0) {
            err = errno;
            failed = 1;
        }
        if (fd >= 0 && close(fd) < 0 && !failed) {
            err = errno;
            failed = 1;
        }
    }
    if (!failed) {
        ATOMIC_ADD(&s->chunks, m.n);
        ATOMIC_ADD(&s->symbols, m.symbols);
    }
    free(out);
    free(order);
    free(m.slots);
    free(m.arena);
    if (failed) spill_fail(s, err);
    return failed ? -1 : 0;
}

static void *merge_work(void *arg) {
    MergeJob *job = arg;
    Section *secs = malloc((size_t)(job->nruns ? job->nruns : 1) * sizeof(Section));
    if (!secs) {
        spill_fail(job->spill, ENOMEM);
        return NULL;
    }
    for (;;) {
        int64_t p = ATOMIC_NEXT(&job->next_part);
        if (p >= SPILL_PARTS || ATOMIC_GET(&job->spill->error)) break;
        int n = 0;
        for (int r = 0; r < job->nruns; r++) {
            const uint64_t *off = job->run_offsets + (size_t)r * (SPILL_PARTS + 1);
            if (off[p + 1] > off[p]) secs[n++] = (Section){r, -1, off[p], off[p + 1] - off[p]};
        }
        if (merge_sections(job, secs, n, 0) < 0) break;
    }
    free(secs);
    return NULL;
}

/* Merge every run's partitions into sorted partition files, on nthreads threads, each partition
 * within limit / nthreads. -1 (see Spill.error) when that fails. */
static int merge_runs(Spill *s, int nthreads) {
    MergeJob job = {.spill = s, .nthreads = nthreads, .budget = s->limit / (uint64_t)nthreads, .nruns = (int)s->runs};
    job.run_offsets = malloc((size_t)(job.nruns ? job.nruns : 1) * (SPILL_PARTS + 1) * sizeof(uint64_t));
    int failed = !job.run_offsets;
    if (failed) spill_fail(s, ENOMEM);
    for (int r = 0; r < job.nruns && !failed; r++) {
        char path[4096];
        uint8_t head[SPILL_HEAD];
        spill_path(path, sizeof path, s, "run", r);
        int fd = open(path, O_RDONLY);
        failed = fd < 0 || read_at(fd, head, SPILL_HEAD, 0) != SPILL_HEAD || memcmp(head, SPILL_MAGIC, 8) != 0;
        if (failed) spill_fail(s, fd < 0 ? errno : EIO);
        if (fd >= 0) close(fd);
        if (!failed) memcpy(job.run_offsets + (size_t)r * (SPILL_PARTS + 1), head + 8, 8 * (SPILL_PARTS + 1));
    }
    if (!failed) {
        pthread_t threads[MAX_THREADS];
        int started = 0;
        for (int k = 0; k < nthreads; k++)
            if (pthread_create(&threads[k], NULL, merge_work, &job) == 0) started++;
        if (!started) merge_work(&job);
        for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
        failed = s->error != 0;
    }
    free(job.run_offsets);
    return failed ? -1 : 0;
}

/* A sorted partition file read in order, for write_spilled's merge. */
typedef struct {
    int fd;
    uint8_t *buf;
    size_t cap;
    uint64_t pos, len, at; /* buf[pos:len] holds the file's bytes from at - (len - pos) */
    SpillRecord r;         /* the current record (its chunk in buf) */
} PartReader;

#define READ_STEP (1 << 16)

/* The reader's next record into pr->r: 1, 0 at the end of the file, -1 on an error (errno). */
static int part_next(PartReader *pr) {
    for (;;) {
        const uint8_t *p = pr->buf + pr->pos, *end = pr->buf + pr->len;
        if (get_record(&p, end, &pr->r) == 0) {
            pr->pos = (uint64_t)(p - pr->buf);
            return 1;
        }
        uint64_t keep = pr->len - pr->pos, want = keep + READ_STEP;
        if (pr->r.len + RECORD_HEAD > want) want = pr->r.len + RECORD_HEAD; /* (a long chunk, whose length was read) */
        if (keep) memmove(pr->buf, pr->buf + pr->pos, keep); /* (the first read: no buffer yet) */
        pr->pos = 0;
        pr->len = keep;
        if (ensure(&pr->buf, &pr->cap, (size_t)want) < 0) {
            errno = ENOMEM;
            return -1;
        }
        int64_t got = read_at(pr->fd, pr->buf + keep, (int64_t)(want - keep), (int64_t)pr->at);
        if (got < 0) return -1;
        if (got == 0) {
            if (keep == 0) return 0;
            errno = EIO; /* (a file cut short) */
            return -1;
        }
        pr->at += (uint64_t)got;
        pr->len += (uint64_t)got;
        pr->r.len = 0;
    }
}

/* Buffered writes to one section of the counts file. */
typedef struct {
    int fd;
    uint64_t at;
    uint8_t *buf;
    size_t used;
} SectionWriter;

static int section_put(SectionWriter *w, const void *p, size_t n) {
    if (w->used + n > (1 << 20)) {
        if (write_at(w->fd, w->buf, w->used, w->at) < 0) return -1;
        w->at += w->used;
        w->used = 0;
        if (n > (1 << 20)) {
            if (write_at(w->fd, p, n, w->at) < 0) return -1;
            w->at += n;
            return 0;
        }
    }
    memcpy(w->buf + w->used, p, n);
    w->used += n;
    return 0;
}

static int section_flush(SectionWriter *w) {
    return w->used && write_at(w->fd, w->buf, w->used, w->at) < 0 ? -1 : 0;
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* The Python type                                                                             */

static PyTypeObject CounterType, BufferType;

static PyObject *Counter_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"scanner", "num_threads", NULL};
    PyObject *capsule;
    int nthreads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi", keywords, &capsule, &nthreads)) return NULL;
    const PretokScanner *scanner = PyCapsule_GetPointer(capsule, PRETOK_CAPSULE_NAME);
    if (!scanner) return NULL;
    if (*scanner->classes == NULL || scanner->chunks == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the scanner's character classes are not loaded (patterns.native_scanner)");
        return NULL;
    }
    if (!HAVE_THREADS || nthreads < 1) nthreads = 1;
    if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
    Counter *self = (Counter *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->scanner = scanner;
    self->capsule = Py_NewRef(capsule);
    self->nthreads = self->ntables = nthreads;
    self->seam = -1;
    self->tables = calloc((size_t)nthreads, sizeof(Table));
    if (!self->tables) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (int k = 0; k < nthreads; k++)
        if (table_init(&self->tables[k]) < 0) {
            Py_DECREF(self);
            return PyErr_NoMemory();
        }
    return (PyObject *)self;
}

static void Counter_dealloc(Counter *self) {
    if (self->tables)
        for (int k = 0; k < self->ntables; k++) table_free(&self->tables[k]);
    free(self->tables);
    if (self->spill) {
        free(self->spill->dir);
        free(self->spill);
    }
    Py_XDECREF(self->capsule);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int after_call(Counter *self);
static int spill_failed(Counter *self);

static int check_usable(Counter *self) {
    if (self->tables == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the counts were already taken (result() or merge_spills())");
        return -1;
    }
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "an earlier call failed: these counts are partial");
        return -1;
    }
    return 0;
}

/* A new empty table (a long document's part's, or the seam table): its index, or -1 (no memory).
 * Only between jobs: the tables move. */
static int counter_add_table(Counter *self) {
    Table *tables = realloc(self->tables, (size_t)(self->ntables + 1) * sizeof(Table));
    if (!tables) return -1;
    self->tables = tables;
    if (table_init(&tables[self->ntables]) < 0) {
        table_free(&tables[self->ntables]);
        return -1;
    }
    tables[self->ntables].spill = self->spill; /* (no limit: spilled between calls, see after_call) */
    return self->ntables++;
}

static Py_ssize_t part_bytes = (Py_ssize_t)1 << 20; /* a longer document is cut into parts for the threads */

/* count_texts' units: documents first[u] .. first[u + 1] of about equal size, and each document of
 * part_bytes or more (with two threads or more) cut into parts (part[u] >= 0; see Part), each with
 * its own table. -1 when out of memory. */
static int text_units(Counter *self, Job *job, Py_ssize_t count, int64_t total) {
    int threads = self->nthreads;
    int64_t cap = (int64_t)threads * 8 + 2, per = total / (threads * 8) + 1, size = 0;
    Py_ssize_t nparts = 0;
    for (Py_ssize_t d = 0; d < count; d++)
        if (threads > 1 && job->lens[d] >= part_bytes) nparts += threads, cap += threads + 1;
    job->first = malloc((size_t)(cap + 1) * sizeof(Py_ssize_t));
    job->part = malloc((size_t)cap * sizeof(Py_ssize_t));
    job->parts = calloc((size_t)(nparts ? nparts : 1), sizeof(Part));
    if (!job->first || !job->part || !job->parts) return -1;
    int64_t u = 0;
    Py_ssize_t k = 0, from = 0;
    for (Py_ssize_t d = 0; d <= count; d++) {
        int long_doc = d < count && threads > 1 && job->lens[d] >= part_bytes;
        if (d > from && (d == count || long_doc || size >= per)) { /* close a unit of documents */
            job->first[u] = from;
            job->part[u++] = -1;
            from = d;
            size = 0;
        }
        if (d == count) break;
        if (!long_doc) {
            size += job->lens[d];
            continue;
        }
        Py_ssize_t n = job->lens[d], start = 0;
        const uint8_t *p = job->docs[d];
        PretokText text = {PRETOK_UTF8_KIND, p, n};
        for (int j = 0; j < threads; j++, k++) {
            Part *part = &job->parts[k];
            Py_ssize_t end = j + 1 < threads ? n / threads * (j + 1) : n;
            while (end < n && (p[end] & 0xC0) == 0x80) end++; /* a character's first byte */
            if (end < start) end = start;
            *part = (Part){.doc = d, .start = start, .end = end, .table = -1, .met = -1, .has_next = j + 1 < threads};
            if (j > 0) {
                part->marks[0] = start;
                part->nmarks = 1;
                for (Py_ssize_t at = start; at < n && part->nmarks < SYNC_MARKS;)
                    part->marks[part->nmarks++] = at += self->scanner->chunk(&text, at);
                if ((part->table = counter_add_table(self)) < 0) return -1;
            }
            job->first[u] = d;
            job->part[u++] = k;
            start = end;
        }
        from = d + 1;
    }
    job->first[u] = count;
    job->nunits = u;
    return 0;
}

/* After a job: each part's hand-over to the next (see Part), in order: the chunks between the mark
 * met and the next part's last mark into the seam table (between the two parts' units), or, past a
 * part that met none, the next parts' tables emptied. -1 when out of memory. */
static int join_parts(Counter *self, Job *job) {
    for (int64_t u = 0; u < job->nunits; u++) {
        if (job->part[u] < 0 || job->parts[job->part[u]].start > 0) continue;
        int dropped = 0;
        for (Part *part = &job->parts[job->part[u]]; part->has_next; part++) {
            Part *next = part + 1;
            Table *mine = &self->tables[next->table];
            if (dropped || part->met < 0) {
                dropped = 1;
                table_free(mine);
                if (table_init(mine) < 0) return -1;
                continue;
            }
            if (self->seam < 0 && (self->seam = counter_add_table(self)) < 0) return -1;
            Table *seam = &self->tables[self->seam];
            int64_t unit = 2 * (job->unit_base + u + (next - &job->parts[job->part[u]])) - 1;
            if (table_segment(seam, unit) < 0) return -1;
            const uint8_t *p = job->docs[next->doc];
            for (int m = part->met; m + 1 < next->nmarks; m++) {
                uint64_t len = (uint64_t)(next->marks[m + 1] - next->marks[m]);
                if (!table_add(seam, p + next->marks[m], len, hash_bytes(p + next->marks[m], len))) return -1;
            }
        }
    }
    return 0;
}

/* Units of about equal size: unit u is items first[u] .. first[u + 1] (size(i) bytes each). */
static Py_ssize_t *cut_units(Py_ssize_t count, const Py_ssize_t *sizes, int64_t total, int nthreads, int64_t *nunits) {
    int64_t want = nthreads * 8;
    if (want > count) want = count;
    if (want < 1) want = 1;
    Py_ssize_t *first = malloc(((size_t)want + 1) * sizeof(Py_ssize_t));
    if (!first) return NULL;
    int64_t u = 0, size = 0, per = total / want + 1;
    first[0] = 0;
    for (Py_ssize_t i = 0; i < count && u + 1 < want; i++)
        if ((size += sizes[i]) >= per * (u + 1)) first[++u] = i + 1;
    if (first[u] != count) first[++u] = count;
    *nunits = u;
    return first;
}

static PyObject *Counter_count_texts(Counter *self, PyObject *args) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list) || check_usable(self) < 0) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(list);
    Job job;
    memset(&job, 0, sizeof job);
    job.kind = JOB_TEXTS;
    job.docs = malloc((size_t)(count ? count : 1) * sizeof(uint8_t *));
    job.lens = malloc((size_t)(count ? count : 1) * sizeof(Py_ssize_t));
    if (!job.docs || !job.lens) {
        free(job.docs);
        free(job.lens);
        return PyErr_NoMemory();
    }
    int64_t total = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        PyObject *doc = PyList_GET_ITEM(list, d);
        if (!PyUnicode_Check(doc)) {
            PyErr_Format(PyExc_TypeError, "training documents must be str, got %.100s", Py_TYPE(doc)->tp_name);
            goto fail;
        }
        const char *utf8 = PyUnicode_AsUTF8AndSize(doc, &job.lens[d]); /* NUL after it; kept by the str */
        if (!utf8) goto fail;
        job.docs[d] = (const uint8_t *)utf8;
        total += job.lens[d];
    }
    /* (a str's UTF-8 has a NUL after it, not PAD bytes: the scanner reads at most that one) */
    if (text_units(self, &job, count, total) < 0) {
        self->broken = 1; /* (parts' tables may be there already) */
        PyErr_NoMemory();
        goto fail;
    }
    Py_INCREF(list);
    int status = run_job(self, &job, Py_None);
    if (status == 0 && job.error.kind == ERR_NONE && join_parts(self, &job) < 0) job.error.kind = ERR_MEMORY;
    Py_DECREF(list);
    free(job.docs);
    free(job.lens);
    free(job.first);
    free(job.part);
    free(job.parts);
    if (spill_failed(self)) return NULL;
    if (status < 0) return NULL;
    if (job.error.kind == ERR_MEMORY) {
        self->broken = 1;
        return PyErr_NoMemory();
    }
    if (after_call(self) < 0) return NULL;
    return PyLong_FromLongLong(total);
fail:
    free(job.docs);
    free(job.lens);
    free(job.first);
    free(job.part);
    free(job.parts);
    return NULL;
}

/* count_column(offsets, offsets64, data, validity, validity_offset, nrows, row_base, source):
 * count the rows of an Arrow string column (offsets: int32 or int64 buffer from the array's
 * first row, nrows + 1 of them; validity: its bitmap or None). Returns the bytes counted. */
static PyObject *Counter_count_column(Counter *self, PyObject *args) {
    Py_buffer offsets, data, validity;
    PyObject *validity_obj;
    int offsets64;
    Py_ssize_t validity_offset, nrows, row_base;
    const char *source;
    if (!PyArg_ParseTuple(args, "y*py*Onnns", &offsets, &offsets64, &data, &validity_obj, &validity_offset, &nrows,
                          &row_base, &source))
        return NULL;
    PyObject *result = NULL;
    int have_validity = 0;
    Py_ssize_t *sizes = NULL;
    Job job;
    memset(&job, 0, sizeof job);
    if (check_usable(self) < 0) goto done;
    if (validity_obj != Py_None) {
        if (PyObject_GetBuffer(validity_obj, &validity, PyBUF_SIMPLE) < 0) goto done;
        have_validity = 1;
        if ((validity_offset + nrows + 7) / 8 > validity.len) {
            PyErr_SetString(PyExc_ValueError, "the validity bitmap is shorter than the rows");
            goto done;
        }
    }
    int width = offsets64 ? 8 : 4;
    if (nrows < 0 || offsets.len < (nrows + 1) * width) {
        PyErr_SetString(PyExc_ValueError, "fewer offsets than rows + 1");
        goto done;
    }
    job.kind = JOB_ARROW;
    job.offsets = offsets.buf;
    job.offsets64 = offsets64;
    job.data = data.buf;
    job.data_len = data.len;
    job.validity = have_validity ? validity.buf : NULL;
    job.validity_offset = validity_offset;
    job.row_base = row_base;
    for (Py_ssize_t r = 0; r <= nrows; r++) {
        int64_t o = arrow_offset(&job, r);
        if (o < 0 || o > data.len || (r && o < arrow_offset(&job, r - 1))) {
            PyErr_Format(PyExc_ValueError, "%s: the column's offsets are out of order or past its data", source);
            goto done;
        }
    }
    sizes = malloc((size_t)(nrows ? nrows : 1) * sizeof(Py_ssize_t));
    if (!sizes) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < nrows; r++) sizes[r] = (Py_ssize_t)(arrow_offset(&job, r + 1) - arrow_offset(&job, r));
    int64_t total = arrow_offset(&job, nrows) - arrow_offset(&job, 0);
    job.first = cut_units(nrows, sizes, total, self->nthreads, &job.nunits);
    if (!job.first) {
        PyErr_NoMemory();
        goto done;
    }
    if (run_job(self, &job, Py_None) < 0 || spill_failed(self)) goto done;
    InputError *e = &job.error;
    if (e->kind == ERR_MEMORY) PyErr_NoMemory();
    else if (e->kind == ERR_NULL)
        PyErr_Format(PyExc_ValueError, "%s, row %lld: the text is null, not a string", source,
                     (long long)(row_base + e->where));
    else if (e->kind == ERR_UTF8)
        PyErr_Format(PyExc_ValueError, "%s, row %lld: not UTF-8 text (byte %lld of the row; " NOT_UTF8_HINT ")",
                     source, (long long)(row_base + e->where), (long long)e->line_start);
    else if (after_call(self) == 0) result = PyLong_FromLongLong(total);
done:
    free(sizes);
    free(job.first);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    if (have_validity) PyBuffer_Release(&validity);
    return result;
}

#if HAVE_THREADS
static struct timespec modified_at(const struct stat *st) {
#ifdef __APPLE__
    return st->st_mtimespec;
#else
    return st->st_mtim;
#endif
}

/* Whether file f is not as it was when the call began (its size, or its time of change); *now: its
 * size now (-1: it is gone). */
static int file_changed(const FileInput *f, int64_t *now) {
    struct stat st;
    if (stat(f->path, &st) < 0) {
        *now = -1;
        return 1;
    }
    struct timespec m = modified_at(&st);
    *now = st.st_size;
    return st.st_size != f->size || m.tv_sec != f->mtime.tv_sec || m.tv_nsec != f->mtime.tv_nsec;
}

/* The 1-based line of byte offset at in the file (its \n before it, plus one). */
static long long line_of(const char *path, int64_t at) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    uint8_t buf[1 << 16];
    long long line = 1;
    for (int64_t pos = 0; pos < at;) {
        int64_t want = at - pos < (int64_t)sizeof buf ? at - pos : (int64_t)sizeof buf;
        int64_t got = read_at(fd, buf, want, pos);
        if (got <= 0) break;
        for (const uint8_t *p = buf, *end = buf + got; (p = memchr(p, '\n', (size_t)(end - p))); p++) line++;
        pos += got;
    }
    close(fd);
    return line;
}
#endif

/* count_files(paths, formats, field, block, progress): count the documents of the files, in order:
 * by format (FILE_*), every line of a text file, every paragraph, the whole file, or every line's
 * field of a .jsonl file; block: bytes of a unit (0: chosen); progress: None or a callable given
 * the bytes done. Returns the bytes read. */
static PyObject *Counter_count_files(Counter *self, PyObject *args) {
#if !HAVE_THREADS
    PyErr_SetString(PyExc_NotImplementedError, "reading files in C needs POSIX threads");
    return NULL;
#else
    PyObject *paths, *formats, *progress;
    const char *field;
    Py_ssize_t nfield, block;
    if (!PyArg_ParseTuple(args, "O!O!s#nO", &PyList_Type, &paths, &PyList_Type, &formats, &field, &nfield, &block,
                          &progress) ||
        check_usable(self) < 0)
        return NULL;
    Py_ssize_t nfiles = PyList_GET_SIZE(paths);
    if (PyList_GET_SIZE(formats) != nfiles) {
        PyErr_SetString(PyExc_ValueError, "one format per path");
        return NULL;
    }
    PyObject *result = NULL;
    Job job;
    memset(&job, 0, sizeof job);
    job.kind = JOB_FILES;
    job.field = (const uint8_t *)field;
    job.nfield = (size_t)nfield;
    job.files = calloc((size_t)(nfiles ? nfiles : 1), sizeof(FileInput));
    if (!job.files) return PyErr_NoMemory();
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < nfiles; k++) {
        PyObject *encoded;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, k), &encoded)) goto done;
        job.files[k].path = strdup(PyBytes_AS_STRING(encoded));
        Py_DECREF(encoded);
        if (!job.files[k].path) {
            PyErr_NoMemory();
            goto done;
        }
        long format = PyLong_AsLong(PyList_GET_ITEM(formats, k));
        if (format == -1 && PyErr_Occurred()) goto done;
        if (format < FILE_TEXT || format > FILE_WHOLE) {
            PyErr_Format(PyExc_ValueError, "unknown file format %ld", format);
            goto done;
        }
        job.files[k].format = (int)format;
        struct stat st;
        if (stat(job.files[k].path, &st) < 0) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, PyList_GET_ITEM(paths, k));
            goto done;
        }
        job.files[k].size = st.st_size;
        job.files[k].mtime = modified_at(&st);
        total += st.st_size;
    }
    if (block <= 0) { /* units: 8 per thread over the whole input, 1 to 16 MB each */
        block = (Py_ssize_t)(total / (8 * self->nthreads) + 1);
        if (block < (1 << 20)) block = 1 << 20;
        if (block > (1 << 24)) block = 1 << 24;
    }
    int64_t nunits = 0;
    for (Py_ssize_t k = 0; k < nfiles; k++) nunits += (job.files[k].size + block - 1) / block;
    job.units = malloc((size_t)(nunits ? nunits : 1) * sizeof(FileUnit));
    if (!job.units) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < nfiles; k++)
        for (int64_t at = 0; at < job.files[k].size; at += block)
            job.units[job.nunits++] =
                (FileUnit){(int)k, at, at + block < job.files[k].size ? at + block : job.files[k].size};
    if (run_job(self, &job, progress) < 0 || spill_failed(self)) goto done;
    InputError *e = &job.error;
    /* a file written to while it was read: its counts are of no one version of it (and its other
     * errors may be its writer's doing), so this comes first */
    for (Py_ssize_t k = 0; k < nfiles; k++) {
        int64_t now;
        int changed = file_changed(&job.files[k], &now);
        if (!changed && !(e->kind == ERR_CHANGED && job.units[e->unit].file == k)) continue;
        self->broken = 1;
        if (now < 0)
            PyErr_Format(PyExc_ValueError, "%S: " CHANGED_WHILE_READ " (%lld bytes when counting began, gone now)%s",
                         PyList_GET_ITEM(paths, k), (long long)job.files[k].size, CHANGED_HINT);
        else
            PyErr_Format(PyExc_ValueError, "%S: " CHANGED_WHILE_READ " (%lld bytes when counting began, %lld now)%s",
                         PyList_GET_ITEM(paths, k), (long long)job.files[k].size, (long long)now, CHANGED_HINT);
        goto done;
    }
    if (e->kind == ERR_NONE) {
        if (after_call(self) == 0) result = PyLong_FromLongLong(total);
        goto done;
    }
    if (e->kind == ERR_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *path = PyList_GET_ITEM(paths, job.units[e->unit].file);
    const char *name = job.files[job.units[e->unit].file].path;
    if (e->kind == ERR_IO) {
        errno = e->io_errno;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
        goto done;
    }
    long long line = line_of(name, e->kind == ERR_JSON ? e->line_start : e->where);
    if (e->kind == ERR_UTF8) {
        uint8_t bad[4] = {0};
        int fd = open(name, O_RDONLY);
        int64_t got = fd >= 0 ? read_at(fd, bad, 4, e->where) : 0;
        if (fd >= 0) close(fd);
        for (int64_t k = 0; k < got; k++)
            if (bad[k] == '\n') got = k + 1; /* (as much of the line as Python shows) */
        PyObject *shown = PyBytes_FromStringAndSize((const char *)bad, got > 0 ? got : 0);
        if (shown) {
            PyErr_Format(PyExc_ValueError, "%S, line %lld: not UTF-8 text (byte %lld: %R; " NOT_UTF8_HINT ")", path,
                         line, (long long)e->where, shown);
            Py_DECREF(shown);
        }
        goto done;
    }
    PyObject *field_obj = PyUnicode_DecodeUTF8(field, nfield, "replace");
    if (!field_obj) goto done;
    switch (e->json_error) {
    case JSON_NO_FIELD:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: no field %R in the JSON %stext_column= names the field)",
                     path, line, field_obj, e->detail);
        break;
    case JSON_NOT_STRING:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: field %R is not a string (a JSON %s)", path, line, field_obj,
                     e->detail);
        break;
    case JSON_SURROGATE:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: field %R holds a lone surrogate (\\ud800-\\udfff), which is "
                     "not text", path, line, field_obj);
        break;
    case JSON_TOO_DEEP:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: not JSON (nested deeper than %d levels)", path, line,
                     JSON_MAX_DEPTH);
        break;
    default:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: not JSON (%s)", path, line, e->detail);
    }
    Py_DECREF(field_obj);
done:
    if (job.files)
        for (Py_ssize_t k = 0; k < nfiles; k++) free(job.files[k].path);
    free(job.files);
    free(job.units);
    return result;
#endif
}

/* A writable buffer that owns its memory (malloc), with items of one type: what result() gives. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t nitems, itemsize;
    char format[2];
} Buffer;

static int Buffer_getbuffer(Buffer *self, Py_buffer *view, int flags) {
    view->obj = Py_NewRef(self);
    view->buf = self->data;
    view->len = self->nitems * self->itemsize;
    view->readonly = 0; /* (the merge loop may work in the symbols: trainer.train_flat_merges(consume=True)) */
    view->itemsize = self->itemsize; /* (as array.array gives it, whatever the flags) */
    view->format = (flags & PyBUF_FORMAT) ? self->format : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? &self->nitems : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &self->itemsize : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static void Buffer_dealloc(Buffer *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t Buffer_len(Buffer *self) { return self->nitems; }

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};
static PySequenceMethods Buffer_as_sequence = {.sq_length = (lenfunc)Buffer_len};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_count.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A buffer of uint8 ('B'), int32 ('i') or int64 ('q') items that owns its memory.",
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_as_sequence = &Buffer_as_sequence,
};

/* A Buffer over data (taken: freed with it; shrunk to nitems first). */
static PyObject *buffer_take(void *data, Py_ssize_t nitems, Py_ssize_t itemsize, char format) {
    void *shrunk = realloc(data, (size_t)(nitems ? nitems : 1) * (size_t)itemsize);
    if (shrunk) data = shrunk;
    Buffer *b = PyObject_New(Buffer, &BufferType);
    if (!b) {
        free(data);
        return NULL;
    }
    b->data = data;
    b->nitems = nitems;
    b->itemsize = itemsize;
    b->format[0] = format;
    b->format[1] = 0;
    return (PyObject *)b;
}

/* What training tells its user about the text (chunk_counting.warn_if_mostly_control): its
 * characters, and its control characters (Unicode's Cc but \t \n \v \f \r and U+0085, all below
 * U+00A0), each counted, in order of first appearance. */
#define CONTROL_LIMIT 0xA0
typedef struct {
    uint64_t characters;
    uint64_t control[CONTROL_LIMIT];
    int order[CONTROL_LIMIT], norder;
} TextTally;

static void tally_text(TextTally *x, const uint8_t *q, uint64_t len, uint64_t count) {
    uint64_t characters = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint8_t b = q[i];
        int cp = -1;
        characters += (b & 0xC0) != 0x80;
        if (b < 0x20 ? b < 0x09 || b > 0x0D : b == 0x7F) cp = b;
        else if (b == 0xC2 && i + 1 < len && q[i + 1] <= 0x9F && q[i + 1] != 0x85) cp = q[i + 1]; /* U+0080.. */
        if (cp < 0) continue;
        if (!x->control[cp]) x->order[x->norder++] = cp;
        x->control[cp] += count;
    }
    x->characters += characters * count;
}

/* The tables merged in order of first appearance (see the top of the file) into out buffers. */
static int merge_tables(Table *tables, int ntables, uint8_t *symbols, int32_t *lengths, int64_t *counts,
                        Py_ssize_t *nchunks, Py_ssize_t *nsymbols, TextTally *text) {
    size_t *seg = calloc((size_t)ntables, sizeof(size_t));
    if (!seg) return -2;
    Py_ssize_t k = 0, s = 0;
    for (;;) {
        int best = -1;
        for (int t = 0; t < ntables; t++) {
            Table *tab = &tables[t];
            while (seg[t] < tab->nsegs &&
                   (seg[t] + 1 < tab->nsegs ? tab->segs[seg[t] + 1].arena_offset : tab->len) ==
                       tab->segs[seg[t]].arena_offset)
                seg[t]++; /* (empty segments) */
            if (seg[t] < tab->nsegs && (best < 0 || tab->segs[seg[t]].unit < tables[best].segs[seg[best]].unit))
                best = t;
        }
        if (best < 0) break;
        Table *tab = &tables[best];
        uint64_t off = tab->segs[seg[best]].arena_offset;
        uint64_t end = seg[best] + 1 < tab->nsegs ? tab->segs[seg[best] + 1].arena_offset : tab->len;
        while (off < end) {
            uint8_t *record = tab->arena + off;
            uint64_t len, count = load_count(record);
            const uint8_t *q = record_chunk(record, &len);
            off = (uint64_t)(q - tab->arena) + len;
            if (!count) continue; /* emitted from an earlier unit of another thread */
            if (ntables > 1) {
                uint64_t h = hash_bytes(q, len);
                for (int t = 0; t < ntables; t++) {
                    if (t == best) continue;
                    uint64_t *slot = table_slot(&tables[t], q, len, h);
                    if (!*slot) continue;
                    uint8_t *other = tables[t].arena + (*slot & OFFSET_MASK) - 1;
                    count += load_count(other);
                    store_count(other, 0);
                }
            }
            if (len > INT32_MAX) {
                free(seg);
                return -1;
            }
            tally_text(text, q, len, count);
            memcpy(symbols + s, q, len);
            s += (Py_ssize_t)len;
            lengths[k] = (int32_t)len;
            counts[k++] = (int64_t)count;
        }
        seg[best]++;
    }
    free(seg);
    *nchunks = k;
    *nsymbols = s;
    return 0;
}

/* (characters, [(control character, count)]) of a TextTally. */
static PyObject *text_tally_result(const TextTally *text) {
    PyObject *control = PyList_New(text->norder);
    for (int k = 0; control && k < text->norder; k++) {
        int cp = text->order[k];
        PyObject *pair = Py_BuildValue("(CK)", cp, (unsigned long long)text->control[cp]);
        if (!pair) Py_CLEAR(control);
        else PyList_SET_ITEM(control, k, pair);
    }
    if (!control) return NULL;
    return Py_BuildValue("(KN)", (unsigned long long)text->characters, control);
}

static PyObject *Counter_result(Counter *self, PyObject *unused) {
    if (check_usable(self) < 0) return NULL;
    if (self->spill && self->spill->runs) {
        PyErr_SetString(PyExc_RuntimeError, "the counts were spilled to disk: merge_spills(), then write_spilled()");
        return NULL;
    }
    uint64_t records = 0, bytes = 0;
    for (int t = 0; t < self->ntables; t++) {
        records += self->tables[t].records;
        bytes += self->tables[t].chunk_bytes;
    }
    uint8_t *symbols = malloc(bytes ? bytes : 1);
    int32_t *lengths = malloc((records ? records : 1) * sizeof(int32_t));
    int64_t *counts = malloc((records ? records : 1) * sizeof(int64_t));
    if (!symbols || !lengths || !counts) {
        free(symbols);
        free(lengths);
        free(counts);
        return PyErr_NoMemory();
    }
    Py_ssize_t nchunks = 0, nsymbols = 0;
    int status;
    TextTally *text = calloc(1, sizeof(TextTally));
    if (!text) {
        free(symbols);
        free(lengths);
        free(counts);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    status = merge_tables(self->tables, self->ntables, symbols, lengths, counts, &nchunks, &nsymbols, text);
    for (int t = 0; t < self->ntables; t++) table_free(&self->tables[t]);
    Py_END_ALLOW_THREADS
    free(self->tables);
    self->tables = NULL;
    if (status < 0) {
        free(symbols);
        free(lengths);
        free(counts);
        free(text);
        if (status == -2) return PyErr_NoMemory();
        PyErr_SetString(PyExc_OverflowError, "a chunk of 2**31 bytes or more");
        return NULL;
    }
    PyObject *s = buffer_take(symbols, nsymbols, 1, 'B');
    PyObject *l = buffer_take(lengths, nchunks, 4, 'i');
    PyObject *c = buffer_take(counts, nchunks, 8, 'q');
    PyObject *tally = text_tally_result(text);
    free(text);
    if (!s || !l || !c || !tally) {
        Py_XDECREF(s);
        Py_XDECREF(l);
        Py_XDECREF(c);
        Py_XDECREF(tally);
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NNNOO)", s, l, c, PyTuple_GET_ITEM(tally, 0), PyTuple_GET_ITEM(tally, 1));
    Py_DECREF(tally);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* The counter's spilling (see Spill)                                                          */

static uint64_t tables_bytes(Counter *self) {
    uint64_t total = 0;
    for (int t = 0; self->tables && t < self->ntables; t++)
        total += (self->tables[t].mask + 1) * 8 + self->tables[t].cap;
    return total;
}

/* Every table's records to disk (the caller's thread, between calls). -1 when that fails. */
static int spill_all(Counter *self) {
    for (int t = 0; t < self->ntables; t++)
        if (table_spill(&self->tables[t], NULL) < 0) return -1;
    return 0;
}

/* After a call: with a spill folder, all the tables to disk when together they hold more than the
 * limit. 0, or -1 with an exception set. */
static int after_call(Counter *self) {
    if (!self->spill) return 0;
    int status = 0;
    if (!self->spill->error && tables_bytes(self) > self->spill->limit) {
        Py_BEGIN_ALLOW_THREADS
        status = spill_all(self);
        Py_END_ALLOW_THREADS
    }
    if (status < 0 || self->spill->error) {
        self->broken = 1;
        errno = self->spill->error;
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
        return -1;
    }
    return 0;
}

/* A failure to spill during a call: an OSError naming the spill folder (1), or 0. */
static int spill_failed(Counter *self) {
    if (!self->spill || !self->spill->error) return 0;
    self->broken = 1;
    PyErr_Clear();
    errno = self->spill->error;
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
    return 1;
}

static PyObject *Counter_spill_to(Counter *self, PyObject *args) {
    PyObject *dir;
    unsigned long long limit, table_limit;
    if (!PyArg_ParseTuple(args, "O&KK", PyUnicode_FSConverter, &dir, &limit, &table_limit)) return NULL;
    if (check_usable(self) < 0 || self->spill) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "this counter spills already");
        Py_DECREF(dir);
        return NULL;
    }
#if !HAVE_THREADS
    Py_DECREF(dir);
    PyErr_SetString(PyExc_NotImplementedError, "spilling counts to disk needs POSIX threads and files");
    return NULL;
#else
    Spill *s = calloc(1, sizeof(Spill));
    if (s) s->dir = strdup(PyBytes_AS_STRING(dir));
    Py_DECREF(dir);
    if (!s || !s->dir) {
        free(s);
        return PyErr_NoMemory();
    }
    s->limit = limit ? limit : 1;
    self->spill = s;
    for (int k = 0; k < self->ntables; k++) {
        Table *t = &self->tables[k];
        if (k < self->nthreads && !t->records && !t->nsegs) { /* (an unused thread table: sized for its limit) */
            table_free(t);
            if (table_init_limited(t, table_limit ? table_limit : 1, s) < 0) {
                self->broken = 1;
                return PyErr_NoMemory();
            }
        }
        t->spill = s;
        if (k < self->nthreads) t->limit = table_limit ? table_limit : 1;
    }
    Py_RETURN_NONE;
#endif
}

#if HAVE_THREADS
static PyObject *Counter_merge_spills(Counter *self, PyObject *unused) {
    if (check_usable(self) < 0) return NULL;
    if (!self->spill) {
        PyErr_SetString(PyExc_RuntimeError, "this counter does not spill (spill_to)");
        return NULL;
    }
    Spill *s = self->spill;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = spill_all(self);
    for (int t = 0; t < self->ntables; t++) table_free(&self->tables[t]);
    if (status == 0) status = merge_runs(s, self->nthreads);
    Py_END_ALLOW_THREADS
    free(self->tables);
    self->tables = NULL;
    self->merged = 1;
    if (status < 0 || s->error) {
        self->broken = 1;
        errno = s->error ? s->error : EIO;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, s->dir);
    }
    return Py_BuildValue("(KK)", (unsigned long long)s->chunks, (unsigned long long)s->symbols);
}

typedef struct {
    PartReader *readers;
    int *heap, n;
} PartHeap;

static inline int reader_before(const PartReader *a, const PartReader *b) {
    return key_before(a->r.unit, a->r.number, b->r.unit, b->r.number);
}

static void heap_sift(PartHeap *h, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, least = i;
        if (l < h->n && reader_before(&h->readers[h->heap[l]], &h->readers[h->heap[least]])) least = l;
        if (r < h->n && reader_before(&h->readers[h->heap[r]], &h->readers[h->heap[least]])) least = r;
        if (least == i) return;
        int x = h->heap[i];
        h->heap[i] = h->heap[least];
        h->heap[least] = x;
        i = least;
    }
}

#define MERGE_FAN_IN 128 /* sorted files merged at once: bounds the open files and their buffers */

/* Sorted partition files part-first .. part-(first + count - 1) merged by key, each removed once
 * read: into the counts file's three sections (out[3], text tallied, *written counted), or, when
 * out is NULL, into a new sorted partition file (part-N, N from s->parts). */
static int merge_parts(Spill *s, int64_t first, int count, SectionWriter *out, TextTally *text, uint64_t *written) {
    int failed = 0, err = 0;
    PartHeap h = {calloc((size_t)(count ? count : 1), sizeof(PartReader)), malloc((size_t)(count ? count : 1) * sizeof(int)), 0};
    SectionWriter file = {-1, 0, NULL, 0};
    char path[4096];
    if (!h.readers || !h.heap) failed = 1, err = ENOMEM;
    for (int k = 0; h.readers && k < count; k++) h.readers[k].fd = -1;
    if (!out && !failed) {
        spill_path(path, sizeof path, s, "part", ATOMIC_NEXT(&s->parts));
        file.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        file.buf = malloc(1 << 20);
        if (file.fd < 0 || !file.buf) failed = 1, err = file.fd < 0 ? errno : ENOMEM;
    }
    for (int k = 0; k < count && !failed; k++) {
        spill_path(path, sizeof path, s, "part", first + k);
        PartReader *pr = &h.readers[k];
        pr->fd = open(path, O_RDONLY);
        if (pr->fd < 0) {
            failed = 1, err = errno;
            break;
        }
        unlink(path); /* (its blocks are freed when it is closed) */
        int got = part_next(pr);
        if (got < 0) failed = 1, err = errno;
        else if (got) h.heap[h.n++] = k;
    }
    for (int i = h.n / 2 - 1; i >= 0 && !failed; i--) heap_sift(&h, i);
    while (h.n > 0 && !failed) {
        PartReader *pr = &h.readers[h.heap[0]];
        if (out) {
            int64_t n = (int64_t)pr->r.count;
            int32_t len = (int32_t)pr->r.len;
            if (pr->r.len > INT32_MAX || pr->r.count > INT64_MAX) {
                failed = 1, err = EOVERFLOW;
                break;
            }
            tally_text(text, pr->r.chunk, pr->r.len, pr->r.count);
            failed = section_put(&out[0], &n, 8) < 0 || section_put(&out[1], &len, 4) < 0 ||
                     section_put(&out[2], pr->r.chunk, pr->r.len) < 0;
            (*written)++;
        } else {
            uint8_t head[RECORD_HEAD], *e = put_varint(put_varint(put_varint(put_varint(head, pr->r.unit), pr->r.number), pr->r.count), pr->r.len);
            failed = section_put(&file, head, (size_t)(e - head)) < 0 || section_put(&file, pr->r.chunk, pr->r.len) < 0;
        }
        if (failed) {
            err = errno;
            break;
        }
        int got = part_next(pr);
        if (got < 0) {
            failed = 1, err = errno;
            break;
        }
        if (!got) h.heap[0] = h.heap[--h.n];
        if (h.n) heap_sift(&h, 0);
    }
    if (!out && file.fd >= 0) {
        if (!failed && section_flush(&file) < 0) failed = 1, err = errno;
        if (close(file.fd) < 0 && !failed) failed = 1, err = errno;
    }
    free(file.buf);
    for (int k = 0; h.readers && k < count; k++) {
        if (h.readers[k].fd >= 0) close(h.readers[k].fd);
        free(h.readers[k].buf);
    }
    free(h.readers);
    free(h.heap);
    if (failed) spill_fail(s, err);
    return failed ? -1 : 0;
}

/* The sorted partition files merged by key into the counts file's sections (fd, their offsets):
 * MERGE_FAN_IN files at a time into new sorted files while there are more than that, then all of
 * them into the sections. */
static int write_sections(Spill *s, int fd, uint64_t at_counts, uint64_t at_lengths, uint64_t at_symbols,
                          TextTally *text) {
    int64_t first = 0;
    while (s->parts - first > MERGE_FAN_IN) {
        int64_t end = s->parts; /* (the files this round makes come after end) */
        for (; first < end; first += MERGE_FAN_IN) {
            int count = (int)(end - first < MERGE_FAN_IN ? end - first : MERGE_FAN_IN);
            if (merge_parts(s, first, count, NULL, NULL, NULL) < 0) return -1;
        }
        first = end;
    }
    SectionWriter out[3] = {{fd, at_counts, malloc(1 << 20), 0}, {fd, at_lengths, malloc(1 << 20), 0},
                            {fd, at_symbols, malloc(1 << 20), 0}};
    uint64_t written = 0;
    int failed = !out[0].buf || !out[1].buf || !out[2].buf;
    if (failed) spill_fail(s, ENOMEM);
    if (!failed) failed = merge_parts(s, first, (int)(s->parts - first), out, text, &written) < 0;
    for (int k = 0; k < 3 && !failed; k++)
        if (section_flush(&out[k]) < 0) {
            spill_fail(s, errno);
            failed = 1;
        }
    if (!failed && written != s->chunks) {
        spill_fail(s, EIO);
        failed = 1;
    }
    for (int k = 0; k < 3; k++) free(out[k].buf);
    return failed ? -1 : 0;
}

static PyObject *Counter_write_spilled(Counter *self, PyObject *args) {
    int fd;
    unsigned long long at_counts, at_lengths, at_symbols;
    if (!PyArg_ParseTuple(args, "iKKK", &fd, &at_counts, &at_lengths, &at_symbols)) return NULL;
    if (!self->merged || !self->spill || self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "write_spilled() comes after a merge_spills() that succeeded");
        return NULL;
    }
    TextTally *text = calloc(1, sizeof(TextTally));
    if (!text) return PyErr_NoMemory();
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = write_sections(self->spill, fd, at_counts, at_lengths, at_symbols, text);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        free(text);
        self->broken = 1;
        errno = self->spill->error;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
    }
    PyObject *result = text_tally_result(text);
    free(text);
    return result;
}
#endif


static PyObject *Counter_memory(Counter *self, PyObject *unused) {
    uint64_t total = 0, records = 0;
    if (self->tables)
        for (int t = 0; t < self->ntables; t++) {
            total += (self->tables[t].mask + 1) * 8 + self->tables[t].cap + self->tables[t].capsegs * sizeof(Segment);
            records += self->tables[t].records;
        }
    return Py_BuildValue("(KK)", (unsigned long long)total, (unsigned long long)records);
}

static PyObject *Counter_get_bytes(Counter *self, void *closure) { return PyLong_FromLongLong(self->bytes); }
static PyObject *Counter_get_documents(Counter *self, void *closure) { return PyLong_FromLongLong(self->documents); }
static PyObject *Counter_get_spilled(Counter *self, void *closure) {
    return PyLong_FromLongLong(self->spill ? self->spill->runs : 0);
}

static PyMethodDef Counter_methods[] = {
    {"count_texts", (PyCFunction)Counter_count_texts, METH_VARARGS,
     "count_texts(list of str): count each str as a document, on the threads; returns its UTF-8 bytes."},
    {"count_column", (PyCFunction)Counter_count_column, METH_VARARGS,
     "count_column(offsets, offsets64, data, validity, validity_offset, nrows, row_base, source): count the rows of "
     "an Arrow string column (its buffers; offsets from its first row); returns the bytes counted."},
    {"count_files", (PyCFunction)Counter_count_files, METH_VARARGS,
     "count_files(paths, formats, field, block, progress): count the documents of the files, read in blocks by the "
     "threads: by format (0: each line of a text file, 1: the field of each line of a .jsonl file, 2: each paragraph "
     "of a text file, 3: the whole text file); progress(bytes done) or None. Returns the bytes read."},
    {"result", (PyCFunction)Counter_result, METH_NOARGS,
     "result() -> (symbols, lengths, counts, characters, control): every distinct chunk in order of first appearance, "
     "as three Buffers (uint8 bytes end to end, int32 lengths, int64 counts), the text's characters and its control "
     "characters [(char, count)] in order of first appearance; the counter's memory is given back."},
    {"memory", (PyCFunction)Counter_memory, METH_NOARGS, "memory() -> (bytes the tables hold, records in them)."},
    {"spill_to", (PyCFunction)Counter_spill_to, METH_VARARGS,
     "spill_to(folder, limit, table_limit): from now on a thread's table that would grow past table_limit bytes "
     "writes its records to a run file in folder and starts again empty, and after each call all the tables do so when "
     "together they hold more than limit bytes (a partition's merge then gets limit / threads)."},
#if HAVE_THREADS
    {"merge_spills", (PyCFunction)Counter_merge_spills, METH_NOARGS,
     "merge_spills() -> (chunks, symbol bytes): every table to disk, then each hash partition of the runs merged into a "
     "file of its distinct chunks sorted by first appearance; the counter's tables are given back."},
    {"write_spilled", (PyCFunction)Counter_write_spilled, METH_VARARGS,
     "write_spilled(fd, counts_offset, lengths_offset, symbols_offset) -> (characters, control): the merged partitions "
     "in order of first appearance into the open file fd: int64 counts, int32 lengths, the chunks' bytes, each section "
     "at its offset."},
#endif
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Counter_getset[] = {
    {"bytes", (getter)Counter_get_bytes, NULL, "UTF-8 bytes counted so far", NULL},
    {"documents", (getter)Counter_get_documents, NULL, "documents counted so far", NULL},
    {"spilled", (getter)Counter_get_spilled, NULL, "run files written to the spill folder so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_count.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counter(scanner, num_threads): chunk counts over calls of count_texts / count_column / count_files.",
    .tp_new = Counter_new,
    .tp_dealloc = (destructor)Counter_dealloc,
    .tp_methods = Counter_methods,
    .tp_getset = Counter_getset,
};

static PyObject *set_part_bytes(PyObject *self, PyObject *args) {
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "|n:part_bytes", &n)) return NULL;
    if (n > 0) part_bytes = n;
    return PyLong_FromSsize_t(part_bytes);
}

/* first_bad_record(symbols, lengths, counts): the first record of three flat buffers (a counts file's:
 * uint8 symbols, int32 lengths, int64 counts) that no counting makes, as (record, what), or None:
 * "empty" (a chunk of no bytes), "negative length", "negative count", "not UTF-8" (its chunk's bytes, each chunk on its
 * own), "past the symbols" (the lengths run past them; record: the first that does), "short" (the
 * lengths end before the symbols do; record: the number of records). counts_file.py says why. */
static PyObject *first_bad_record(PyObject *module, PyObject *args) {
    Py_buffer symbols, lengths, counts;
    if (!PyArg_ParseTuple(args, "y*y*y*", &symbols, &lengths, &counts)) return NULL;
    PyObject *result = NULL;
    if (lengths.len % 4 || counts.len % 8 || lengths.len / 4 != counts.len / 8) {
        PyErr_SetString(PyExc_ValueError, "first_bad_record: one int32 length and one int64 count per record");
        goto done;
    }
    Py_ssize_t n = lengths.len / 4, k = 0, at = 0;
    const char *what = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (; k < n; k++) {
        int32_t len;
        int64_t count;
        memcpy(&len, (const uint8_t *)lengths.buf + 4 * k, 4);
        memcpy(&count, (const uint8_t *)counts.buf + 8 * k, 8);
        if (len <= 0) {
            what = len == 0 ? "empty" : "negative length";
            break;
        }
        if (len > symbols.len - at) {
            what = "past the symbols";
            break;
        }
        if (count < 0) {
            what = "negative count";
            break;
        }
        if (utf8_invalid_at((const uint8_t *)symbols.buf + at, len) >= 0) {
            what = "not UTF-8";
            break;
        }
        at += len;
    }
    if (!what && at != symbols.len) what = "short";
    Py_END_ALLOW_THREADS
    result = what ? Py_BuildValue("(ns)", k, what) : Py_NewRef(Py_None);
done:
    PyBuffer_Release(&symbols);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&counts);
    return result;
}

static PyMethodDef module_methods[] = {
    {"first_bad_record", first_bad_record, METH_VARARGS,
     "first_bad_record(symbols, lengths, counts): (record, what) of the first record no counting makes (see "
     "counts_file.py), or None."},
    {"part_bytes", set_part_bytes, METH_VARARGS,
     "part_bytes(n=0): the length (UTF-8 bytes) from which a document is counted in parts on several threads; n > 0 "
     "sets it (for tests). Returns the value in force."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunk_count", "Counting the chunks of a corpus in C (see hf_bbpe/native_counting.py).",
    -1, module_methods,
};

PyMODINIT_FUNC PyInit__chunk_count(void) {
    if (PyType_Ready(&CounterType) < 0 || PyType_Ready(&BufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Counter", (PyObject *)&CounterType) < 0 ||
        PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddIntConstant(m, "READS_FILES", HAVE_THREADS) < 0) { /* (count_files needs POSIX) */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
