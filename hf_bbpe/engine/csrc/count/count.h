/*
 * What the files of the chunk counter (_chunk_count) share: the counter and its work (units,
 * jobs, workers, a long document's parts), a thread's table and front cache, the limits, and the
 * calls between files. The design is at the top of counter.c.
 */
#ifndef HF_BBPE_COUNT_COUNT_H
#define HF_BBPE_COUNT_COUNT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "common/grow.h"
#include "common/internal.h"
#include "common/parts.h"
#include "common/threads.h"
#include "scan/scanner.h"

#if HAVE_THREADS
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
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

/* A long document is cut into parts for the threads (see count_texts) that hand over to each
 * other (see common/parts.h): part k counts from its last mark on, into a table of its own, and
 * the chunks between the mark part k - 1 met and part k's last mark are then counted into the
 * seam table, in order between the two parts. The tables of the parts after one that met no mark
 * are emptied. */
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
/* What training tells its user about the text (chunk_counting.warn_if_mostly_control): its
 * characters, and its control characters (Unicode's Cc but \t \n \v \f \r and U+0085, all below
 * U+00A0), each counted, in order of first appearance. */
#define CONTROL_LIMIT 0xA0
typedef struct {
    uint64_t characters;
    uint64_t control[CONTROL_LIMIT];
    int order[CONTROL_LIMIT], norder;
} TextTally;
static inline int64_t arrow_offset(const Job *job, int64_t r) {
    return job->offsets64 ? ((const int64_t *)job->offsets)[r] : ((const int32_t *)job->offsets)[r];
}


/* ------------------------------------------------------------------ calls between files */

/* table.c */
HF_INTERNAL int table_init_limited(Table *t, uint64_t limit, Spill *spill);
HF_INTERNAL int table_init(Table *t);
HF_INTERNAL void table_free(Table *t);
HF_INTERNAL int slots_grow(uint64_t **slots_io, uint64_t *mask_io, int *bits_io, const uint8_t *arena, uint64_t len,
                           uint64_t head);
HF_INTERNAL int table_grow(Table *t);
HF_INTERNAL int table_segment(Table *t, int64_t u);
HF_INTERNAL int table_spill(Table *t, Front *front); /* spill.c */

/* tally.c */
HF_INTERNAL uint64_t table_add(Table *t, const uint8_t *p, uint64_t n, uint64_t h);
HF_INTERNAL void front_flush_all(Table *t, Front *front);
HF_INTERNAL int tally_drain(Tally *y);
HF_INTERNAL int count_chunks(Tally *y, const uint8_t *p, Py_ssize_t start, const Py_ssize_t *ends, Py_ssize_t k,
                             const uint8_t *readable);

/* work.c */
HF_INTERNAL void job_error_at(Job *job, const InputError *found);
HF_INTERNAL void job_error(Job *job, int64_t unit, int kind, int64_t where);
HF_INTERNAL int count_document(const PretokScanner *scanner, Tally *y, const uint8_t *p, Py_ssize_t n,
                               const uint8_t *readable);
HF_INTERNAL int run_job(Counter *self, Job *job, PyObject *progress);

/* files.c */
HF_INTERNAL int64_t read_at(int fd, uint8_t *buf, int64_t n, int64_t at);
HF_INTERNAL void run_file(Worker *w, int64_t u);

/* counter.c */
HF_INTERNAL PyObject *Counter_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
HF_INTERNAL void Counter_dealloc(Counter *self);
HF_INTERNAL int check_usable(Counter *self);
HF_INTERNAL PyObject *Counter_count_texts(Counter *self, PyObject *args);
HF_INTERNAL PyObject *Counter_count_column(Counter *self, PyObject *args);
HF_INTERNAL PyObject *Counter_count_files(Counter *self, PyObject *args);
HF_INTERNAL extern Py_ssize_t part_bytes; /* a longer document is cut into parts for the threads */

/* result.c */
HF_INTERNAL void tally_text(TextTally *x, const uint8_t *q, uint64_t len, uint64_t count);
HF_INTERNAL int merge_tables(Table *tables, int ntables, uint8_t *symbols, int32_t *lengths, int64_t *counts,
                             Py_ssize_t *nchunks, Py_ssize_t *nsymbols, TextTally *text);
HF_INTERNAL PyObject *text_tally_result(const TextTally *text);
HF_INTERNAL PyObject *Counter_result(Counter *self, PyObject *unused);
HF_INTERNAL extern PyTypeObject BufferType;

/* module.c */
HF_INTERNAL int after_call(Counter *self);
HF_INTERNAL int spill_failed(Counter *self);

#endif
