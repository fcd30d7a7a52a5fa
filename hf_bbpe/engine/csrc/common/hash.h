/*
 * What the C kernels share: mix64, the finaliser of MurmurHash3 (every input bit affects every
 * output bit), for open-addressing tables keyed by a pair of 32-bit token ids packed into 64
 * bits, used by encode/ (merge-rank lookup) and merge/ (pair table); hash_bytes,
 * built on it, which keys count/'s chunk tables by a chunk's bytes; and PREFETCH, a hint
 * to fetch memory that a loop will read soon.
 */
#ifndef HF_BBPE_HASH_H
#define HF_BBPE_HASH_H

#include <stdint.h>
#include <string.h>

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

/* A byte string's hash: mix64 over its 8-byte words (the last one overlapping the one before),
 * or over the few bytes of a short string; reads nothing outside p[0 .. n). */
static inline uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL * (n + 1), w;
    if (n > 8) {
        const uint8_t *last = p + n - 8;
        for (; p < last; p += 8) {
            memcpy(&w, p, 8);
            h = mix64(h ^ w);
        }
        memcpy(&w, last, 8);
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        w = (uint64_t)hi << 32 | lo;
    } else {
        w = n ? (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1] : 0;
    }
    return mix64(h ^ w);
}

#endif
