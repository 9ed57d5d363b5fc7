/* Line shapes at memory speed: the scanner's per-line hot path.
 *
 * A log repeats a few hundred line shapes (a line's bytes with its digits masked) millions of
 * times. A Shapes table walks a buffer's lines once, hashes each line's masked bytes and looks the
 * hash up in a table it keeps across calls: lines of a shape registered QUIET (it matched nothing)
 * are skipped, lines of a CAUSE shape (only cause-evidence patterns match it) are set aside until
 * the scanner says where cause evidence may count (see held), lines of a TALLIED shape (an entry's
 * own line that needs nothing but counting: a warning printed every step on every rank) are counted
 * here, in tallies (see tallies), and every other line is handed back.
 * So the Python side and the regex engines see only lines that can change a result.
 *
 * The table owns no Python objects: a shape is a 64-bit hash, its length, a kind and an id that
 * the caller hands out; the caller keeps what the id stands for.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { KIND_QUIET = 0, KIND_CAUSE = 1, KIND_ACTIVE = 2, KIND_GROUPED = 3, KIND_TALLIED = 4 };

typedef struct {
    uint64_t hash; /* 0: an empty slot (a real hash of 0 is stored as 1) */
    uint32_t length;
    int32_t id;
    int32_t kind;
    int32_t group; /* of a CAUSE shape: which reach its lines are kept in (see held) */
} Slot;

/* A set of KB entries as bits, entry % ENTRY_BITS: two sets that share no bit share no entry. */
enum { ENTRY_BITS = 256 };
typedef struct {
    uint64_t word[ENTRY_BITS / 64];
} Entries;

static inline int entries_meet(const Entries *a, const Entries *b) {
    uint64_t met = 0;
    for (int n = 0; n < ENTRY_BITS / 64; n++) {
        met |= a->word[n] & b->word[n];
    }
    return met != 0;
}

static inline int entries_any(const Entries *a) {
    uint64_t any = 0;
    for (int n = 0; n < ENTRY_BITS / 64; n++) {
        any |= a->word[n];
    }
    return any != 0;
}

static inline void entries_add(Entries *to, const Entries *more) {
    for (int n = 0; n < ENTRY_BITS / 64; n++) {
        to->word[n] |= more->word[n];
    }
}

/* What a shape is registered with beyond its slot (which every line's lookup reads: kept small), by id. */
typedef struct {
    uint64_t named_runs, coded_runs; /* of a GROUPED shape: its digit runs that count (see group_hash) */
    Entries entries; /* of a TALLIED shape: the entries its lines are own lines of (see tallies) */
    Entries supports; /* of a CAUSE or TALLIED shape: the entries its lines may be cause evidence of */
    int16_t rank_start, rank_end; /* of a TALLIED shape: where its lines write their rank (-1: they do not) */
} Registered;

typedef struct {
    Py_ssize_t start, end, index;
    int32_t id, group;
} Held;

typedef struct {
    uint64_t hash;
    uint32_t length;
    int32_t first; /* where its first line is in the call's list */
} Fresh;

/* A tally: the lines of TALLIED shapes between two lines that the caller sees (handed back or
 * held), which the caller may count all at once. Per shape: how many, its first and last line (and
 * which of the tally's lines each is: `ordinal`), and per rank its first and last line's index. */
enum { TALLY_SHAPES = 8, TALLY_RANKS = 32, NO_RANK = -1, TALLY_MIN = 4, MAX_RANK_DIGITS = 9 };
/* TALLY_MIN: a stretch of fewer lines is handed back line by line, as ACTIVE lines are: the caller
 * counts a tally's lines at once, but a tally of one line costs it more than the line would. */

typedef struct {
    long rank;
    Py_ssize_t first, last;
} RankLines;

typedef struct {
    int32_t id;
    Py_ssize_t count;
    Py_ssize_t first_start, first_end, first_index, first_ordinal;
    Py_ssize_t last_start, last_end, last_index, last_ordinal;
    int ranks;
    RankLines rank[TALLY_RANKS];
} Counted;

typedef struct {
    Py_ssize_t start, end, index;
    int32_t id;
} Line;

/* A registration's arguments for a TALLIED or CAUSE shape (see register). */
typedef struct {
    Entries entries, supports;
    int rank_start, rank_end;
} Tallied;

typedef struct {
    Py_ssize_t lines;
    Entries entries; /* its shapes' */
    int shapes;
    Counted shape[TALLY_SHAPES];
    Line first[TALLY_MIN]; /* its first lines, to hand back if no more come */
} Tally;

/* A tally with no lines, as each classify call opens and each close leaves it. */
static inline void empty_tally(Tally *tally) {
    tally->lines = 0;
    tally->entries = (Entries){{0}};
    tally->shapes = 0;
}

typedef struct {
    PyObject_HEAD
    Slot *slots;
    Py_ssize_t mask; /* slots - 1: a power of two, at least twice the limit */
    Py_ssize_t count;
    Py_ssize_t limit;
    Py_ssize_t long_line;
    Held *held; /* the CAUSE lines of the last classify call */
    Py_ssize_t held_count, held_room;
    Fresh *fresh; /* the call's shapes not registered: their repeats point at their first line */
    Py_ssize_t fresh_mask, fresh_count;
    Py_ssize_t lines; /* in the range of the last classify call */
    unsigned char *scratch; /* long_line bytes: a line with its hex ids masked (see masked_hash) */
    Py_ssize_t masked_count; /* shapes registered by their masked hash: none, no masking on a miss */
    Registered *registered; /* by id */
    PyObject *codes; /* the bare codes: a tuple of (digits, boundary before, boundary after) */
    struct Code *code_list; /* the same, read once: a run's search must not call into Python per code */
    Py_ssize_t code_count;
    Tally open; /* the tally of the classify call that its next TALLIED line joins */
    PyObject *tallies; /* the closed tallies of the last classify call, as `tallies` gives them */
    PyObject *out; /* the list the classify call under way returns (borrowed) */
} Shapes;

static const uint64_t ONES = 0x0101010101010101ULL;
static const uint64_t HIGHS = 0x8080808080808080ULL;
static const uint64_t ZEROS = 0x3030303030303030ULL; /* '0' in every byte */

/* '1'..'9' -> '0' in eight bytes at once: a byte is a digit when its xor with '0' is below 10. */
static inline uint64_t mask_digits(uint64_t word) {
    uint64_t x = word ^ ZEROS;
    uint64_t below_ten = ~((x | HIGHS) - 10 * ONES) & ~x & HIGHS;
    uint64_t digits = (below_ten >> 7) * 0xFF;
    return (x & ~digits) ^ ZEROS;
}

/* wyhash's multiply-and-fold: every input bit reaches every output bit. */
static inline uint64_t mix(uint64_t a, uint64_t b) {
    __uint128_t product = (__uint128_t)a * b;
    return (uint64_t)product ^ (uint64_t)(product >> 64);
}

#if defined(__SSE2__)
/* Sixteen bytes with their digits made one, as two words: each byte's offset from '0', raised to at
 * least 9, so that '0'..'9' all read 9 and every other byte keeps a value of its own. Not the words
 * mask_digits makes, but a line's hash only has to agree with the hashes of lines of its length. */
