/*
 * Tracking by scans (included by loop.c only): the scans of the arena that count the untracked
 * pairs and give the ones that reach the threshold a record.
 */
#ifndef HF_BBPE_MERGE_TRACK_H
#define HF_BBPE_MERGE_TRACK_H

#include "merge/pairs.h"

/* ------------------------------------------------------------------ tracking by scans */

/* Calls BODY for each adjacent pair of symbols in the arena: p, q positions, x, y ids, c count. */
#define FOR_EACH_ADJACENT(s, BODY)                                                          \
    do {                                                                                    \
        const Arena *ar_ = &(s)->ar;                                                        \
        uint64_t p = 0;                                                                     \
        while (p < ar_->n) {                                                                \
            int64_t c = word_count((s), p);                                                 \
            uint64_t q = next_set(ar_->starts, p);                                          \
            int32_t x = read_id(ar_, p, q - p);                                             \
            while (q < ar_->n && !bit(ar_->word_starts, q)) {                               \
                uint64_t r_ = next_set(ar_->starts, q);                                     \
                int32_t y = read_id(ar_, q, r_ - q);                                        \
                BODY                                                                        \
                p = q;                                                                      \
                q = r_;                                                                     \
                x = y;                                                                      \
            }                                                                               \
            p = q;                                                                          \
        }                                                                                   \
    } while (0)

#define SCAN_AHEAD 16 /* pairs a scan of pristine ids reads ahead of the one it counts */

/* FOR_EACH_ADJACENT, and while the arena is pristine (token ids, nothing merged: SuperBPE's stage 2
   and extend) the same pairs in the same order read straight from the int32 input word by word,
   without the bitmaps; there AHEAD_BODY runs first for the pair SCAN_AHEAD ids further on (its
   ids ax, ay; across a word's end it may be no pair: only for prefetching), so that the tables
   that BODY reads at random are fetched in time. */
#define FOR_EACH_PAIR(s, AHEAD_BODY, BODY)                                                  \
    do {                                                                                    \
        if ((s)->pristine) {                                                                \
            const int32_t *ids_ = (const int32_t *)(s)->ar.bytes;                           \
            uint64_t nsym_ = (s)->ar.n / 4, at_ = 0;                                        \
            for (int64_t w_ = 0; w_ < (s)->nwords; w_++) {                                  \
                int64_t c = (s)->wcount[w_];                                                \
                uint64_t end_ = at_ + (uint64_t)(s)->lengths[w_];                           \
                for (uint64_t k_ = at_; k_ + 1 < end_; k_++) {                              \
                    if (k_ + SCAN_AHEAD + 1 < nsym_) {                                      \
                        int32_t ax = ids_[k_ + SCAN_AHEAD], ay = ids_[k_ + SCAN_AHEAD + 1]; \
                        AHEAD_BODY                                                          \
                    }                                                                       \
                    uint64_t p = k_ * 4;                                                    \
                    int32_t x = ids_[k_], y = ids_[k_ + 1];                                 \
                    BODY                                                                    \
                }                                                                           \
                at_ = end_;                                                                 \
            }                                                                               \
        } else {                                                                            \
            FOR_EACH_ADJACENT(s, BODY);                                                     \
        }                                                                                   \
    } while (0)

/* Keep only the candidates of part `part` of `parts` (the others are counted again later). */
static int candidates_keep_part(CandidateTable *t, uint64_t part, uint64_t parts) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < t->size; i++)
        if (((mix64(t->items[i].key) >> 40) & (parts - 1)) == part) t->items[kept++] = t->items[i];
    t->size = kept;
    return candidates_rehash(t, t->cap);
}

/* A sketch of the pair counts, for scans that would find more candidates than their budget
   (SuperBPE's stage 2: millions of distinct pairs of tokens, most of them rare): every pair's
   count is added to a saturating 8-bit counter chosen by its hash (a count-min sketch of one row,
   up to half a counter per arena byte), so a pair whose counter is below the threshold is below
   it too and need not be counted. Without it such a scan is repeated for every part of the split.
   *passing: the counters at the threshold or above (a bound on the candidates, give or take
   collisions). NULL when out of memory (the scans then go without it). */
