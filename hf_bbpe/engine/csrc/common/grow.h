/*
 * Growing buffers: the one rule by which the kernels' byte and id buffers grow (doubled until they
 * hold what is asked), so that appending n items costs O(n) in all.
 */
#ifndef HF_BBPE_COMMON_GROW_H
#define HF_BBPE_COMMON_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* The capacity that holds need items: cap (first when 0) doubled until it does. */
static inline size_t grown_capacity(size_t cap, size_t need, size_t first) {
    size_t c = cap ? cap : first;
    while (c < need) c *= 2;
    return c;
}

/* Room for need bytes in *buf (*cap of them): grown (from 64 KB) by realloc. 0, or -1 when out of
 * memory (*buf kept as it was). */
static inline int grow_bytes(unsigned char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = grown_capacity(*cap, need, (size_t)1 << 16);
    unsigned char *b = realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

#endif
