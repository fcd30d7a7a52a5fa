/*
 * What the C kernels share: mix64, the finaliser of MurmurHash3 (every input bit affects every
 * output bit), for open-addressing tables keyed by a pair of 32-bit token ids packed into 64
 * bits, used by _chunk_bpe.c (merge-rank lookup) and _merge_loop.c (pair table); and PREFETCH,
 * a hint to fetch memory that a loop will read soon.
 */
#ifndef HF_BBPE_HASH_H
#define HF_BBPE_HASH_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

#endif