static uint8_t *count_sketch(State *s, uint64_t *mask, uint8_t least, uint64_t *passing) {
    uint64_t size = 1 << 16;
    while (size * 2 <= s->ar.n / 2) size *= 2;
    uint8_t *sketch = calloc(size, 1);
    if (!sketch) return NULL;
    *mask = size - 1;
    FOR_EACH_PAIR(s, { PREFETCH(&sketch[mix64(pair_key(ax, ay)) & (size - 1)]); }, {
        if (c > 0) {
            uint8_t *v = &sketch[mix64(pair_key(x, y)) & (size - 1)];
            *v = (uint64_t)*v + (uint64_t)c >= 255 ? 255 : (uint8_t)(*v + c);
        }
        (void)p;
    });
    uint64_t above = 0;
    for (uint64_t i = 0; i < size; i++) above += sketch[i] >= least;
    *passing = above;
    return sketch;
}

/* Track every untracked pair whose count is at least s->threshold: count them in a scan of the
   arena, give them records, then write their positions in one more scan and queue them. Where
   more than a budget of candidates turn up at once, a count sketch leaves out the pairs that
   cannot reach the threshold (count_sketch), and if there are still too many, the pairs are
   split by hash into parts, counted one part per scan (the split grows as the scan goes:
   candidates of the other half are dropped and counted in a later scan). */
static int track_byte_pairs(State *s);

static int track(State *s) {
    if (s->bytes_only) return track_byte_pairs(s);
    CandidateTable t;
    memset(&t, 0, sizeof(t));
    uint64_t budget = s->npairs > min_budget ? s->npairs : min_budget;
    uint64_t first_new = s->npairs;
    uint32_t *last = NULL;  /* per new record: the last position written */
    uint8_t *sketch = NULL;
    uint64_t sketch_mask = 0;
    int sketched = s->threshold <= 1;  /* (a sketch leaves out nothing at 1) */
    uint8_t least = s->threshold < 255 ? (uint8_t)s->threshold : 255;
    int failed = -1;
    /* token ids far more than the budget: the sketch first (their pairs are expected not to fit) */
    int sketch_first = !sketched && s->token_pairs && s->ar.n / 4 > 16 * budget;
restart:
    for (uint64_t part = 0, parts = 1; part < parts; part++) {
        candidates_clear(&t);
        FOR_EACH_PAIR(s, { if (sketch) PREFETCH(&sketch[mix64(pair_key(ax, ay)) & sketch_mask]); }, {
            uint64_t key = pair_key(x, y);
            uint64_t h = mix64(key);
            if (((h >> 40) & (parts - 1)) == part && (!sketch || sketch[h & sketch_mask] >= least) &&
                find_pair(s, x, y) == NONE) {
                uint32_t ci = candidate(&t, key);
                if (ci == NONE) goto done;
                t.items[ci].count += c;
                candidate_position(&t.items[ci], (uint32_t)p);
                if ((t.size > budget || sketch_first) && !sketched) {
                    uint64_t passing = 0;
                    sketched = 1;
                    sketch = count_sketch(s, &sketch_mask, least, &passing);
                    if (sketch) {  /* room for what it lets through (a counter may stand for several pairs) */
                        uint64_t room = passing * 2 < (sketch_mask + 1) / 16 ? passing * 2 : (sketch_mask + 1) / 16;
                        budget = room > budget ? room : budget;
                        goto restart;
                    }
                }
                while (t.size > budget && parts < MAX_PARTS) {
                    parts *= 2;
                    if (candidates_keep_part(&t, part, parts) < 0) goto done;
                }
            }
        });
        if (promote(s, &t) < 0) goto done;
    }
    if (s->npairs > first_new) {
        /* (every new record passed the sketch, when there is one: it was made before the pass that
           counted them, so a pair it stops is no new record and needs no look-up) */
        last = malloc((s->npairs - first_new) * sizeof(uint32_t));
        if (!last) goto done;
        FOR_EACH_PAIR(s, { if (sketch) PREFETCH(&sketch[mix64(pair_key(ax, ay)) & sketch_mask]); }, {
            uint32_t idx = sketch && sketch[mix64(pair_key(x, y)) & sketch_mask] < least ? NONE : find_pair(s, x, y);
            if (idx != NONE && idx >= first_new) append_position(s, &s->pairs[idx], &last[idx - first_new], (uint32_t)p);
            (void)c;
        });
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) goto done;
    failed = 0;
done:
    free(sketch);
    free(last);
    candidates_free(&t);
    return failed;
}