static inline void masked_pair(const unsigned char *at, uint64_t *low, uint64_t *high) {
    __m128i offset = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)at), _mm_set1_epi8('0'));
    __m128i masked = _mm_max_epu8(offset, _mm_set1_epi8(9));
    *low = (uint64_t)_mm_cvtsi128_si64(masked);
    *high = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(masked, masked));
}
#else
static inline void masked_pair(const unsigned char *at, uint64_t *low, uint64_t *high) {
    uint64_t word;
    memcpy(&word, at, 8);
    *low = mask_digits(word);
    memcpy(&word, at + 8, 8);
    *high = mask_digits(word);
}
#endif

/* Two independent lanes of 16 bytes each, one multiply per 16 bytes (wyhash's shape): the
 * multiplies of a long line overlap instead of waiting on each other. */
static uint64_t shape_hash(const unsigned char *line, Py_ssize_t length) {
    uint64_t h = 0x243F6A8885A308D3ULL ^ (uint64_t)length, g = 0x13198A2E03707344ULL;
    uint64_t a, b, c, d;
    Py_ssize_t at = 0;
    for (; at + 32 <= length; at += 32) {
        masked_pair(line + at, &a, &b);
        masked_pair(line + at + 16, &c, &d);
        h = mix(a ^ 0xA0761D6478BD642FULL, b ^ h);
        g = mix(c ^ 0xE7037ED1A0B428DBULL, d ^ g);
    }
    h ^= g;
    for (; at + 8 <= length; at += 8) {
        uint64_t word;
        memcpy(&word, line + at, 8);
        h = mix(mask_digits(word) ^ 0xA0761D6478BD642FULL, h ^ 0xE7037ED1A0B428DBULL);
    }
    if (at < length) {
        uint64_t word = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (length >= 8) {
            /* The line's last eight bytes, shifted down to its tail: one load, the same word as the
             * zero-padded copy below. That copy's byte stores then 8-byte load stalled on store
             * forwarding, a sixth of this function's time. */
            memcpy(&word, line + length - 8, 8);
            word >>= 8 * (8 - (length - at));
        } else
#endif
        {
            memcpy(&word, line + at, (size_t)(length - at)); /* zero padding: masking leaves zeros alone */
        }
        h = mix(mask_digits(word) ^ 0xA0761D6478BD642FULL, h ^ 0xE7037ED1A0B428DBULL);
    }
    h = mix(h, 0x8EBC6AF09C88C6E3ULL);
    return h ? h : 1;
}

/* Hex ids, as triage/engine/hex_ids.py's HEX_ID reads them: at a token start (no letter or digit
 * before), a lowercase UUID or a run of at least ID_DIGITS hex digits in one case, with no letter or
 * digit after. A line's masked hash is that of the line with each id written as "<id>" (and its
 * digits masked), salted apart from plain shapes; 0 for a line that holds no id. */
enum { ID_DIGITS = 20, UUID_LENGTH = 36 };
static const uint64_t MASKED_SALT = 0x5851F42D4C957F2DULL;

static inline int alnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
static inline int lower_hex(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
static inline int upper_hex(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

#if defined(__SSE2__)
/* 0xFF in each byte of `chunk` that is a digit or one of the six letters from `first_letter`. */
static inline __m128i hex_bytes(__m128i chunk, char first_letter) {
    __m128i digit = _mm_sub_epi8(chunk, _mm_set1_epi8('0'));
    __m128i letter = _mm_sub_epi8(chunk, _mm_set1_epi8(first_letter));
    /* unsigned offset <= limit <=> min(offset, limit) == offset */
    return _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit),
                        _mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(5)), letter));
}
#endif

/* How many bytes from `at` on are hex digits of one case (with their digits). */
static Py_ssize_t hex_run(const unsigned char *line, Py_ssize_t at, Py_ssize_t length, int upper) {
    Py_ssize_t end = at;
#if defined(__SSE2__)
    for (; end + 16 <= length; end += 16) {
        __m128i hex = hex_bytes(_mm_loadu_si128((const __m128i *)(line + end)), upper ? 'A' : 'a');
        unsigned other = ~(unsigned)_mm_movemask_epi8(hex) & 0xFFFFu;
        if (other) {
            return end + __builtin_ctz(other) - at;
        }
    }
    if (end < length && length >= 16) {
        /* The last bytes: the line's last 16, their bits from `end` on shifted down (see hex_bits). */
        Py_ssize_t base = length - 16;
        __m128i hex = hex_bytes(_mm_loadu_si128((const __m128i *)(line + base)), upper ? 'A' : 'a');
        unsigned other = (~(unsigned)_mm_movemask_epi8(hex) & 0xFFFFu) >> (end - base);
        return (other ? end + __builtin_ctz(other) : length) - at;
    }
#endif
    while (end < length && (upper ? upper_hex(line[end]) : lower_hex(line[end]))) {
        end++;
    }
    return end - at;
}

static inline int ends_token(const unsigned char *line, Py_ssize_t at, Py_ssize_t length) {
    return at == length || !alnum(line[at]);
}

/* A lowercase UUID's groups: 8-4-4-4-12 hex digits joined by dashes. */
static int uuid_at(const unsigned char *line, Py_ssize_t at, Py_ssize_t length) {
    static const int groups[] = {8, 4, 4, 4, 12};
    if (at + UUID_LENGTH > length || !ends_token(line, at + UUID_LENGTH, length)) {
        return 0;
    }
    for (int n = 0; n < 5; n++) {
        if (hex_run(line, at, length, 0) != groups[n] || (n < 4 && line[at + groups[n]] != '-')) {
            return 0;
        }
        at += groups[n] + 1;
    }
    return 1;
}

/* The length of the id that starts at a token start `at`, or 0. */
static Py_ssize_t id_at(const unsigned char *line, Py_ssize_t at, Py_ssize_t length) {
    Py_ssize_t run = hex_run(line, at, length, 0);
    if (run == 8 && uuid_at(line, at, length)) {
        return UUID_LENGTH;
    }
    if (run < ID_DIGITS || !ends_token(line, at + run, length)) {
        run = hex_run(line, at, length, 1);
    }
    return run >= ID_DIGITS && ends_token(line, at + run, length) ? run : 0;
}

