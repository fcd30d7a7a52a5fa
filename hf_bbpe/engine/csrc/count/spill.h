/*
 * Spilled counts: the spill folder, the run files' layout and the records in them (varints),
 * shared by spill.c (writing runs) and spill_merge.c (merging them).
 */
#ifndef HF_BBPE_COUNT_SPILL_H
#define HF_BBPE_COUNT_SPILL_H

#include "count/count.h"

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


/* A run file being written: a buffer per section, each written at its running offset. */
typedef struct {
    int fd;
    uint64_t at[SPILL_PARTS];
    uint32_t used[SPILL_PARTS];
    uint8_t *buf;
} RunWriter;
static inline uint64_t record_size(const SpillRecord *r) {
    uint8_t head[RECORD_HEAD];
    return (uint64_t)(put_varint(put_varint(put_varint(put_varint(head, r->unit), r->number), r->count), r->len) - head) + r->len;
}

/* spill.c */
HF_INTERNAL void spill_fail(Spill *s, int err);
HF_INTERNAL int write_at(int fd, const uint8_t *p, uint64_t n, uint64_t at);
HF_INTERNAL int run_record(RunWriter *w, int part, const SpillRecord *r);
HF_INTERNAL void spill_path(char *out, size_t room, const Spill *s, const char *kind, int64_t number);
HF_INTERNAL int run_open(RunWriter *w, const Spill *s, const char *kind, int64_t number, const uint64_t *sizes);
HF_INTERNAL int run_close(RunWriter *w);

/* spill_merge.c */
HF_INTERNAL int merge_runs(Spill *s, int nthreads);
HF_INTERNAL int write_sections(Spill *s, int fd, uint64_t at_counts, uint64_t at_lengths, uint64_t at_symbols,
                               TextTally *text);

#endif