/* Calls BODY for each adjacent pair of bytes while every symbol is one byte: p position, key
   the pair as x << 8 | y, c count. */
#define FOR_EACH_BYTE_PAIR(s, BODY)                                                         \
    do {                                                                                    \
        const Arena *ar_ = &(s)->ar;                                                        \
        for (uint64_t w_ = 0, end_; w_ < ar_->n; w_ = end_) {                               \
            end_ = next_set(ar_->word_starts, w_);                                          \
            int64_t c = word_count((s), w_);                                                \
            for (uint64_t p = w_; p + 1 < end_; p++) {                                      \
                uint32_t key = (uint32_t)ar_->bytes[p] << 8 | ar_->bytes[p + 1];            \
                BODY                                                                        \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* track() while every symbol is a byte (the first scan, before any merge): the 65,536 byte
   pairs index a table directly, instead of hashing every occurrence. Same candidates, in the
   same order (of first appearance), as the general scan finds, and no split into parts. */
static int track_byte_pairs(State *s) {
    CandidateTable t;
    memset(&t, 0, sizeof(t));
    uint32_t *index = malloc(65536 * sizeof(uint32_t));  /* pair -> candidate, then -> new record */
    uint32_t *last = NULL;
    uint64_t first_new = s->npairs;
    int failed = -1;
    if (!index) goto done;
    memset(index, 0xff, 65536 * sizeof(uint32_t));
    FOR_EACH_BYTE_PAIR(s, {
        uint32_t ci = index[key];
        if (ci == NONE && (ci = index[key] = candidate_append(&t, pair_key((int32_t)(key >> 8), (int32_t)(key & 0xFF)))) == NONE)
            goto done;
        t.items[ci].count += c;
        candidate_position(&t.items[ci], (uint32_t)p);
    });
    for (uint64_t i = 0; i < t.size; i++) {  /* tracked by an earlier scan: not a candidate */
        Candidate *c = &t.items[i];
        if (find_pair(s, (int32_t)(c->key >> 32), (int32_t)(uint32_t)c->key) != NONE) c->first = NONE;
    }
    if (promote(s, &t) < 0) goto done;
    if (s->npairs > first_new) {
        last = malloc((s->npairs - first_new) * sizeof(uint32_t));
        if (!last) goto done;
        for (uint64_t i = 0; i < t.size; i++) {
            const Candidate *c = &t.items[i];
            index[(c->key >> 32) << 8 | (c->key & 0xFF)] = c->pair;
        }
        FOR_EACH_BYTE_PAIR(s, {
            uint32_t idx = index[key];
            if (idx != NONE) append_position(s, &s->pairs[idx], &last[idx - first_new], (uint32_t)p);
            (void)c;
        });
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) goto done;
    failed = 0;
done:
    free(index);
    free(last);
    free(t.items);
    return failed;
}

/* Whether some pair that is not tracked has a positive count (only possible below the floor). */
static int untracked_positive(State *s) {
    FOR_EACH_ADJACENT(s, {
        if (c > 0 && find_pair(s, x, y) == NONE) return 1;
    });
    return 0;
}

#endif
