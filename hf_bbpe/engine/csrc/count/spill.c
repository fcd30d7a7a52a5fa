/*
 * Spilling a table to disk: its records into a run file (see spill.h), and the table emptied.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count/count.h"
#include "count/spill.h"
#include "count/table.h"

void spill_fail(Spill *s, int err) {
#if HAVE_THREADS
    int none = 0;
    __atomic_compare_exchange_n(&s->error, &none, err ? err : EIO, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#else
    if (!s->error) s->error = err ? err : EIO;
#endif
}


#if HAVE_THREADS
int write_at(int fd, const uint8_t *p, uint64_t n, uint64_t at) {
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

int run_record(RunWriter *w, int part, const SpillRecord *r) {
    uint8_t head[RECORD_HEAD], *e = put_varint(put_varint(put_varint(put_varint(head, r->unit), r->number), r->count), r->len);
    return run_put(w, part, head, (uint64_t)(e - head)) < 0 || run_put(w, part, r->chunk, r->len) < 0 ? -1 : 0;
}

void spill_path(char *out, size_t room, const Spill *s, const char *kind, int64_t number) {
    snprintf(out, room, "%s/%s-%08lld", s->dir, kind, (long long)number);
}

/* Open run file kind-number for sections of sizes[part] bytes. -1 (errno set) when that fails. */
int run_open(RunWriter *w, const Spill *s, const char *kind, int64_t number, const uint64_t *sizes) {
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

int run_close(RunWriter *w) {
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
int table_spill(Table *t, Front *front) {
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

