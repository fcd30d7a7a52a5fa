/*
 * The arena of the merge loop (included by loop.c only): the words' symbols end to end in bytes,
 * the bitmaps of where symbols and words start, and each symbol's id in its own bytes (see the
 * top of loop.c).
 */
#ifndef HF_BBPE_MERGE_ARENA_H
#define HF_BBPE_MERGE_ARENA_H

#include "merge/merge.h"

#if defined(__GNUC__) || defined(__clang__)
#define CTZ64(x) __builtin_ctzll(x)
#define CLZ64(x) __builtin_clzll(x)
#else
static inline int CTZ64(uint64_t x) { int k = 0; while (!(x & 1)) x >>= 1, k++; return k; }
static inline int CLZ64(uint64_t x) { int k = 0; while (!(x >> 63)) x <<= 1, k++; return k; }
#endif

/* In registers (the build targets no CPU with a popcount instruction, and libgcc's is a call). */
static inline uint64_t popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (x * 0x0101010101010101ULL) >> 56;
}
#define MAX_ARENA (UINT32_MAX - 64) /* positions are uint32 below NONE, with room for the guard bit */
#define VETOED (INT64_MIN / 2)    /* count of a pair allow_pair rejected: never positive again */
#define MAX_PARTS (1 << 24)       /* a tracking scan is split by 24 bits of the pair's hash at most */
#define AHEAD 16                  /* positions a merge reads ahead of the one it merges */
#define SPAN2_OVERFLOW 0xFFFFu
#define SPAN3_OVERFLOW 0xFFFFFFu

/* ------------------------------------------------------------------------- the arena */

typedef struct {
    uint8_t *bytes;
    uint64_t *starts;      /* bit p: a symbol starts at p; a guard bit at n */
    uint64_t *word_starts; /* bit p: a word starts at p; a guard bit at n */
    uint32_t *word_rank;   /* words that start before position 64 k */
    uint64_t n;
    uint32_t *ovf_keys;    /* overflow ids: position -> id (NONE: empty slot) */
    int32_t *ovf_vals;
    uint64_t ovf_cap, ovf_size;
} Arena;

static inline int bit(const uint64_t *bits, uint64_t p) { return (int)((bits[p >> 6] >> (p & 63)) & 1); }

/* The first set bit after p (the guard bit at n ends the search). */
static inline uint64_t next_set(const uint64_t *bits, uint64_t p) {
    uint64_t q = p + 1, k = q >> 6;
    uint64_t w = bits[k] & (~0ULL << (q & 63));
    while (!w) w = bits[++k];
    return (k << 6) | (uint64_t)CTZ64(w);
}

/* The last set bit before p (called where one exists: p is not the start of its word). */
static inline uint64_t prev_set(const uint64_t *bits, uint64_t p) {
    uint64_t q = p - 1, k = q >> 6;
    uint64_t w = bits[k] & (~0ULL >> (63 - (q & 63)));
    while (!w) w = bits[--k];
    return (k << 6) | (uint64_t)(63 - CLZ64(w));
}

/* The rank of the word that position p belongs to, among the words that are not empty. */
static inline uint64_t word_of(const Arena *ar, uint64_t p) {
    return ar->word_rank[p >> 6] + popcount64(ar->word_starts[p >> 6] & (~0ULL >> (63 - (p & 63)))) - 1;
}

static int32_t ovf_get(const Arena *ar, uint32_t p) {
    uint64_t j = mix64(p) & (ar->ovf_cap - 1);
    while (ar->ovf_keys[j] != p) j = (j + 1) & (ar->ovf_cap - 1);
    return ar->ovf_vals[j];
}