/* Bit n: whether line[at + n] is a hex digit of either case; bytes from `length` on read as not. */
static uint64_t hex_bits(const unsigned char *line, Py_ssize_t at, Py_ssize_t length) {
    Py_ssize_t left = length - at;
    if (left < 64 && length >= 64) {
        /* Never read past the line (it may end the buffer): the line's last 64 bytes, shifted down
         * to its tail, in place of a zero-padded copy (see shape_hash). */
        return hex_bits(line, length - 64, length) >> (64 - left);
    }
    unsigned char tail[64];
    const unsigned char *bytes = line + at;
    if (left < 64) {
        memset(tail, 0, sizeof tail);
        memcpy(tail, bytes, (size_t)left);
        bytes = tail;
    }
    uint64_t bits = 0;
#if defined(__SSE2__)
    for (int n = 0; n < 64; n += 16) {
        /* Either case at once: of all bytes, only 'A'..'F' and 'a'..'f' read 'a'..'f' with bit 5 set. */
        __m128i chunk = _mm_loadu_si128((const __m128i *)(bytes + n));
        __m128i digit = _mm_sub_epi8(chunk, _mm_set1_epi8('0'));
        __m128i letter = _mm_sub_epi8(_mm_or_si128(chunk, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
        __m128i hex = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit),
                                   _mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(5)), letter));
        bits |= (uint64_t)(uint16_t)_mm_movemask_epi8(hex) << n;
    }
#else
    for (int n = 0; n < 64; n++) {
        bits |= (uint64_t)(lower_hex(bytes[n]) || upper_hex(bytes[n])) << n;
    }
#endif
    return bits;
}

/* Every id opens with a run of at least MIN_RUN hex digits (a UUID's first group, a long id's
 * start), so only the tokens holding such a run are read: the runs are found 64 bytes at a time,
 * and the text between ids is copied as it is (shape_hash masks its digits). */
enum { MIN_RUN = 8 }; /* masked_hash finds runs of it in three steps: 1 + 2 + 4 bits over */

static uint64_t masked_hash(const unsigned char *line, Py_ssize_t length, unsigned char *scratch, uint32_t *masked_length) {
    Py_ssize_t out = 0, copied = 0, done = 0, ids = 0;
    uint64_t next = length ? hex_bits(line, 0, length) : 0;
    for (Py_ssize_t block = 0; block < length; block += 64) {
        uint64_t here = next;
        next = block + 64 < length ? hex_bits(line, block + 64, length) : 0;
        /* Bit n: bytes n..n+7 are all hex digits, the next block's bits read as this one's bits 64
         * on (runs of 2, of 4, then of MIN_RUN). */
        __uint128_t both = (__uint128_t)next << 64 | here;
        both &= both >> 1;
        both &= both >> 2;
        uint64_t runs = (uint64_t)(both & both >> 4);
        if (done > block) { /* a token read in the block before may reach into this one */
            runs = done - block < 64 ? runs & (~0ULL << (done - block)) : 0;
        }
        for (; runs; runs = done - block < 64 ? runs & (~0ULL << (done - block)) : 0) {
            /* Each pass reads one token from the run's start on: the run's other bits, up to where the
             * token ends (`done`), are dropped with it. */
            Py_ssize_t at = block + __builtin_ctzll(runs);
            Py_ssize_t start = at;
            while (start > done && alnum(line[start - 1])) {
                start--;
            }
            Py_ssize_t id = start == 0 || !alnum(line[start - 1]) ? id_at(line, start, length) : 0;
            if (id) {
                memcpy(scratch + out, line + copied, (size_t)(start - copied));
                out += start - copied;
                memcpy(scratch + out, "<id>", 4);
                out += 4;
                copied = done = start + id;
                ids++;
                continue;
            }
            for (done = at; done < length && alnum(line[done]);) {
                done++;
            }
        }
    }
    if (!ids) {
        *masked_length = (uint32_t)length;
        return 0;
    }
    memcpy(scratch + out, line + copied, (size_t)(length - copied));
    out += length - copied;
    *masked_length = (uint32_t)out;
    uint64_t hash = shape_hash(scratch, out) ^ MASKED_SALT;
    return hash ? hash : 1;
}

static Slot *find_slot(Shapes *self, uint64_t hash, uint32_t length) {
    Py_ssize_t at = (Py_ssize_t)(hash & (uint64_t)self->mask);
    for (;;) {
        Slot *slot = &self->slots[at];
        if (slot->hash == 0 || (slot->hash == hash && slot->length == length)) {
            return slot;
        }
        at = (at + 1) & self->mask;
    }
}

static Fresh *find_fresh(Fresh *table, Py_ssize_t mask, uint64_t hash, uint32_t length) {
    Py_ssize_t at = (Py_ssize_t)(hash & (uint64_t)mask);
    while (table[at].hash != 0 && (table[at].hash != hash || table[at].length != length)) {
        at = (at + 1) & mask;
    }
    return &table[at];
}

/* The first line of this call with the line's shape: -1 when it is the first (then noted as such,
 * at `position`), else -2 - where that line is. */
static long fresh_shape(Shapes *self, uint64_t hash, uint32_t length, Py_ssize_t position) {
    if (2 * (self->fresh_count + 1) > self->fresh_mask + 1) {
        Py_ssize_t size = self->fresh ? 2 * (self->fresh_mask + 1) : 1024;
        Fresh *grown = PyMem_Calloc((size_t)size, sizeof(Fresh));
        if (grown == NULL) {
            PyErr_NoMemory();
            return LONG_MIN;
        }
        for (Py_ssize_t n = 0; self->fresh && n <= self->fresh_mask; n++) {
            if (self->fresh[n].hash != 0) {
                *find_fresh(grown, size - 1, self->fresh[n].hash, self->fresh[n].length) = self->fresh[n];
            }
        }
        PyMem_Free(self->fresh);
        self->fresh = grown;
        self->fresh_mask = size - 1;
    }
    Fresh *slot = find_fresh(self->fresh, self->fresh_mask, hash, length);
    if (slot->hash != 0) {
        return -2 - (long)slot->first;
    }
    *slot = (Fresh){hash, length, (int32_t)position};
    self->fresh_count++;
    return -1;
}

/* A line's hash with its hex ids masked (0: it holds none) and that masked line's length. */
typedef struct {
    uint64_t hash;
    uint32_t length;
} Masked;

/* Of a line that holds hex ids (`masked`): whether it differs only in them from a registered QUIET
 * line; -1 for a line that holds none. Such a line is never registered as it is (see native_lines),
 * so its own shape is not looked up. */
static int quiet_ids(Shapes *self, const unsigned char *line, Py_ssize_t length, Masked *masked) {
    masked->hash = masked_hash(line, length, self->scratch, &masked->length);
    if (!masked->hash) {
        return -1;
    }
    const Slot *slot = find_slot(self, masked->hash, masked->length);
    return slot->hash != 0 && slot->kind == KIND_QUIET;
}

/* Lines of a GROUPED shape fall into groups, as triage/engine/digit_groups.py keys them: by the digits
 * of its named runs (bit n of named: its n-th run of digits), and of each coded run, its digits if a
 * bare code is in it, else nothing. A code is in a run as Python's `codes.search(line, start, end)`
 * finds it: anywhere in it, or, with a word boundary before (after), only at its start after a
 * character that is no letter, digit or '_' (only at its end). */
static const uint64_t GROUP_SALT = 0x2545F4914F6CDD1DULL;

static inline int word(unsigned char c) { return alnum(c) || c == '_'; }

/* A bare code (see set_codes): its digits point into the bytes of the tuple the table keeps. */
typedef struct Code {
    const char *digits;
    Py_ssize_t size;
    int before, after;
} Code;

