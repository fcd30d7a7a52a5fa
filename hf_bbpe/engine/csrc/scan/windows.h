/*
 * The window scanners (included by scanners.c only): the chunk starts of 64 bytes of UTF-8 at once
 * from class masks, with SSE2 and, on x86-64, again with AVX-512 (see the top of scanners.c).
 */
#ifndef HF_BBPE_SCAN_WINDOWS_H
#define HF_BBPE_SCAN_WINDOWS_H

#if defined(__GNUC__) || defined(__clang__)
#define LAST_SET_BIT(mask) (63 - __builtin_clzll(mask))
#else
INLINE int LAST_SET_BIT(uint64_t mask) {
    int k = 0;
    while (mask >>= 1) k++;
    return k;
}
#endif

#ifdef __SSE2__
/* Window scanners: a pattern on a window of UTF-8 text, the chunk boundaries of the 64 bytes
 * from a chunk start from class masks of the whole window at once (bit k for the byte at k),
 * instead of one chunk after another with a branch on each chunk's kind and end, as far as the
 * window holds ASCII and letters (most of most text: the other characters outside ASCII end it).
 * The chunks from a position depend only on the text from there on (no pattern looks behind),
 * so the window is read as if the text began at its start. Boundaries are given up to the
 * first other character outside ASCII (or one the window cuts), or up to a run of whitespace
 * that reaches it (whose end is not known), or an apostrophe too near it. The hypothesis tests
 * hold each window scanner to the regex module. */
typedef struct {
    /* letters (every byte of a letter outside ASCII), digits, \r\n, ' ', \s, apostrophes;
     * with cased (o200k), the letters' cases: upper (U only: Lu, Lt), lower (W only: Ll) and
     * caseless (both: Lm, Lo), and slashes */
    uint64_t L, N, NL, SP, S, AP, upper, lower, caseless, slash;
    int lim; /* the window's usable length: bits at lim and after are clear */
} WindowClasses;

INLINE uint64_t lanes16(__m128i m, int q) { return (uint64_t)(unsigned)_mm_movemask_epi8(m) << (16 * q); }
INLINE uint64_t below_bit(int k) { return k >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1; }

/* The first byte past a run of the bits of m from k on (64 if the run reaches the window's end). */
INLINE int run_past(uint64_t m, int k) {
    uint64_t rest = ~m >> k;
    return rest ? k + FIRST_SET_BIT(rest) : 64;
}

/* The classes of the 64 bytes from s, bit k for the byte at s + k, before characters outside ASCII
 * are read: the lead bytes of those (0xC0 and up; lead3: of 3 or 4 bytes, 0xE0 and up; lead4: of 4,
 * 0xF0 and up), ASCII letters (L), upper-case ones (UP, with
 * cased), digits (N), \r\n (NL), ' ' (SP), ' ' \t \r \n (S), control characters (CTL),
 * apostrophes (AP) and slashes (SL, with cased). */
typedef struct {
    uint64_t lead, lead3, lead4, L, N, NL, SP, S, AP, CTL, UP, SL;
} ByteMasks;

/* ByteMasks 16 bytes at a time with SSE2. */
INLINE void byte_masks_sse2(const uint8_t *s, int cased, ByteMasks *m) {
    uint64_t lead = 0, lead3 = 0, lead4 = 0, L = 0, N = 0, NL = 0, SP = 0, S = 0, AP = 0, CTL = 0, UP = 0, SL = 0;
    for (int q = 0; q < 4; q++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + 16 * q));
        __m128i d = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
        L |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8('z' - 'a')), d), q);
        if (cased) {
            d = _mm_sub_epi8(v, _mm_set1_epi8('A'));
            UP |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8('Z' - 'A')), d), q);
            SL |= lanes16(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')), q);
        }
        d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
        N |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d), q);
        __m128i nl = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
        __m128i sp = _mm_cmpeq_epi8(v, _mm_set1_epi8(' '));
        NL |= lanes16(nl, q);
        SP |= lanes16(sp, q);
        S |= lanes16(_mm_or_si128(_mm_or_si128(nl, sp), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))), q);
        CTL |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v), q);
        AP |= lanes16(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')), q);
        /* (signed: 0xC0 and up are -64 .. -1) */
        __m128i high = _mm_cmplt_epi8(v, _mm_setzero_si128());
        lead |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xBF)), high), q);
        lead3 |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xDF)), high), q);
        lead4 |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xEF)), high), q);
    }
    *m = (ByteMasks){lead, lead3, lead4, L, N, NL, SP, S, AP, CTL, UP, SL};
}