static int ovf_put(Arena *ar, uint32_t p, int32_t id) {
    if ((ar->ovf_size + 1) * 2 > ar->ovf_cap) {
        uint64_t cap = ar->ovf_cap ? ar->ovf_cap * 2 : 1024;
        uint32_t *keys = malloc(cap * sizeof(uint32_t));
        int32_t *vals = malloc(cap * sizeof(int32_t));
        if (!keys || !vals) { free(keys); free(vals); return -1; }
        memset(keys, 0xff, cap * sizeof(uint32_t));
        for (uint64_t i = 0; i < ar->ovf_cap; i++) {
            if (ar->ovf_keys[i] == NONE) continue;
            uint64_t j = mix64(ar->ovf_keys[i]) & (cap - 1);
            while (keys[j] != NONE) j = (j + 1) & (cap - 1);
            keys[j] = ar->ovf_keys[i];
            vals[j] = ar->ovf_vals[i];
        }
        free(ar->ovf_keys);
        free(ar->ovf_vals);
        ar->ovf_keys = keys;
        ar->ovf_vals = vals;
        ar->ovf_cap = cap;
    }
    uint64_t j = mix64(p) & (ar->ovf_cap - 1);
    while (ar->ovf_keys[j] != NONE && ar->ovf_keys[j] != p) j = (j + 1) & (ar->ovf_cap - 1);
    if (ar->ovf_keys[j] == NONE) ar->ovf_size++;
    ar->ovf_keys[j] = p;
    ar->ovf_vals[j] = id;
    return 0;
}

/* Remove position p (linear probing: later entries of the run move back into the gap). */
static void ovf_del(Arena *ar, uint32_t p) {
    uint64_t mask = ar->ovf_cap - 1, j = mix64(p) & mask;
    while (ar->ovf_keys[j] != p) j = (j + 1) & mask;
    uint64_t hole = j;
    for (j = (j + 1) & mask; ar->ovf_keys[j] != NONE; j = (j + 1) & mask) {
        uint64_t home = mix64(ar->ovf_keys[j]) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            ar->ovf_keys[hole] = ar->ovf_keys[j];
            ar->ovf_vals[hole] = ar->ovf_vals[j];
            hole = j;
        }
    }
    ar->ovf_keys[hole] = NONE;
    ar->ovf_size--;
}

/* Whether the symbol at p, spanning span bytes, keeps its id in the overflow table. */
static inline int overflows(const Arena *ar, uint64_t p, uint64_t span) {
    const uint8_t *s = ar->bytes + p;
    if (span == 2) return s[0] == 0xFF && s[1] == 0xFF;
    if (span == 3) return s[0] == 0xFF && s[1] == 0xFF && s[2] == 0xFF;
    return 0;
}

static inline int32_t read_id(const Arena *ar, uint64_t p, uint64_t span) {
    const uint8_t *s = ar->bytes + p;
    if (span == 1) return s[0];
    if (span == 2) {
        uint32_t v = s[0] | (uint32_t)s[1] << 8;
        return v == SPAN2_OVERFLOW ? ovf_get(ar, (uint32_t)p) : (int32_t)v;
    }
    if (span == 3) {
        uint32_t v = s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16;
        return v == SPAN3_OVERFLOW ? ovf_get(ar, (uint32_t)p) : (int32_t)v;
    }
    int32_t v;
    memcpy(&v, s, 4);  /* native, as the int32 input is */
    return v;
}

/* Write id x (a merge's, so span >= 2) for the symbol at p. */
static inline int write_id(Arena *ar, uint64_t p, uint64_t span, int32_t x) {
    uint8_t *s = ar->bytes + p;
    uint32_t v = (uint32_t)x;
    if (span == 2 || span == 3) {
        uint32_t limit = span == 2 ? SPAN2_OVERFLOW : SPAN3_OVERFLOW;
        if (v >= limit) {
            memset(s, 0xFF, span);
            return ovf_put(ar, (uint32_t)p, x);
        }
        s[0] = (uint8_t)v;
        s[1] = (uint8_t)(v >> 8);
        if (span == 3) s[2] = (uint8_t)(v >> 16);
        return 0;
    }
    memcpy(s, &x, 4);
    return 0;
}

#endif