static int code_in(const Shapes *self, const unsigned char *line, Py_ssize_t start, Py_ssize_t end) {
    int bounded_before = start == 0 || !word(line[start - 1]);
    for (Py_ssize_t n = 0; n < self->code_count; n++) {
        const Code *code = &self->code_list[n];
        if (code->size > end - start || (code->before && !bounded_before)) {
            continue;
        }
        /* Where it may start: with a boundary before, only at the run's start; with one after, only
         * where it ends the run; else anywhere. */
        Py_ssize_t first = code->after ? end - code->size : start;
        Py_ssize_t last = code->before ? start : end - code->size;
        for (Py_ssize_t at = first; at <= last; at++) {
            if (line[at] == (unsigned char)code->digits[0] && memcmp(line + at, code->digits, (size_t)code->size) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

/* Where the first digit from `at` on is (`length`: none). */
static Py_ssize_t next_digit(const unsigned char *line, Py_ssize_t at, Py_ssize_t length) {
#if defined(__SSE2__)
    for (; at + 16 <= length; at += 16) {
        __m128i offset = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(line + at)), _mm_set1_epi8('0'));
        unsigned digits = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(offset, _mm_set1_epi8(9)), offset));
        if (digits) {
            return at + __builtin_ctz(digits);
        }
    }
#endif
    while (at < length && (line[at] < '0' || line[at] > '9')) {
        at++;
    }
    return at;
}

static uint64_t group_hash(const Shapes *self, const unsigned char *line, Py_ssize_t length, int32_t id) {
    uint64_t named = self->registered[id].named_runs, coded = self->registered[id].coded_runs;
    uint64_t hash = mix((uint64_t)(uint32_t)id ^ GROUP_SALT, 0x9E3779B97F4A7C15ULL);
    int run = 0;
    for (Py_ssize_t at = next_digit(line, 0, length); at < length && run < 64; at = next_digit(line, at, length)) {
        Py_ssize_t start = at;
        while (at < length && line[at] >= '0' && line[at] <= '9') {
            at++;
        }
        int counts = (named >> run & 1) || ((coded >> run & 1) && code_in(self, line, start, at));
        uint64_t digits = 0xCBF29CE484222325ULL; /* FNV-1a over the run's digits, as they are */
        for (Py_ssize_t n = start; counts && n < at; n++) {
            digits = (digits ^ line[n]) * 0x100000001B3ULL;
        }
        hash = mix(hash ^ (counts ? digits : 0), 0xA0761D6478BD642FULL ^ (uint64_t)run);
        run++;
    }
    return hash ? hash : 1;
}

/* The slot of the group of a line of a GROUPED shape: an empty one (hash 0) for a group not registered. */
static const Slot *group_of(Shapes *self, const unsigned char *line, Py_ssize_t length, const Slot *shape) {
    return find_slot(self, group_hash(self, line, length, shape->id), (uint32_t)length);
}