#if WIDE_WINDOWS
/* ByteMasks of all 64 bytes at once with AVX-512 BW: each class is one compare into a mask. */
WIDE_TARGET INLINE void byte_masks_avx512(const uint8_t *s, int cased, ByteMasks *m) {
    __m512i v = _mm512_loadu_si512((const void *)s);
    m->L = _mm512_cmple_epu8_mask(_mm512_sub_epi8(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), _mm512_set1_epi8('a')),
                                  _mm512_set1_epi8('z' - 'a'));
    m->UP = m->SL = 0;
    if (cased) {
        m->UP = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('A')), _mm512_set1_epi8('Z' - 'A'));
        m->SL = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('/'));
    }
    m->N = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')), _mm512_set1_epi8(9));
    m->NL = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\n')) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\r'));
    m->SP = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(' '));
    m->S = m->NL | m->SP | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\t'));
    m->CTL = _mm512_cmple_epu8_mask(v, _mm512_set1_epi8(0x1F));
    m->AP = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\''));
    m->lead = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xC0));
    m->lead3 = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xE0));
    m->lead4 = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xF0));
}
#endif

/* The characters outside ASCII of len bytes whose lead bytes are leads, in order, below *lim: a
 * letter's bytes join L (and with cased, UP, LO or CL by its case), with others a number's join N;
 * at any other character, or one the window cuts, *lim becomes its position (*stop: 1 for a
 * character that is no letter, 0 for a cut). One loop per length (len a constant): no branch on
 * a character's length, which text mixing 2- and 3-byte characters would mispredict. */
INLINE void window_letters(const uint8_t *s, uint64_t leads, int len, int cased, int others, int *lim, int *stop,
                           uint64_t *L, uint64_t *N, uint64_t *UP, uint64_t *LO, uint64_t *CL) {
    for (leads &= below_bit(*lim); leads; leads &= leads - 1) {
        int q = FIRST_SET_BIT(leads);
        if (q + len > 64) {
            *lim = q;
            *stop = 0;
            return;
        }
        int c = classes[utf8_decode(s + q, len)];
        uint64_t bytes = (((uint64_t)1 << len) - 1) << q;
        if (!(c & LETTER)) {
            if (others && !(c & SPACE)) {
                if (c & NUMBER) *N |= bytes;
                continue;
            }
            *lim = q;
            *stop = 1;
            return;
        }
        *L |= bytes;
        if (cased) {
            if ((c & (UPPERISH | LOWERISH)) == (UPPERISH | LOWERISH)) *CL |= bytes;
            else if (c & UPPERISH) *UP |= bytes;
            else *LO |= bytes;
        }
    }
}

/* The class masks of the window of 64 bytes from s (a chunk start at position base), from its
 * ByteMasks m, of which the first avail bytes are text (the rest, at the text's end, is padding that
 * no mask keeps); 0 when fewer than 8 bytes are usable (the caller takes a chunk the ordinary way).
 * Where the window meets a character outside ASCII that is no letter (with others, GPT-2's runs
 * of any class, one that is \s), *resume is set past it: no window is worth trying before. */
