/*
 * Threads as the kernels use them (_chunk_count and _chunk_bpe): HAVE_THREADS (pthreads, with GCC
 * or Clang on Unix; else one thread, the caller's), the atomics of their work sharing, and a set
 * of threads started over an array of arguments and joined.
 */
#ifndef HF_BBPE_COMMON_THREADS_H
#define HF_BBPE_COMMON_THREADS_H

#include <stddef.h>
#include <stdlib.h>

#if (defined(__unix__) || defined(__APPLE__)) && (defined(__GNUC__) || defined(__clang__))
#include <pthread.h>
#define HAVE_THREADS 1
#define ATOMIC_NEXT(p) __atomic_fetch_add(p, 1, __ATOMIC_RELAXED)
#define ATOMIC_ADD(p, v) __atomic_fetch_add(p, v, __ATOMIC_RELAXED)
#define ATOMIC_GET(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define ATOMIC_SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define ATOMIC_ACQUIRE(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)        /* a value another thread published */
#define ATOMIC_RELEASE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE) /* published after what came before */
#else /* one thread, the caller's */
#define HAVE_THREADS 0
#define ATOMIC_NEXT(p) ((*(p))++)
#define ATOMIC_ADD(p, v) (*(p) += (v))
#define ATOMIC_GET(p) (*(p))
#define ATOMIC_SET(p, v) (*(p) = (v))
#define ATOMIC_ACQUIRE(p) (*(p))
#define ATOMIC_RELEASE(p, v) (*(p) = (v))
#endif

typedef void *(*ThreadMain)(void *);

/* Threads that run main(args + k * size) (size 0: all on the same argument). */
typedef struct {
    ThreadMain main;
    char *args;
    size_t size;
    int from, n;
    unsigned char *started; /* started[k]: thread k runs */
    int nstarted;
#if HAVE_THREADS
    pthread_t *ids;
#endif
} Threads;

/* Start a thread for each k in [from, n); one that cannot be had is skipped (see threads_join).
 * 0, or -1 when out of memory (none started). Without HAVE_THREADS none starts. */
static inline int threads_start(Threads *t, ThreadMain main, void *args, size_t size, int from, int n) {
    t->main = main;
    t->args = args;
    t->size = size;
    t->from = from;
    t->n = n;
    t->nstarted = 0;
    t->started = calloc((size_t)(n > 0 ? n : 1), 1);
#if HAVE_THREADS
    t->ids = malloc((size_t)(n > 0 ? n : 1) * sizeof(pthread_t));
    if (!t->started || !t->ids) {
        free(t->started);
        free(t->ids);
        t->started = NULL;
        t->ids = NULL;
        return -1;
    }
    for (int k = from; k < n; k++)
        if (pthread_create(&t->ids[k], NULL, main, t->args + (size_t)k * size) == 0) t->started[k] = 1, t->nstarted++;
#else
    if (!t->started) return -1;
#endif
    return 0;
}

/* Wait for every started thread, in order of k; with run_rest, run main here for each k that got
 * no thread, in its turn. Frees what threads_start took. */
static inline void threads_join(Threads *t, int run_rest) {
    for (int k = t->from; t->started && k < t->n; k++) {
#if HAVE_THREADS
        if (t->started[k]) {
            pthread_join(t->ids[k], NULL);
            continue;
        }
#endif
        if (run_rest) t->main(t->args + (size_t)k * t->size);
    }
    free(t->started);
    t->started = NULL;
#if HAVE_THREADS
    free(t->ids);
    t->ids = NULL;
#endif
}

#endif