static void Shapes_dealloc(Shapes *self) {
    PyMem_Free(self->slots);
    PyMem_Free(self->held);
    PyMem_Free(self->fresh);
    PyMem_Free(self->scratch);
    PyMem_Free(self->registered);
    Py_XDECREF(self->codes);
    Py_XDECREF(self->tallies);
    PyMem_Free(self->code_list);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Shapes_init(Shapes *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"limit", "long_line", NULL};
    Py_ssize_t limit = 1 << 16, long_line = 16 * 1024;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|nn", names, &limit, &long_line)) {
        return -1;
    }
    if (limit < 1 || limit > (1 << 26) || long_line < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must be in 1..2**26 and long_line >= 0");
        return -1;
    }
    Py_ssize_t size = 2;
    while (size < 2 * limit) {
        size <<= 1;
    }
    PyMem_Free(self->slots);
    self->slots = PyMem_Calloc((size_t)size, sizeof(Slot));
    if (self->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->mask = size - 1;
    self->count = 0;
    self->limit = limit;
    self->long_line = long_line;
    PyMem_Free(self->scratch);
    self->scratch = PyMem_Malloc((size_t)long_line + 1);
    if (self->scratch == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->masked_count = 0;
    PyMem_Free(self->registered);
    self->registered = PyMem_Calloc((size_t)limit, sizeof(Registered));
    if (self->registered == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_XSETREF(self->codes, PyTuple_New(0));
    if (self->codes == NULL) {
        return -1;
    }
    self->code_count = 0;
    Py_XSETREF(self->tallies, PyList_New(0));
    if (self->tallies == NULL) {
        return -1;
    }
    empty_tally(&self->open);
    self->held_count = 0;
    self->lines = 0;
    return 0;
}

static int hold(Shapes *self, Py_ssize_t start, Py_ssize_t end, Py_ssize_t index, const Slot *slot) {
    if (self->held_count == self->held_room) {
        Py_ssize_t room = self->held_room ? 2 * self->held_room : 1024;
        Held *grown = PyMem_Realloc(self->held, (size_t)room * sizeof(Held));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->held = grown;
        self->held_room = room;
    }
    self->held[self->held_count++] = (Held){start, end, index, slot->id, slot->group};
    return 0;
}

/* The open tally, closed: appended to the call's tallies as (lines, parts), each part (id, count,
 * first_index, first_ordinal, first_start, first_end, last_index, last_ordinal, last_start,
 * last_end, ((rank, first_index, last_index), ...)), in the order the shapes first came. */
static int append_line(PyObject *out, Py_ssize_t start, Py_ssize_t end, Py_ssize_t index, long id);

static int close_tally(Shapes *self) {
    Tally *tally = &self->open;
    if (!tally->lines) {
        return 0;
    }
    if (tally->lines < TALLY_MIN) {
        /* Handed back, a line is seen whole: not held as well (held lines are in line order). */
        Py_ssize_t kept = self->held_count;
        while (kept > 0 && self->held[kept - 1].index >= tally->first[0].index) {
            kept--;
        }
        for (Py_ssize_t n = kept; n < self->held_count; n++) {
            int tallied = 0;
            for (Py_ssize_t t = 0; t < tally->lines && !tallied; t++) {
                tallied = self->held[n].index == tally->first[t].index;
            }
            if (!tallied) {
                self->held[kept++] = self->held[n];
            }
        }
        self->held_count = kept;
        int failed = 0;
        for (Py_ssize_t n = 0; n < tally->lines && !failed; n++) {
            const Line *line = &tally->first[n];
            failed = append_line(self->out, line->start, line->end, line->index, line->id) < 0;
        }
        empty_tally(tally);
        return failed ? -1 : 0;
    }
    PyObject *parts = PyTuple_New(tally->shapes);
    if (parts == NULL) {
        return -1;
    }
    for (int n = 0; n < tally->shapes; n++) {
        const Counted *c = &tally->shape[n];
        PyObject *ranks = PyTuple_New(c->ranks);
        if (ranks == NULL) {
            Py_DECREF(parts);
            return -1;
        }
        for (int r = 0; r < c->ranks; r++) {
            PyObject *lines = Py_BuildValue("(lnn)", c->rank[r].rank, c->rank[r].first, c->rank[r].last);
            if (lines == NULL) {
                Py_DECREF(ranks);
                Py_DECREF(parts);
                return -1;
            }
            PyTuple_SET_ITEM(ranks, r, lines);
        }
        PyObject *part = Py_BuildValue("(innnnnnnnnN)", c->id, c->count, c->first_index, c->first_ordinal, c->first_start,
                                       c->first_end, c->last_index, c->last_ordinal, c->last_start, c->last_end, ranks);
        if (part == NULL) {
            Py_DECREF(parts);
            return -1;
        }
        PyTuple_SET_ITEM(parts, n, part);
    }
    PyObject *item = Py_BuildValue("(nN)", tally->lines, parts);
    int failed = item == NULL || PyList_Append(self->tallies, item) < 0;
    Py_XDECREF(item);
    empty_tally(tally);
    return failed ? -1 : 0;
}

/* The rank a line of a TALLIED shape writes, read where its shape writes it (NO_RANK: nowhere). */
static long rank_of(const Registered *shape, const unsigned char *line, Py_ssize_t length) {
    if (shape->rank_start < 0 || shape->rank_end > length) {
        return NO_RANK;
    }
    long rank = 0;
    for (int at = shape->rank_start; at < shape->rank_end; at++) {
        if (line[at] < '0' || line[at] > '9') {
            return NO_RANK;
        }
        rank = rank * 10 + (line[at] - '0');
    }
    return rank;
}

/* Count a line of a TALLIED shape into the open tally; a tally full of shapes, or of one shape's
 * ranks, is closed first and the line opens the next. */
static int tally_line(Shapes *self, const Slot *slot, const unsigned char *line, Py_ssize_t start, Py_ssize_t end,
                      Py_ssize_t index) {
    Tally *tally = &self->open;
    const Registered *shape = &self->registered[slot->id];
    long rank = rank_of(shape, line, end - start);
    Counted *c = NULL;
    for (int n = 0; n < tally->shapes && c == NULL; n++) {
        c = tally->shape[n].id == slot->id ? &tally->shape[n] : NULL;
    }
    RankLines *lines = NULL;
    for (int n = 0; c != NULL && n < c->ranks && lines == NULL; n++) {
        lines = c->rank[n].rank == rank ? &c->rank[n] : NULL;
    }
    if ((c == NULL && tally->shapes == TALLY_SHAPES) || (c != NULL && lines == NULL && c->ranks == TALLY_RANKS)) {
        if (close_tally(self) < 0) {
            return -1;
        }
        c = NULL;
    }
    if (c == NULL) {
        c = &tally->shape[tally->shapes++];
        *c = (Counted){.id = slot->id, .first_start = start, .first_end = end, .first_index = index,
                       .first_ordinal = tally->lines};
        entries_add(&tally->entries, &shape->entries);
        lines = NULL;
    }
    if (lines == NULL) {
        lines = &c->rank[c->ranks++];
        *lines = (RankLines){rank, index, index};
    }
    lines->last = index;
    if (tally->lines < TALLY_MIN) {
        tally->first[tally->lines] = (Line){start, end, index, slot->id};
    }
    c->count++;
    c->last_start = start;
    c->last_end = end;
    c->last_index = index;
    c->last_ordinal = tally->lines++;
    return 0;
}

/* A line of a TALLIED shape (or group): counted in the open tally and, where it may be cause evidence
 * of entries, held as a CAUSE line is; the tally then ends after it if those entries are among its
 * own (their cause windows must see the tally's lines before it, and not those after). */
static int tallied_line(Shapes *self, const Slot *slot, const unsigned char *line, Py_ssize_t start, Py_ssize_t end,
                        Py_ssize_t index) {
    const Entries *supports = &self->registered[slot->id].supports;
    if (tally_line(self, slot, line, start, end, index) < 0) {
        return -1;
    }
    if (!entries_any(supports)) {
        return 0;
    }
    if (hold(self, start, end, index, slot) < 0) {
        return -1;
    }
    return entries_meet(supports, &self->open.entries) ? close_tally(self) : 0;
}

static int append_line(PyObject *out, Py_ssize_t start, Py_ssize_t end, Py_ssize_t index, long id) {
    PyObject *item = Py_BuildValue("(nnnl)", start, end, index, id);
    if (item == NULL) {
        return -1;
    }
    int failed = PyList_Append(out, item);
    Py_DECREF(item);
    return failed;
}

/* A walk over buffer[start:end] (classify, segments): the checked buffer and range, and the list it
 * returns. The table's note of the shapes first seen in a walk starts empty. */
typedef struct {
    Py_buffer view;
    Py_ssize_t start, end;
    PyObject *out;
} Walk;

static int begin_walk(Shapes *self, PyObject *args, Walk *walk) {
    if (!PyArg_ParseTuple(args, "y*nn", &walk->view, &walk->start, &walk->end)) {
        return 0;
    }
    if (walk->start < 0 || walk->end > walk->view.len || walk->start > walk->end) {
        PyBuffer_Release(&walk->view);
        PyErr_SetString(PyExc_ValueError, "start and end must lie within the buffer");
        return 0;
    }
    walk->out = PyList_New(0);
    if (walk->out == NULL) {
        PyBuffer_Release(&walk->view);
        return 0;
    }
    if (self->fresh_count) {
        memset(self->fresh, 0, (size_t)(self->fresh_mask + 1) * sizeof(Fresh));
        self->fresh_count = 0;
    }
    return 1;
}

/* The walk's list, or NULL (its list dropped) after an error. */
static PyObject *end_walk(Walk *walk, int failed) {
    PyBuffer_Release(&walk->view);
    if (failed) {
        Py_DECREF(walk->out);
        return NULL;
    }
    return walk->out;
}

PyDoc_STRVAR(classify_doc,
             "classify(buffer, start, end) -> list of (start, end, index, id)\n\n"
             "The lines of buffer[start:end] (the last one may lack its newline) that the caller must see,\n"
             "index counting lines from `start`. id: that of the line's ACTIVE shape; -1 for the first line\n"
             "of a shape not registered (and for a line longer than long_line); -2 - n for a later line of\n"
             "the same shape (for a line holding hex ids: its shape with them masked), whose first line is\n"
             "item n. QUIET lines are skipped; CAUSE lines are held for `held`, until the next call.");

static PyObject *Shapes_classify(Shapes *self, PyObject *args) {
    Walk walk;
    if (!begin_walk(self, args, &walk)) {
        return NULL;
    }
    const unsigned char *data = walk.view.buf;
    const Py_ssize_t start = walk.start, end = walk.end;
    PyObject *out = walk.out;
    Py_ssize_t position = start, index = 0;
    self->held_count = 0;
    empty_tally(&self->open);
    Py_XSETREF(self->tallies, PyList_New(0));
    if (self->tallies == NULL) {
        return end_walk(&walk, 1);
    }
    self->out = out;
    while (position < end) {
        const unsigned char *newline = memchr(data + position, '\n', (size_t)(end - position));
        Py_ssize_t line_end = newline ? newline - data : end;
        Py_ssize_t length = line_end - position;
        long id = -1;
        if (length <= self->long_line) {
            Masked masked = {0, 0};
            int ids_quiet = self->masked_count ? quiet_ids(self, data + position, length, &masked) : -1;
            if (ids_quiet == 1) {
                goto next;
            }
            uint64_t hash = shape_hash(data + position, length);
            Slot *slot = ids_quiet == 0 ? NULL : find_slot(self, hash, (uint32_t)length);
            if (slot != NULL && slot->hash != 0) {
                if (slot->kind == KIND_QUIET) {
                    goto next;
                }
                if (slot->kind == KIND_TALLIED) {
                    if (tallied_line(self, slot, data + position, position, line_end, index) < 0) {
                        goto fail;
                    }
                    goto next;
                }
                if (slot->kind == KIND_CAUSE) {
                    /* A line the caller sees ends the open tally; a held line only if it may count for
                     * one of the tally's entries (the others' windows are none of the tally's). */
                    if ((entries_meet(&self->registered[slot->id].supports, &self->open.entries) && close_tally(self) < 0) ||
                        hold(self, position, line_end, index, slot) < 0) {
                        goto fail;
                    }
                    goto next;
                }
                id = slot->id;
                const Slot *group = slot->kind == KIND_GROUPED ? group_of(self, data + position, length, slot) : NULL;
                if (group != NULL && group->hash != 0) {
                    if (group->kind == KIND_QUIET) {
                        goto next;
                    }
                    if (group->kind == KIND_TALLIED) {
                        if (tallied_line(self, group, data + position, position, line_end, index) < 0) {
                            goto fail;
                        }
                        goto next;
                    }
                    id = group->id; /* an ACTIVE group: what its lines need is known by its id */
                }
            } else {
                /* Handed back: the open tally's lines go first (fresh_shape notes where this one goes). */
                if (close_tally(self) < 0) {
                    goto fail;
                }
                if (!self->masked_count) { /* a new line: read for ids only now (most lines repeat) */
                    masked.hash = masked_hash(data + position, length, self->scratch, &masked.length);
                }
                /* Lines that differ only in their ids are one shape to the caller: the first of them
                 * is matched, the others follow it (a serving log's request lines, before the table
                 * knows their shape with ids masked). */
                id = masked.hash ? fresh_shape(self, masked.hash, masked.length, PyList_GET_SIZE(out))
                                 : fresh_shape(self, hash, (uint32_t)length, PyList_GET_SIZE(out));
                if (id == LONG_MIN) {
                    goto fail;
                }
            }
        }
        if (close_tally(self) < 0 || append_line(out, position, line_end, index, id) < 0) {
            goto fail;
        }
    next:
        position = line_end + 1;
        index++;
    }
    if (close_tally(self) < 0) {
        goto fail;
    }
    self->lines = index;
    return end_walk(&walk, 0);
fail:
    return end_walk(&walk, 1);
}

PyDoc_STRVAR(segments_doc,
             "segments(buffer, start, end) -> list of (start, end)\n\n"
             "Of buffer[start:end], one line longer than long_line (a progress bar redrawn in place with\n"
             "carriage returns), the pieces between carriage returns that the caller must see: the first\n"
             "of each shape not registered QUIET, and every piece longer than long_line. Empty pieces and\n"
             "the pieces of QUIET shapes are skipped. Leaves what classify holds alone.");

static PyObject *Shapes_segments(Shapes *self, PyObject *args) {
    Walk walk;
    if (!begin_walk(self, args, &walk)) {
        return NULL;
    }
    const unsigned char *data = walk.view.buf;
    for (Py_ssize_t position = walk.start; position < walk.end;) {
        const unsigned char *cr = memchr(data + position, '\r', (size_t)(walk.end - position));
        Py_ssize_t piece_end = cr ? cr - data : walk.end, length = piece_end - position;
        int wanted = length > self->long_line;
        if (length > 0 && !wanted) {
            uint64_t hash = shape_hash(data + position, length);
            const Slot *slot = find_slot(self, hash, (uint32_t)length);
            if (slot->hash == 0 || slot->kind != KIND_QUIET) {
                long first = fresh_shape(self, hash, (uint32_t)length, PyList_GET_SIZE(walk.out));
                if (first == LONG_MIN) {
                    goto fail;
                }
                wanted = first == -1;
            }
        }
        if (wanted) {
            PyObject *item = Py_BuildValue("(nn)", position, piece_end);
            if (item == NULL || PyList_Append(walk.out, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        position = piece_end + 1;
    }
    return end_walk(&walk, 0);
fail:
    return end_walk(&walk, 1);
}

PyDoc_STRVAR(held_doc,
             "held(reach, tail, last) -> list of (start, end, index, id)\n\n"
             "The CAUSE lines of the last classify call that may count. reach[g] is a sorted list of\n"
             "non-overlapping (low, high) ranges of line indices (high excluded) where a line of group g\n"
             "counts: near a line of an entry it supports. Of the lines from index `tail` on (a block's\n"
             "last lines, which a later block may reach back to) that no range holds, the last `last` of\n"
             "each group are kept too: no more can wait for a later block (see CauseWindow).");

/* Whether index lies in one of the sorted (low, high) ranges. */
static int within(PyObject *ranges, Py_ssize_t index, int *found) {
    Py_ssize_t low = 0, high = PyList_GET_SIZE(ranges);
    while (low < high) {
        Py_ssize_t middle = (low + high) / 2, from, to;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(ranges, middle), "nn", &from, &to)) {
            return -1;
        }
        if (index < from) {
            high = middle;
        } else if (index >= to) {
            low = middle + 1;
        } else {
            *found = 1;
            return 0;
        }
    }
    *found = 0;
    return 0;
}

static PyObject *Shapes_held(Shapes *self, PyObject *args) {
    PyObject *reach, *out = NULL;
    Py_ssize_t tail, last;
    if (!PyArg_ParseTuple(args, "O!nn", &PyList_Type, &reach, &tail, &last)) {
        return NULL;
    }
    Py_ssize_t groups = PyList_GET_SIZE(reach);
    /* Whether each line is kept, decided from the end: that is where a group's last lines are. */
    char *keep = PyMem_Calloc((size_t)self->held_count + 1, 1);
    Py_ssize_t *waiting = PyMem_Calloc((size_t)groups + 1, sizeof(Py_ssize_t));
    if (keep == NULL || waiting == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t n = self->held_count - 1; n >= 0; n--) {
        Held *h = &self->held[n];
        int found = 0;
        if (h->group >= groups) {
            continue;
        }
        PyObject *ranges = PyList_GET_ITEM(reach, h->group);
        if (!PyList_Check(ranges)) {
            PyErr_SetString(PyExc_TypeError, "reach must be a list of lists of (low, high)");
            goto done;
        }
        if (within(ranges, h->index, &found) < 0) {
            goto done;
        }
        keep[n] = found || (h->index >= tail && waiting[h->group]++ < last);
    }
    out = PyList_New(0);
    for (Py_ssize_t n = 0; out != NULL && n < self->held_count; n++) {
        Held *h = &self->held[n];
        if (keep[n] && append_line(out, h->start, h->end, h->index, h->id) < 0) {
            Py_CLEAR(out);
        }
    }
done:
    PyMem_Free(keep);
    PyMem_Free(waiting);
    return out;
}

/* The slot of a shape, new (with the next id) if it is not in the table; a full table starts over
 * first. A masked shape is counted, so that misses look it up only where one is registered. */
static Slot *insert_slot(Shapes *self, uint64_t hash, uint32_t length, int masked) {
    Slot *slot = find_slot(self, hash, length);
    if (slot->hash == 0) {
        if (self->count >= self->limit) {
            memset(self->slots, 0, (size_t)(self->mask + 1) * sizeof(Slot));
            self->count = 0;
            self->masked_count = 0;
            slot = find_slot(self, hash, length);
        }
        *slot = (Slot){hash, length, (int32_t)self->count++, 0, 0};
        self->masked_count += masked;
    }
    return slot;
}

/* A slot's kind (and group, and digit runs of a GROUPED shape), and its id for the caller. */
static PyObject *registered(Shapes *self, Slot *slot, int kind, int group, uint64_t named, uint64_t coded,
                            const Tallied *tallied) {
    slot->kind = kind;
    slot->group = group;
    self->registered[slot->id] = (Registered){named, coded, tallied->entries, tallied->supports,
                                              (int16_t)tallied->rank_start, (int16_t)tallied->rank_end};
    return PyLong_FromLong(slot->id);
}

/* A set of entries from a sequence of entry indices (None: empty). */
static int entries_of(PyObject *indices, Entries *out) {
    *out = (Entries){{0}};
    if (indices == Py_None) {
        return 0;
    }
    PyObject *seq = PySequence_Fast(indices, "entries must be a sequence of entry indices");
    if (seq == NULL) {
        return -1;
    }
    for (Py_ssize_t n = 0; n < PySequence_Fast_GET_SIZE(seq); n++) {
        long entry = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, n));
        if (entry < 0) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "an entry index is at least 0");
            }
            return -1;
        }
        out->word[(entry % ENTRY_BITS) / 64] |= 1ULL << (entry % 64);
    }
    Py_DECREF(seq);
    return 0;
}