INLINE int window_classes(const uint8_t *s, const ByteMasks *m, Py_ssize_t base, int avail, int cased, int others,
                          WindowClasses *w, Py_ssize_t *resume) {
    uint64_t L = m->L, N = m->N, NL = m->NL, SP = m->SP, S = m->S, AP = m->AP, CTL = m->CTL, UP = m->UP, SL = m->SL;
    uint64_t LO = L & ~UP, CL = 0; /* (ASCII so far) */
    /* a letter outside ASCII is letter bytes (with others, a number is number bytes and any other
     * character but \s is left as neither: punctuation); the window ends at the first other
     * character outside ASCII, or one that it cuts (the loops lower lim to the first of them) */
    int lim = avail, stop = 0;
    if (m->lead) {
        window_letters(s, m->lead & ~m->lead3, 2, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
        if (m->lead3) {
            window_letters(s, m->lead3 & ~m->lead4, 3, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
            if (m->lead4) window_letters(s, m->lead4, 4, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
        }
        if (stop) *resume = base + lim + 1;
    }
    if (lim < 8) return 0;
    uint64_t valid = below_bit(lim);
    for (uint64_t rare = CTL & ~S & valid; rare; rare &= rare - 1) { /* \v, \f, \x1c-\x1f: as the table says */
        int k = FIRST_SET_BIT(rare);
        if ((ctl_spaces >> s[k]) & 1) S |= (uint64_t)1 << k;
    }
    w->L = L & valid; w->N = N & valid; w->NL = NL & valid; w->SP = SP & valid; w->S = S & valid;
    w->AP = AP & valid; w->upper = UP & valid; w->lower = LO & valid; w->caseless = CL & valid;
    w->slash = SL & valid;
    w->lim = lim;
    return 1;
}

/* The chunk ends at the window's starts below cut (bit 0 excepted, where the window begins) into
 * ends, up to room of them; their number. */
INLINE Py_ssize_t window_ends(uint64_t starts, int cut, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room) {
    starts &= below_bit(cut) & ~(uint64_t)1;
    Py_ssize_t count = 0;
    for (; starts && count < room; starts &= starts - 1) ends[count++] = base + FIRST_SET_BIT(starts);
    return count;
}

/* The chunk starts of GPT-4's pattern (and Llama 3's, which cuts whitespace alike but at the end
 * of the text, which no window decides), or with o200k of o200k's, which cuts all but letters
 * as GPT-4's does; with digits 1, numbers digit by digit (Qwen2's: Llama 3's but \p{N}; Tekken's:
 * o200k's but \p{N} and no contractions). A chunk starts:
 * - at a letter that ends no run of letters, unless the character before it joins it: a space or
 *   other \s but \r\n, or a punctuation character that starts a chunk; then there, instead
 *   ([^\r\n\p{L}\p{N}]?+\p{L}++; o200k's X? before its letters);
 * - o200k: also at an upper-case letter (U only) after a lower-case one (W only) in a run of
 *   both cases (X?U*W+C?|X?U+W*C?); a run that mixes caseless letters with cased ones stops the
 *   window at its start;
 * - at a digit after no digit, and every third digit of a run (\p{N}{1,3}+; every digit with
 *   digits 1), and after the run;
 * - at a punctuation character after no punctuation, or at the space before it (' ?[^\s\p{L}\p{N}]++');
 *   the \r\n right after a punctuation run are its own ([\r\n]*+), and a chunk starts after them;
 * - at a run of other whitespace; after its last \r\n (\s*[\r\n]); at its last character when it
 *   has two or more after that (\s+(?!\S)); that last one joins a letter or (a space) a
 *   punctuation run after it, as above;
 * - GPT-4: after a contraction: an apostrophe that starts a chunk, then s, d, m, t or ll, ve, re
 *   in either case (U+017F for s too, as (?i) takes it); o200k: a contraction right after a
 *   letter (C?) belongs to the letters' chunk, and a chunk starts after it. */
INLINE uint64_t gpt4_family_starts(const uint8_t *s, const WindowClasses *w, int o200k, int contractions, int digits,
                                   int *cut_out) {
    const uint64_t L = w->L, N = w->N, NL = w->NL, SP = w->SP, S = w->S, AP = w->AP;
    const uint64_t O = below_bit(w->lim) & ~(L | N | S);
    uint64_t starts = 1;
    /* the line breaks right after a punctuation run are its own (a chunk starts after them at
     * whatever follows, by the rules below) */
    uint64_t absorbed = NL & ~(NL + (NL & (O << 1)));
    uint64_t W = S & ~absorbed; /* whitespace of its own */
    int cut = w->lim;
    if (o200k && ((absorbed << 1) & w->slash)) /* [\r\n/]*: a slash after them is theirs too; not here */
        cut = LAST_SET_BIT(O & ~(O << 1) & below_bit(FIRST_SET_BIT((absorbed << 1) & w->slash)));
    /* punctuation */
    uint64_t o_start = O & ~(O << 1), spaced = o_start & (SP << 1);
    uint64_t o_alone = o_start & ~spaced; /* a punctuation character that starts a chunk */
    starts |= (spaced >> 1) | o_alone;
    /* letters */
    uint64_t l_start = L & ~(L << 1), joined = l_start & (((W & ~NL) | o_alone) << 1);
    starts |= (joined >> 1) | (l_start & ~joined); /* (what follows a run starts a chunk by its own rule) */
    if (o200k) {
        uint64_t cased = w->upper | w->lower, mixed = w->caseless & ((cased << 1) | (cased >> 1));
        int run = mixed ? LAST_SET_BIT(l_start & below_bit(FIRST_SET_BIT(mixed) + 1)) : 64;
        if (run < cut) cut = run;
        starts |= w->upper & (w->lower << 1);
    }
    /* digits, three at a time (or one) */
    uint64_t n_start = digits == 1 ? N : N & ~(N << 1);
    starts |= n_start | (~N & (N << 1) & below_bit(w->lim));
    for (uint64_t runs = digits == 1 ? 0 : n_start; runs; runs &= runs - 1) {
        int a = FIRST_SET_BIT(runs), e = run_past(N, a);
        for (int k = a + 3; k < e; k += 3) starts |= (uint64_t)1 << k;
    }
    /* whitespace */
    uint64_t w_start = W & ~(W << 1);
    starts |= w_start;
    for (uint64_t runs = w_start & (W >> 1); runs; runs &= runs - 1) { /* runs of two or more */
        int a = FIRST_SET_BIT(runs), e = run_past(W, a);
        if (a >= cut) break;
        if (e >= w->lim) { cut = a; break; } /* its end (and with it its chunks) is not known */
        uint64_t breaks = NL & below_bit(e) & ~below_bit(a);
        int rest = breaks ? LAST_SET_BIT(breaks) + 1 : a; /* after its last line break */
        if (rest < e) starts |= (uint64_t)1 << rest;
        if (e - rest >= 2) starts |= (uint64_t)1 << (e - 1);
    }
    /* contractions */
    int after = -1; /* where the last one ended: in o200k the letter before is its own, no letters' */
    for (uint64_t quotes = contractions ? AP & o_alone & (o200k ? L << 1 : ~(uint64_t)0) : 0; quotes; quotes &= quotes - 1) {
        int k = FIRST_SET_BIT(quotes);
        if (o200k && k == after) continue;
        if (k + 3 > cut) { if (k < cut) cut = k; break; }
        uint8_t c = s[k + 1] | 0x20, d = s[k + 2] | 0x20;
        int len = c == 's' || c == 'd' || c == 'm' || c == 't' ? 2
                  : (c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e') ||
                    (s[k + 1] == 0xC5 && s[k + 2] == 0xBF) /* U+017F */ ? 3 : 0;
        if (!len) continue;
        if (k + len >= 64) { cut = k; break; }
        /* (a case change inside it starts nothing; in o200k the letters before take it) */
        starts &= ~(below_bit(k + len) & ~below_bit(o200k ? k : k + 1));
        starts |= (uint64_t)1 << (k + len);
        after = k + len;
    }
    *cut_out = cut;
    return starts;
}

/* The chunk starts of GPT-2's pattern, '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++
 * |\s++$|\s+(?!\S)|\s. A chunk starts:
 * - at every run of letters, of numbers, of punctuation (in or outside ASCII alike: a run is of
 *   one class), unless a space before it joins it: the last character of a run of whitespace,
 *   when that is ' ';
 * - at a run of whitespace, and at its last character (\s+(?!\S), then \s or the space that joins);
 * - after a contraction: an apostrophe that starts a chunk, then s, d, m, t or ll, ve, re (lower
 *   case only: the pattern has no (?i)). */
INLINE uint64_t gpt2_starts(const uint8_t *s, const WindowClasses *w, int *cut_out) {
    const uint64_t L = w->L, N = w->N, W = w->S, O = below_bit(w->lim) & ~(L | N | W);
    uint64_t runs = (L & ~(L << 1)) | (N & ~(N << 1)) | (O & ~(O << 1));
    uint64_t w_start = W & ~(W << 1), w_last = W & ~(W >> 1);
    int cut = w->lim;
    if ((W >> (w->lim - 1)) & 1) cut = LAST_SET_BIT(w_start); /* a run that reaches the end: unknown */
    uint64_t joined = runs & ((w_last & w->SP) << 1);
    uint64_t starts = 1 | w_start | w_last | (runs & ~joined);
    for (uint64_t quotes = w->AP & runs & ~joined; quotes; quotes &= quotes - 1) {
        int k = FIRST_SET_BIT(quotes);
        if (k + 3 > cut) { if (k < cut) cut = k; break; }
        uint8_t c = s[k + 1], d = s[k + 2];
        int len = c == 's' || c == 'd' || c == 'm' || c == 't' ? 2
                  : (c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e') ? 3 : 0;
        if (!len) continue;
        if (k + len >= 64) { cut = k; break; }
        starts = (starts & ~((uint64_t)1 << (k + 1))) | ((uint64_t)1 << (k + len));
    }
    *cut_out = cut;
    return starts;
}

/* The chunk starts of SuperBPE's stage-2 pattern as an isolated Split (see superbpe_stage2): every
 * match starts a chunk and so does the text after it. Matches:
 * - \p{N}{1,3}: at a digit after no digit and every third digit of a run; a chunk starts after the run;
 * - ' ?[^\s\p{L}\p{N}]{2,}[\r\n/]*': at a run of two or more punctuation characters, or at the
 *   space before it; the \r\n right after the run are its own, and a chunk starts after them;
 * - ' +(?!\S)': at a run of spaces (' ' only) of two or more, or of one before other whitespace;
 *   before other whitespace the whole run, else all but its last space, where a chunk starts.
 * What the window cannot tell (what follows its end) only hides chunk starts after every start it
 * finds, which is safe; but a slash after the line breaks of a punctuation run is the run's
 * ([\r\n/]* takes it, and more), not the start of another: the window stops before such a run. */
INLINE uint64_t superbpe_stage2_starts(const WindowClasses *w, int *cut_out) {
    const uint64_t valid = below_bit(w->lim), N = w->N, SP = w->SP, S = w->S, NL = w->NL;
    const uint64_t O = valid & ~(w->L | N | S);
    int cut = w->lim;
    uint64_t starts = 1;
    /* digits */
    uint64_t n_start = N & ~(N << 1);
    starts |= n_start | (~N & (N << 1) & valid);
    for (uint64_t runs = n_start; runs; runs &= runs - 1) {
        int a = FIRST_SET_BIT(runs), e = run_past(N, a);
        for (int k = a + 3; k < e; k += 3) starts |= (uint64_t)1 << k;
    }
    /* punctuation runs of two or more, their line breaks after them */
    uint64_t pairs = O & (O >> 1), runs2 = pairs | (pairs << 1);
    uint64_t r_start = runs2 & ~(runs2 << 1), spaced = r_start & (SP << 1);
    uint64_t m_start = (r_start & ~spaced) | (spaced >> 1);
    uint64_t absorbed = NL & ~(NL + (NL & (runs2 << 1))), taken = runs2 | absorbed;
    starts |= m_start | (~taken & (taken << 1) & valid);
    uint64_t slashed = (absorbed << 1) & w->slash;
    if (slashed) cut = LAST_SET_BIT(m_start & below_bit(FIRST_SET_BIT(slashed)));
    /* runs of spaces */
    uint64_t sp_start = SP & ~(SP << 1), after = ~SP & (SP << 1) & valid;
    starts |= sp_start & (SP >> 1);                  /* two or more */
    starts |= sp_start & ~(SP >> 1) & (S >> 1);      /* one, before other whitespace */
    starts |= after & S;                             /* after a whole run */
    starts |= ((after & ~S) >> 1) & SP & (SP << 1);  /* at the last space a run of two or more gives back */
    *cut_out = cut;
    return starts;
}

/* Each pattern's window scanner: the ends of up to room chunks from s (a chunk start at position
 * base; 64 readable bytes, of which the first avail are text), as far as the window can tell, into
 * ends; their number (0: the window cannot tell one). A window that the text's end cuts (avail <
 * 64, its padding after) tells as much as one that a character it cannot classify cuts: what comes
 * after lim is unknown to it either way, so the last chunk is left to the chunk-by-chunk scanner,
 * which knows the end of the text. */
#define WINDOW_SCANNER(ATTR, NAME, MASKS, CASED, OTHERS, STARTS)                                   \
    ATTR static Py_ssize_t NAME(const uint8_t *s, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room, \
                                Py_ssize_t *resume, int avail) {                                    \
        if (!window_ok) {                                                                           \
            *resume = PY_SSIZE_T_MAX;                                                               \
            return 0;                                                                               \
        }                                                                                           \
        ByteMasks m;                                                                                \
        MASKS(s, CASED, &m);                                                                        \
        WindowClasses w;                                                                            \
        if (!window_classes(s, &m, base, avail, CASED, OTHERS, &w, resume)) return 0;               \
        int cut;                                                                                    \
        uint64_t starts = STARTS;                                                                   \
        return window_ends(starts, cut, ends, base, room);                                          \
    }
/* (SUFFIX names the instance: _wide for AVX-512) */
#define WINDOW_SCANNERS(ATTR, SUFFIX, MASKS)                                                        \
    WINDOW_SCANNER(ATTR, gpt4_window##SUFFIX, MASKS, 0, 0, gpt4_family_starts(s, &w, 0, 1, 3, &cut)) \
    WINDOW_SCANNER(ATTR, qwen2_window##SUFFIX, MASKS, 0, 0, gpt4_family_starts(s, &w, 0, 1, 1, &cut)) \
    WINDOW_SCANNER(ATTR, o200k_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 1, 3, &cut)) \
    WINDOW_SCANNER(ATTR, tekken_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 0, 1, &cut)) \
    WINDOW_SCANNER(ATTR, superbpe_stage1_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 0, 3, &cut)) \
    WINDOW_SCANNER(ATTR, superbpe_stage2_window##SUFFIX, MASKS, 1, 0, superbpe_stage2_starts(&w, &cut)) /* (cased: for slashes) */ \
    WINDOW_SCANNER(ATTR, gpt2_window##SUFFIX, MASKS, 0, 1, gpt2_starts(s, &w, &cut)) /* (runs of one class, any bytes) */
WINDOW_SCANNERS(, , byte_masks_sse2)
#if WIDE_WINDOWS
WINDOW_SCANNERS(WIDE_TARGET, _wide, byte_masks_avx512)
#endif
#endif

/* no window: the scanner goes chunk by chunk */
INLINE Py_ssize_t no_window(const uint8_t *s, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room, Py_ssize_t *resume,
                            int avail) {
    (void)s; (void)ends; (void)base; (void)room; (void)avail;
    *resume = PY_SSIZE_T_MAX;
    return 0;
}

#endif
