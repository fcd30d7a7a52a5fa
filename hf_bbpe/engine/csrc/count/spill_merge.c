/*
 * Merging spilled runs: each hash partition of the run files merged into a sorted partition file
 * (split again while too large), then the partitions merged by key into a counts file's sections.
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
        uint64_t cap = grown_capacity(m->cap, need, 1 << 16);
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
    if (grow_bytes(buf, cap, (size_t)sec->size + 1) < 0) {
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
        if (p >= SPILL_PARTS || ATOMIC_ACQUIRE(&job->spill->error)) break;
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
int merge_runs(Spill *s, int nthreads) {
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
        Threads threads; /* (all on the one job: each takes the next partition) */
        threads_start(&threads, merge_work, &job, 0, 0, nthreads);
        if (!threads.nstarted) merge_work(&job);
        threads_join(&threads, 0);
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
        if (grow_bytes(&pr->buf, &pr->cap, (size_t)want) < 0) {
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

#if HAVE_THREADS
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
int write_sections(Spill *s, int fd, uint64_t at_counts, uint64_t at_lengths, uint64_t at_symbols,
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

#endif