/* Whether a rank span fits: none (-1, -1), or of a TALLIED shape at most 9 digits within the line. */
static int rank_span_fits(int kind, int rank_start, int rank_end, Py_ssize_t length) {
    if (rank_start == -1 && rank_end == -1) {
        return 1;
    }
    return kind == KIND_TALLIED && rank_start >= 0 && rank_end > rank_start && rank_end <= length && rank_end - rank_start <= MAX_RANK_DIGITS;
}

/* What a TALLIED (or CAUSE) registration adds, read from its arguments: 0, or -1 with an error set. */
static int tallied_of(int kind, Py_ssize_t length, int rank_start, int rank_end, PyObject *entries, PyObject *supports,
                      Tallied *out) {
    out->rank_start = rank_start;
    out->rank_end = rank_end;
    if (!rank_span_fits(kind, rank_start, rank_end, length) ||
        (entries != Py_None && kind != KIND_TALLIED) || (supports != Py_None && kind != KIND_TALLIED && kind != KIND_CAUSE)) {
        PyErr_SetString(PyExc_ValueError, "a rank span (at most 9 digits, within the line) and entries only if TALLIED, "
                                          "supports only if TALLIED or CAUSE");
        return -1;
    }
    return entries_of(entries, &out->entries) < 0 || entries_of(supports, &out->supports) < 0 ? -1 : 0;
}

