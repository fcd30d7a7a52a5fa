/*
 * The work of a counting call: the documents of its units counted (texts, long texts' parts, Arrow
 * rows; files.c reads files), on the counter's threads that take units in input order.
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
#include "count/json.h"
#include "count/table.h"

/* Note the first error in input order (unit, then position); later units are not started. */
void job_error_at(Job *job, const InputError *found) {
#if HAVE_THREADS
    pthread_mutex_lock(&job->lock);
#endif
    InputError *e = &job->error;
    if (e->kind == ERR_NONE || found->unit < e->unit || (found->unit == e->unit && found->where < e->where)) {
        *e = *found;
        if (found->unit < job->stop_after) ATOMIC_RELEASE(&job->stop_after, found->unit);
    }
#if HAVE_THREADS
    pthread_mutex_unlock(&job->lock);
#endif
}

void job_error(Job *job, int64_t unit, int kind, int64_t where) {
    InputError e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.unit = unit;
    e.where = where;
    job_error_at(job, &e);
}

/* Count the chunks of one document (valid UTF-8 with a readable byte after it; bytes up to readable
 * may be read). Some of its chunks may still wait (see count_chunks): drain y before its text goes. */
int count_document(const PretokScanner *scanner, Tally *y, const uint8_t *p, Py_ssize_t n,
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
        if (grow_bytes(&w->scratch, &w->scratchcap, (size_t)n + PAD) < 0) return -1;
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
            int met = sync_meet(next->marks, next->nmarks, &stop, ends[c]);
            if (met == SYNC_NO_MARK) {
                next = NULL; /* past every mark: on to the end of the document */
            } else if (met >= 0) {
                part->met = met;
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


static void *work(void *arg) {
    Worker *w = arg;
    Job *job = w->job;
    for (;;) {
        int64_t u = ATOMIC_NEXT(&job->next_unit);
        if (u >= job->nunits || u > ATOMIC_ACQUIRE(&job->stop_after)) break;
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
int run_job(Counter *self, Job *job, PyObject *progress) {
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
    Threads threads;
    PyThreadState *state = PyEval_SaveThread();
    pthread_mutex_lock(&job->lock); /* (held: no worker can note its end before running is set) */
    threads_start(&threads, work, workers, sizeof(Worker), 0, nthreads);
    job->running = threads.nstarted;
    if (threads.nstarted == 0) { /* no thread to be had: here */
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
        int64_t done = ATOMIC_ACQUIRE(&job->bytes_done);
        if (PyErr_CheckSignals() < 0) failed = 1;
        if (!failed && progress != Py_None && done != reported) {
            PyObject *r = PyObject_CallFunction(progress, "L", (long long)done);
            if (!r) failed = 1;
            Py_XDECREF(r);
            reported = done;
        }
        if (failed) ATOMIC_RELEASE(&job->stop_after, (int64_t)-1);
        state = PyEval_SaveThread();
        pthread_mutex_lock(&job->lock);
    }
    pthread_mutex_unlock(&job->lock);
    threads_join(&threads, 0);
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