PyDoc_STRVAR(register_doc,
             "register(line, kind, group=0, masked=False, named=0, coded=0, rank_start=-1, rank_end=-1, entries=None,\n"
             "         supports=None) -> int\n\n"
             "Remember the shape of `line` (bytes without its newline) as QUIET, CAUSE (of `group`, see\n"
             "held), ACTIVE, GROUPED or TALLIED (its lines write their rank at line[rank_start:rank_end],\n"
             "if rank_start is not -1; see tallies). `entries` (entry indices), of a TALLIED shape: those\n"
             "its lines are own lines of; `supports`, of a CAUSE or TALLIED shape: those its lines may be\n"
             "cause evidence of. A CAUSE line ends a tally where its supports meet the tally's entries; a\n"
             "TALLIED line with supports is held too (as a CAUSE line of `group`) and ends its tally where\n"
             "they meet. Returns\n"
             "its id, the number of shapes registered before it. A full table starts over first: an id\n"
             "of 0 tells the caller to forget what the old ids stood for. A shape registered again\n"
             "keeps its id and takes the new kind. With `masked`, the shape of the line with its hex\n"
             "ids masked (QUIET only): lines not registered that differ from it only in their ids are\n"
             "skipped; -1 for a line that holds no id. A GROUPED shape's lines are handed back with its\n"
             "id, but those of a group registered QUIET (register_group) are skipped and those of a group\n"
             "registered ACTIVE come back with the group's id: a group is the\n"
             "digits of its `named` runs (bit n: the line's n-th run of digits) and of its `coded` runs\n"
             "that hold a bare code (set_codes).");

static PyObject *Shapes_register(Shapes *self, PyObject *args) {
    Py_buffer view;
    int kind, group = 0, masked = 0, rank_start = -1, rank_end = -1;
    unsigned long long named = 0, coded = 0;
    PyObject *entries = Py_None, *supports = Py_None;
    if (!PyArg_ParseTuple(args, "y*i|ipKKiiOO", &view, &kind, &group, &masked, &named, &coded, &rank_start, &rank_end,
                          &entries, &supports)) {
        return NULL;
    }
    Tallied tallied;
    if (kind < KIND_QUIET || kind > KIND_TALLIED || group < 0 || view.len > self->long_line ||
        (masked && kind != KIND_QUIET) || ((named || coded) && kind != KIND_GROUPED)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "kind must be QUIET, CAUSE, ACTIVE, GROUPED or TALLIED (QUIET if masked; runs only if "
                                          "GROUPED), group at least 0, and the line at most long_line");
        return NULL;
    }
    if (tallied_of(kind, view.len, rank_start, rank_end, entries, supports, &tallied) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    uint32_t length = (uint32_t)view.len;
    uint64_t hash = masked ? masked_hash(view.buf, view.len, self->scratch, &length) : shape_hash(view.buf, view.len);
    PyBuffer_Release(&view);
    if (!hash) {
        return PyLong_FromLong(-1);
    }
    return registered(self, insert_slot(self, hash, length, masked), kind, group, named, coded, &tallied);
}

PyDoc_STRVAR(register_group_doc,
             "register_group(line, kind=QUIET, rank_start=-1, rank_end=-1, entries=None, supports=None, group=0) -> int\n\n"
             "Remember the group of `line` under its GROUPED shape as QUIET, ACTIVE or TALLIED (see\n"
             "register): its id, as register gives it; -1 when the line's shape is not GROUPED. The lines\n"
             "of a QUIET group are skipped; those of an ACTIVE group are handed back with the group's id\n"
             "instead of their shape's, so that the caller knows what they need without reading their\n"
             "digits; those of a TALLIED group are counted in tallies (and held, with supports) under the\n"
             "group's id.");

static PyObject *Shapes_register_group(Shapes *self, PyObject *args) {
    Py_buffer view;
    int kind = KIND_QUIET, group = 0, rank_start = -1, rank_end = -1;
    PyObject *entries = Py_None, *supports = Py_None;
    if (!PyArg_ParseTuple(args, "y*|iiiOOi", &view, &kind, &rank_start, &rank_end, &entries, &supports, &group)) {
        return NULL;
    }
    Tallied tallied;
    if ((kind != KIND_QUIET && kind != KIND_ACTIVE && kind != KIND_TALLIED) || group < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "a group is registered QUIET, ACTIVE or TALLIED, its cause group at least 0");
        return NULL;
    }
    if (tallied_of(kind, view.len, rank_start, rank_end, entries, supports, &tallied) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const Slot *shape = view.len <= self->long_line ? find_slot(self, shape_hash(view.buf, view.len), (uint32_t)view.len) : NULL;
    if (shape == NULL || shape->hash == 0 || shape->kind != KIND_GROUPED) {
        PyBuffer_Release(&view);
        return PyLong_FromLong(-1);
    }
    uint64_t hash = group_hash(self, view.buf, view.len, shape->id);
    uint32_t length = (uint32_t)view.len;
    PyBuffer_Release(&view);
    return registered(self, insert_slot(self, hash, length, 0), kind, group, 0, 0, &tallied);
}

PyDoc_STRVAR(set_codes_doc,
             "set_codes(codes)\n\n"
             "The bare codes a coded run of a GROUPED shape is searched for: a tuple of (digits: bytes,\n"
             "boundary_before: bool, boundary_after: bool), as the codes' regex reads them.");

static PyObject *Shapes_set_codes(Shapes *self, PyObject *args) {
    PyObject *codes;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &codes)) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(codes);
    Code *list = PyMem_Calloc((size_t)count + 1, sizeof(Code));
    if (list == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t n = 0; n < count; n++) {
        PyObject *code = PyTuple_GET_ITEM(codes, n);
        if (!PyTuple_Check(code) || PyTuple_GET_SIZE(code) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(code, 0))) {
            PyMem_Free(list);
            PyErr_SetString(PyExc_TypeError, "codes must be (bytes, bool, bool) tuples");
            return NULL;
        }
        int before = PyObject_IsTrue(PyTuple_GET_ITEM(code, 1)), after = PyObject_IsTrue(PyTuple_GET_ITEM(code, 2));
        if (before < 0 || after < 0) {
            PyMem_Free(list);
            return NULL;
        }
        PyObject *digits = PyTuple_GET_ITEM(code, 0);
        list[n] = (Code){PyBytes_AS_STRING(digits), PyBytes_GET_SIZE(digits), before, after};
    }
    Py_INCREF(codes);
    Py_XSETREF(self->codes, codes);
    PyMem_Free(self->code_list);
    self->code_list = list;
    self->code_count = count;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(tallies_doc,
             "tallies() -> list of (lines, parts)\n\n"
             "The lines of TALLIED shapes that the last classify call counted instead of handing back, in\n"
             "tallies: each holds the lines between two that the caller sees (handed back or held), `lines`\n"
             "of them, and a part per shape, in the order the shapes first came there: (id, count,\n"
             "first_index, first_ordinal, first_start, first_end, last_index, last_ordinal, last_start,\n"
             "last_end, ranks), an ordinal telling which of the tally's lines a line is, and ranks a\n"
             "(rank, first_index, last_index) for each rank its lines write (-1: they write none), in the\n"
             "order the ranks first came.");

static PyObject *Shapes_tallies(Shapes *self, PyObject *Py_UNUSED(ignored)) { return Py_NewRef(self->tallies); }

static Py_ssize_t Shapes_len(Shapes *self) { return self->count; }

static PyMethodDef Shapes_methods[] = {
    {"segments", (PyCFunction)Shapes_segments, METH_VARARGS, segments_doc},
    {"classify", (PyCFunction)Shapes_classify, METH_VARARGS, classify_doc},
    {"held", (PyCFunction)Shapes_held, METH_VARARGS, held_doc},
    {"tallies", (PyCFunction)Shapes_tallies, METH_NOARGS, tallies_doc},
    {"register", (PyCFunction)Shapes_register, METH_VARARGS, register_doc},
    {"register_group", (PyCFunction)Shapes_register_group, METH_VARARGS, register_group_doc},
    {"set_codes", (PyCFunction)Shapes_set_codes, METH_VARARGS, set_codes_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Shapes_members[] = {
    {"lines", T_PYSSIZET, offsetof(Shapes, lines), READONLY, "How many lines the last classify call walked."},
    {NULL, 0, 0, 0, NULL},
};

static PySequenceMethods Shapes_sequence = {.sq_length = (lenfunc)Shapes_len};

static PyTypeObject ShapesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "triage.engine._lineshapes.Shapes",
    .tp_doc = PyDoc_STR("Shapes(limit=65536, long_line=16384): a bounded table of line shapes."),
    .tp_basicsize = sizeof(Shapes),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Shapes_init,
    .tp_dealloc = (destructor)Shapes_dealloc,
    .tp_methods = Shapes_methods,
    .tp_members = Shapes_members,
    .tp_as_sequence = &Shapes_sequence,
};

PyDoc_STRVAR(count_newlines_doc,
             "count_newlines(buffer, start, end, /) -> int: the newlines in buffer[start:end], read in place "
             "(bytes.count's answer for a buffer that is not bytes: a mapped file).");

static PyObject *count_newlines(PyObject *module, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) {
        return NULL;
    }
    start = start < 0 ? 0 : start > view.len ? view.len : start;
    end = end > view.len ? view.len : end < start ? start : end;
    const unsigned char *data = view.buf;
    Py_ssize_t count = 0;
    for (const unsigned char *at = data + start, *stop = data + end;
         (at = memchr(at, '\n', (size_t)(stop - at))) != NULL; at++) {
        count++;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(count);
}

static PyMethodDef module_methods[] = {
    {"count_newlines", count_newlines, METH_VARARGS, count_newlines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "triage.engine._lineshapes",
    .m_doc = PyDoc_STR("Line shapes (bytes with digits masked) counted in native code; see Shapes."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__lineshapes(void) {
    if (PyType_Ready(&ShapesType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Shapes", (PyObject *)&ShapesType) < 0 ||
        PyModule_AddIntConstant(m, "QUIET", KIND_QUIET) < 0 || PyModule_AddIntConstant(m, "CAUSE", KIND_CAUSE) < 0 ||
        PyModule_AddIntConstant(m, "ACTIVE", KIND_ACTIVE) < 0 || PyModule_AddIntConstant(m, "GROUPED", KIND_GROUPED) < 0 ||
        PyModule_AddIntConstant(m, "TALLIED", KIND_TALLIED) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RANK_DIGITS", MAX_RANK_DIGITS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
