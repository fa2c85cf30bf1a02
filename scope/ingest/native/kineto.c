/* Kineto trace scanner and per-rank event table: see kineto.h for the contract.
 *
 * Why a hand-written scanner: a trace is a few fixed keys per event plus arbitrary args, and scope
 * keeps about fifteen of them. Decoding every event into objects (what json/msgspec/HTA do) costs
 * several microseconds per event; scanning the bytes once and storing the wanted fields straight into
 * columns costs a fraction of that, with memory proportional to the rows kept, not to the text.
 */
#include "kineto.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef SCOPE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#define READ_BLOCK (1 << 18)           /* compressed bytes per read */
#define FILL_BYTES (1 << 18)           /* decompressed bytes added per fill: scanned while still in cache */
#define MAX_HEAD_BYTES (256LL << 20)   /* give up looking for traceEvents after this */
#define MAX_TAIL_BYTES (64LL << 20)    /* keep at most this much after the array */

enum { P_OK = 0, P_MORE = 1, P_ERR = 2 };

/* ------------------------------------------------------------------ byte arenas */

static int kb_reserve(kt_bytes *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int kb_append(kt_bytes *b, const char *src, size_t n) {
    if (n == 0) return 0; /* src may be NULL then (an empty name), which memcpy does not allow */
    if (kb_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static void kb_free(kt_bytes *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ string interning */

/* Two lanes of 8 bytes a step, so that the multiplies of a long name (C++ kernel signatures run to
   hundreds of bytes) overlap instead of waiting on each other; the last partial word is read as the
   string's last 8 bytes (overlapping) rather than byte by byte. Ids do not depend on the hash: they
   count first appearances, so any hash gives the same tables. */
static inline uint64_t mix_word(uint64_t h, uint64_t w, uint64_t prime) {
    h = (h ^ w) * prime;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(const char *s, size_t n) {
    const uint64_t p0 = 0x100000001b3ULL, p1 = 0xff51afd7ed558ccdULL;
    uint64_t a = 0xcbf29ce484222325ULL ^ (uint64_t)n, b = 0x9e3779b97f4a7c15ULL;
    uint64_t w0, w1;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        memcpy(&w0, s + i, 8);
        memcpy(&w1, s + i + 8, 8);
        a = mix_word(a, w0, p0);
        b = mix_word(b, w1, p1);
    }
    if (i + 8 <= n) {
        memcpy(&w0, s + i, 8);
        a = mix_word(a, w0, p0);
        i += 8;
    }
    if (i < n) {
        if (n >= 8) {
            memcpy(&w1, s + n - 8, 8); /* the tail, overlapping bytes already mixed */
        } else {
            w1 = 0;
            memcpy(&w1, s, n);
        }
        b = mix_word(b, w1, p1);
    }
    uint64_t h = a ^ (b * 0xc2b2ae3d27d4eb4fULL);
    h ^= h >> 32;
    return h * 0x9e3779b97f4a7c15ULL;
}

static int intern_grow_slots(kt_intern *in) {
    size_t nslots = in->nslots ? in->nslots * 2 : 1024;
    int32_t *slots = malloc(nslots * sizeof *slots);
    if (!slots) return -1;
    memset(slots, 0xff, nslots * sizeof *slots);
    for (int32_t id = 0; id < in->count; id++) {
        size_t s = in->hash[id] & (nslots - 1);
        while (slots[s] >= 0) s = (s + 1) & (nslots - 1);
        slots[s] = id;
    }
    free(in->slots);
    in->slots = slots;
    in->nslots = nslots;
    return 0;
}

static int intern_grow_ids(kt_intern *in) {
    int32_t cap = in->cap ? in->cap * 2 : 256;
    int64_t *offset = realloc(in->offset, (size_t)cap * sizeof *offset);
    if (!offset) return -1;
    in->offset = offset;
    int32_t *length = realloc(in->length, (size_t)cap * sizeof *length);
    if (!length) return -1;
    in->length = length;
    uint64_t *hash = realloc(in->hash, (size_t)cap * sizeof *hash);
    if (!hash) return -1;
    in->hash = hash;
    in->cap = cap;
    return 0;
}

/* Id of s (added when new), or -1 when out of memory. */
static int32_t intern(kt_intern *in, const char *s, size_t n) {
    if ((size_t)(in->count + 1) * 2 > in->nslots && intern_grow_slots(in) < 0) return -1;
    uint64_t h = hash_bytes(s, n);
    size_t slot = h & (in->nslots - 1);
    for (;;) {
        int32_t id = in->slots[slot];
        if (id < 0) break;
        if (in->hash[id] == h && (size_t)in->length[id] == n &&
            (n == 0 || memcmp(in->arena.data + in->offset[id], s, n) == 0))
            return id;
        slot = (slot + 1) & (in->nslots - 1);
    }
    if (in->count == in->cap && intern_grow_ids(in) < 0) return -1;
    int32_t id = in->count;
    in->offset[id] = (int64_t)in->arena.len;
    if (kb_append(&in->arena, s, n) < 0) return -1;
    in->length[id] = (int32_t)n;
    in->hash[id] = h;
    in->slots[slot] = id;
    in->count++;
    return id;
}

int32_t kt_intern_add(kt_intern *in, const char *s, size_t n) { return intern(in, s, n); }

void kt_intern_free(kt_intern *in) {
    kb_free(&in->arena);
    free(in->offset);
    free(in->length);
    free(in->hash);
    free(in->slots);
    memset(in, 0, sizeof *in);
}

/* ------------------------------------------------------------------ table */

void kt_table_init(kt_table *t) { memset(t, 0, sizeof *t); }

static void rows_free(kt_rows *r) {
    free(r->event_id);
    free(r->ts_ns);
    free(r->dur_ns);
    free(r->pid);
    free(r->tid);
    free(r->corr);
    free(r->ext);
    free(r->stream_arg);
    free(r->device_arg);
    free(r->flops);
    free(r->pair);
    free(r->comm);
    free(r->device);
    free(r->step);
    free(r->stream);
    free(r->thread);
    memset(r, 0, sizeof *r);
}

static void mem_free(kt_mem *m) {
    free(m->ts_ns);
    free(m->bytes);
    free(m->total_allocated);
    free(m->total_reserved);
    free(m->addr);
    free(m->device_type);
    free(m->device_id);
    memset(m, 0, sizeof *m);
}

void kt_table_free(kt_table *t) {
    mem_free(&t->mem);
    kt_intern_free(&t->names);
    kt_intern_free(&t->cats);
    kt_intern_free(&t->pairs);
    rows_free(&t->rows);
    free(t->comms);
    kb_free(&t->comm_text);
    free(t->launch_corr);
    free(t->launch_row);
    memset(t, 0, sizeof *t);
}

void kt_result_free(kt_read_result *r) {
    kb_free(&r->head);
    kb_free(&r->tail);
}

#define GROW(field, cap)                                                     \
    do {                                                                     \
        void *p_ = realloc((field), (size_t)(cap) * sizeof *(field));        \
        if (!p_) return -1;                                                  \
        (field) = p_;                                                        \
    } while (0)

static int rows_grow(kt_rows *r) {
    int64_t cap = r->cap ? r->cap * 2 : 65536;
    GROW(r->event_id, cap);
    GROW(r->ts_ns, cap);
    GROW(r->dur_ns, cap);
    GROW(r->pid, cap);
    GROW(r->tid, cap);
    GROW(r->corr, cap);
    GROW(r->ext, cap);
    GROW(r->stream_arg, cap);
    GROW(r->device_arg, cap);
    GROW(r->flops, cap);
    GROW(r->pair, cap);
    GROW(r->comm, cap);
    r->cap = cap;
    return 0;
}

static int mem_grow(kt_mem *m) {
    int64_t cap = m->cap ? m->cap * 2 : 4096;
    GROW(m->ts_ns, cap);
    GROW(m->bytes, cap);
    GROW(m->total_allocated, cap);
    GROW(m->total_reserved, cap);
    GROW(m->addr, cap);
    GROW(m->device_type, cap);
    GROW(m->device_id, cap);
    m->cap = cap;
    return 0;
}

/* ------------------------------------------------------------------ input: file + zlib */

typedef struct {
    FILE *fh;
    int gz;
    z_stream zs;
    int zs_live;      /* inflateInit2 done */
    int z_ended;      /* the current gzip member ended */
    int file_eof;
    unsigned char *in;
    char *buf;        /* decompressed window */
    size_t len, cap;  /* valid bytes in buf, allocated */
    int64_t base;     /* stream offset of buf[0] */
    int eof;          /* no more decompressed data will come */
    int64_t produced;
    int64_t skip;     /* bytes zlib inflates again and drops after taking over from ISA-L */
#ifdef SCOPE_HAVE_ISAL
    struct inflate_state *ist; /* ISA-L's inflater while it runs; NULL once zlib has taken over */
    int ist_ended;             /* ISA-L finished the current gzip member */
#endif
    kt_read_result *res;
} source;

/* ISA-L inflates gzip several times faster than zlib (measured 4.4 against 21.7 ms for a 7.8 MB trace);
   it is used when the core was built with it (SCOPE_HAVE_ISAL) and not switched off (kt_set_fast_inflate).
   Atomic: reads run on threads without the GIL while Python may switch it. */
#ifdef SCOPE_HAVE_ISAL
static atomic_int fast_inflate = 1;
#endif
/* Files zlib took over from ISA-L (damaged, cut, or a step ISA-L could not make): an intact file never
   should, or ingest silently runs at zlib's speed (kt_inflate_takeovers; tests count them). */
static atomic_llong takeovers = 0;
/* Decompressed bytes a fill adds: FILL_BYTES, or what a test sets (kt_set_fill_bytes) to put a window's
   end at every byte of a short trace. Atomic for the same reason as fast_inflate. */
static atomic_size_t fill_bytes = FILL_BYTES;

size_t kt_set_fill_bytes(size_t n) { return atomic_exchange(&fill_bytes, n ? n : FILL_BYTES); }

/* ts, dur, pid and tid through plain_number (1), or every value through the general path (0, for tests
   that hold one to the other). */
static atomic_int one_pass_numbers = 1;

int kt_set_one_pass_numbers(int on) { return atomic_exchange(&one_pass_numbers, on != 0); }

int kt_set_fast_inflate(int on) {
#ifdef SCOPE_HAVE_ISAL
    return atomic_exchange(&fast_inflate, on != 0);
#else
    (void)on;
    return 0;
#endif
}

long long kt_inflate_takeovers(void) { return atomic_load(&takeovers); }

int kt_has_fast_inflate(void) {
#ifdef SCOPE_HAVE_ISAL
    return 1;
#else
    return 0;
#endif
}

static int zlib_start(source *s) {
    if (inflateInit2(&s->zs, 31) != Z_OK) return -1;
    s->zs_live = 1;
    return 0;
}

#ifdef SCOPE_HAVE_ISAL
/* A gzip member's first bytes as zlib accepts them: ISA-L reads on past a reserved flag (RFC 1952: bits
   5-7) that zlib refuses, so such a member is left to zlib and both paths read it alike. Fewer than 4
   bytes at hand (a member starting at the end of a read): zlib too, to be sure. */
static int zlib_reads_header(const unsigned char *p, size_t n) {
    return n >= 4 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 && (p[3] & 0xE0) == 0;
}
#endif

static int source_open(source *s, const char *path, kt_read_result *res) {
    memset(s, 0, sizeof *s);
    s->res = res;
    s->fh = fopen(path, "rb");
    if (!s->fh) {
        snprintf(res->gzip_msg, sizeof res->gzip_msg, "cannot open (%s)", strerror(errno));
        return -1;
    }
    unsigned char magic[4] = {0, 0, 0, 0};
    size_t got = fread(magic, 1, 4, s->fh);
    rewind(s->fh);
    s->gz = got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    s->in = malloc(READ_BLOCK);
    if (!s->in) return -1;
    if (!s->gz) return 0;
#ifdef SCOPE_HAVE_ISAL
    struct stat st;
    /* zlib's taking over rewinds the file: a pipe or FIFO is inflated by zlib alone */
    if (atomic_load(&fast_inflate) && zlib_reads_header(magic, got) && fstat(fileno(s->fh), &st) == 0 && S_ISREG(st.st_mode)) {
        s->ist = malloc(sizeof *s->ist);
        if (!s->ist) return -1;
        isal_inflate_init(s->ist);
        s->ist->crc_flag = ISAL_GZIP;
        return 0;
    }
#endif
    return zlib_start(s);
}

static void source_close(source *s) {
#ifdef SCOPE_HAVE_ISAL
    free(s->ist);
#endif
    if (s->zs_live) inflateEnd(&s->zs);
    if (s->fh) fclose(s->fh);
    free(s->in);
    free(s->buf);
}

static int source_reserve(source *s, size_t extra) {
    if (s->len + extra <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : atomic_load(&fill_bytes) * 2;
    while (cap < s->len + extra) cap *= 2;
    char *buf = realloc(s->buf, cap);
    if (!buf) return -1;
    s->buf = buf;
    s->cap = cap;
    return 0;
}

/* Drop buf[0:keep_from) (already consumed) to make room. */
static void source_discard(source *s, size_t keep_from) {
    if (keep_from == 0) return;
    memmove(s->buf, s->buf + keep_from, s->len - keep_from);
    s->len -= keep_from;
    s->base += (int64_t)keep_from;
}

/* The next READ_BLOCK compressed bytes into s->in, for zlib or ISA-L: how many (0 at the end of the
   file, then file_eof is set), or -1 on a read error (worded in gzip_msg). */
static int64_t read_block(source *s) {
    size_t got = fread(s->in, 1, READ_BLOCK, s->fh);
    if (got == 0) {
        if (ferror(s->fh)) {
            snprintf(s->res->gzip_msg, sizeof s->res->gzip_msg, "read error (%s)", strerror(errno));
            return -1;
        }
        s->file_eof = 1;
    }
    return (int64_t)got;
}

static int read_compressed(source *s) {
    if (s->zs.avail_in > 0 || s->file_eof) return 0;
    int64_t got = read_block(s);
    if (got < 0) return -1;
    s->zs.next_in = s->in;
    s->zs.avail_in = (uInt)got;
    return 0;
}

/* Inflate up to `want` bytes into buf; marks eof and the gzip problem when the stream ends. */
static int fill_gzip(source *s, size_t want) {
    size_t target = s->len + want;
    while (s->len < target && !s->eof) {
        if (read_compressed(s) < 0) return -1;
        if (s->z_ended) {
            if (s->zs.avail_in == 0 && s->file_eof) {
                s->eof = 1;
                break;
            }
            if (s->zs.avail_in == 0) continue;
            inflateReset(&s->zs); /* concatenated gzip members */
            s->z_ended = 0;
        }
        if (s->zs.avail_in == 0 && s->file_eof) { /* input ended inside a member */
            s->res->gzip_problem = s->produced > 0 ? 2 : 0;
            if (s->produced == 0) snprintf(s->res->gzip_msg, sizeof s->res->gzip_msg, "no complete block");
            s->eof = 1;
            break;
        }
        s->zs.next_out = (Bytef *)(s->buf + s->len);
        s->zs.avail_out = (uInt)(target - s->len);
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        size_t made = (target - s->len) - s->zs.avail_out;
        if (s->skip > 0) { /* ISA-L gave these bytes already: drop them */
            size_t drop = (int64_t)made < s->skip ? made : (size_t)s->skip;
            memmove(s->buf + s->len, s->buf + s->len + drop, made - drop);
            s->skip -= (int64_t)drop;
            made -= drop;
        }
        s->len += made;
        s->produced += (int64_t)made;
        if (rc == Z_STREAM_END) {
            s->z_ended = 1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            /* worded as Python's zlib module words it, so both paths report alike */
            snprintf(s->res->gzip_msg, sizeof s->res->gzip_msg, "Error %d while decompressing data: %s", rc,
                     s->zs.msg ? s->zs.msg : "invalid data");
            s->res->gzip_problem = 1;
            s->eof = 1;
        }
    }
    return 0;
}

static int fill_plain(source *s, size_t want) {
    size_t got = fread(s->buf + s->len, 1, want, s->fh);
    s->len += got;
    s->produced += (int64_t)got;
    if (got < want) {
        if (ferror(s->fh)) {
            snprintf(s->res->gzip_msg, sizeof s->res->gzip_msg, "read error (%s)", strerror(errno));
            return -1;
        }
        s->eof = 1;
    }
    return 0;
}

#ifdef SCOPE_HAVE_ISAL
/* zlib goes on from the start of the file, dropping the `produced` bytes ISA-L already gave: a damaged
   or cut file is then salvaged and its problem worded exactly as by zlib alone. Both inflaters give the
   same bytes for any prefix both accept, so the dropped bytes are the ones ISA-L gave; should zlib reject
   the stream before it reaches them (ISA-L the more lenient), what ISA-L gave stands and zlib's words
   for the damage are reported. */
static int zlib_take_over(source *s) {
    atomic_fetch_add(&takeovers, 1);
    free(s->ist);
    s->ist = NULL;
    if (fseek(s->fh, 0, SEEK_SET) != 0) {
        snprintf(s->res->gzip_msg, sizeof s->res->gzip_msg, "read error (%s)", strerror(errno));
        return -1;
    }
    s->file_eof = 0;
    s->skip = s->produced;
    return zlib_start(s);
}

static int read_compressed_isal(source *s) {
    if (s->ist->avail_in > 0 || s->file_eof) return 0;
    int64_t got = read_block(s);
    if (got < 0) return -1;
    s->ist->next_in = s->in;
    s->ist->avail_in = (uint32_t)got;
    return 0;
}

/* fill_gzip with ISA-L, for well-formed files: at an error, a stream cut short or a step that makes
   no progress, zlib takes over (zlib_take_over) and this call's fill goes on with it. */
static int fill_isal(source *s, size_t want) {
    size_t target = s->len + want;
    while (s->len < target && !s->eof) {
        struct inflate_state *st = s->ist;
        if (read_compressed_isal(s) < 0) return -1;
        if (s->ist_ended) {
            if (st->avail_in == 0 && s->file_eof) {
                s->eof = 1;
                break;
            }
            if (st->avail_in == 0) continue;
            if (!zlib_reads_header(st->next_in, st->avail_in)) break;
            isal_inflate_reset(st); /* concatenated gzip members */
            st->crc_flag = ISAL_GZIP;
            s->ist_ended = 0;
        }
        /* With no input left ISA-L may still hold output it had no room for: one more call flushes it,
           and one that makes no progress (input ended inside a member) hands over to zlib below. */
        uint32_t in_before = st->avail_in;
        st->next_out = (uint8_t *)(s->buf + s->len);
        st->avail_out = (uint32_t)(target - s->len);
        int rc = isal_inflate(st);
        size_t made = (target - s->len) - st->avail_out;
        if (rc < 0) break; /* its output of this call may run past where zlib stops: zlib redoes it */
        s->len += made;
        s->produced += (int64_t)made;
        if (made == 0 && st->avail_in == in_before) break;
        if (st->block_state == ISAL_BLOCK_FINISH) s->ist_ended = 1;
    }
    if (s->len >= target || s->eof) return 0;
    if (zlib_take_over(s) < 0) return -1;
    return fill_gzip(s, target - s->len);
}
#endif

/* Append about `n` more decompressed bytes; 0 ok, -1 on I/O or memory failure. */
static int source_fill_n(source *s, size_t n) {
    if (s->eof) return 0;
    if (source_reserve(s, n + 1) < 0) return -1;
    if (!s->gz) return fill_plain(s, n);
#ifdef SCOPE_HAVE_ISAL
    if (s->ist) return fill_isal(s, n);
#endif
    return fill_gzip(s, n);
}

/* Append about FILL_BYTES (fill_bytes) more decompressed bytes. */
static int source_fill(source *s) { return source_fill_n(s, atomic_load(&fill_bytes)); }

/* ------------------------------------------------------------------ JSON primitives */

typedef struct {
    const char *p, *end;
    int repairs; /* values repaired while scanning (an empty value, NaN / Infinity): read as null */
} cursor;

static const char NULL_TEXT[] = "null";

/* non_finite_literal's answer when the window ends inside a literal: the caller asks for more bytes. */
#define LITERAL_CUT ((size_t)-1)

/* The bytes at c are `word` (its length), or the window ends inside it (LITERAL_CUT), or neither (0). */
static inline size_t literal_at(const cursor *c, const char *word, size_t n) {
    size_t have = (size_t)(c->end - c->p);
    if (have >= n) return memcmp(c->p, word, n) == 0 ? n : 0;
    return memcmp(c->p, word, have) == 0 ? LITERAL_CUT : 0;
}

/* A non-JSON number literal (NaN, Infinity, -Infinity, as Python's json writes them) at c: its
 * length, LITERAL_CUT when the window ends inside one (a lone `-` included, as scan_number reads it),
 * or 0. Such a value is read as null, the same as the Python path's repair. */
static inline size_t non_finite_literal(const cursor *c) {
    if (c->p >= c->end) return 0;
    char first = *c->p;
    if (first == 'N') return literal_at(c, "NaN", 3);
    if (first == 'I') return literal_at(c, "Infinity", 8);
    if (first == '-') return literal_at(c, "-Infinity", 9);
    return 0;
}

/* An empty value (`"key": ,` or `"key": }`), a known PyTorch profiler bug in
 * "Process Group Description": the value is read as null and the event kept. */
static inline int empty_value(const cursor *c) { return *c->p == ',' || *c->p == '}'; }

static inline void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

/* The first byte in [p, end) that may end a plain run of string body: `"`, `\\` or a control byte;
   end when none. Names run to hundreds of bytes (C++ kernel signatures): SSE2 tests 16 a step. */
static inline const char *string_special(const char *p, const char *end) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl)); /* unsigned v <= 0x1f */
        int mask = _mm_movemask_epi8(hit);
        if (mask) return p + __builtin_ctz((unsigned)mask);
    }
#endif
    for (; p < end; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\' || ch < 0x20) return p;
    }
    return end;
}

/* c->p just after the opening quote; on P_OK c->p is after the closing quote. */
static inline __attribute__((always_inline)) int scan_string(cursor *c, const char **start, size_t *len, int *escaped) {
    const char *p = c->p;
    *start = p;
    *escaped = 0;
    for (;;) {
        p = string_special(p, c->end);
        if (p >= c->end) return P_MORE;
        if (*p == '"') {
            *len = (size_t)(p - *start);
            c->p = p + 1;
            return P_OK;
        }
        if (*p != '\\') return P_ERR; /* a control byte */
        *escaped = 1;
        if (p + 1 >= c->end) return P_MORE;
        p += 2; /* the escaped byte, whatever it is */
    }
}

static int scan_number(cursor *c, int *is_int) {
    const char *p = c->p;
    *is_int = 1;
    if (p < c->end && *p == '-') p++;
    if (p >= c->end) return P_MORE;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < c->end && *p >= '0' && *p <= '9') p++;
    } else {
        return P_ERR;
    }
    if (p < c->end && *p == '.') {
        *is_int = 0;
        p++;
        const char *digits = p;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
        if (p == c->end) return P_MORE;
        if (p == digits) return P_ERR;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < c->end && (*p == '+' || *p == '-')) p++;
        const char *digits = p;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
        if (p == c->end) return P_MORE;
        if (p == digits) return P_ERR;
    }
    if (p == c->end) return P_MORE; /* a number is never the last byte of a complete event */
    c->p = p;
    return P_OK;
}

static int scan_literal(cursor *c, const char *word, size_t n) {
    size_t have = (size_t)(c->end - c->p);
    if (have < n) return memcmp(c->p, word, have) == 0 ? P_MORE : P_ERR;
    if (memcmp(c->p, word, n) != 0) return P_ERR;
    c->p += n;
    return P_OK;
}

/* A scalar at c->p (after whitespace): string, literal, number, or a non-finite literal (repaired). */
static int skip_scalar(cursor *c) {
    const char *s;
    size_t n;
    int esc, is_int;
    size_t odd = non_finite_literal(c);
    if (odd == LITERAL_CUT) return P_MORE;
    if (odd) {
        c->p += odd;
        if (c->p >= c->end) return P_MORE; /* never the last byte of a complete event */
        c->repairs++;
        return P_OK;
    }
    switch (*c->p) {
    case '"':
        c->p++;
        return scan_string(c, &s, &n, &esc);
    case 't':
        return scan_literal(c, "true", 4);
    case 'f':
        return scan_literal(c, "false", 5);
    case 'n':
        return scan_literal(c, "null", 4);
    default:
        return scan_number(c, &is_int);
    }
}

/* Skip one JSON value without recursion: an unknown arg nested thousands deep is valid JSON scope does
   not read, so it costs neither the C stack nor the event (the Python path keeps it too). The open
   containers are a byte stack (1: object), on the heap past SKIP_STACK levels. `depth` is unused. */
#define SKIP_STACK 256
static int skip_value(cursor *c, int depth) {
    unsigned char small[SKIP_STACK];
    unsigned char *stack = small;
    size_t cap = SKIP_STACK, top = 0;
    int rc = P_OK, at_member = 0; /* at_member: at the start of a member of stack[top-1] */
    (void)depth;
    for (;;) {
        if (at_member && stack[top - 1]) { /* an object member: its key, then the value */
            const char *s;
            size_t n;
            int esc;
            if (*c->p != '"') { rc = P_ERR; break; }
            c->p++;
            if ((rc = scan_string(c, &s, &n, &esc)) != P_OK) break;
            skip_ws(c);
            if (c->p >= c->end) { rc = P_MORE; break; }
            if (*c->p != ':') { rc = P_ERR; break; }
            c->p++;
            skip_ws(c);
            if (c->p >= c->end) { rc = P_MORE; break; }
            if (empty_value(c)) { /* `"k": ,` : a missing value, repaired as before */
                c->repairs++;
                goto after_value;
            }
        }
        at_member = 0;
        skip_ws(c);
        if (c->p >= c->end) { rc = P_MORE; break; }
        if (*c->p == '{' || *c->p == '[') {
            unsigned char is_obj = *c->p == '{';
            char close = is_obj ? '}' : ']';
            c->p++;
            skip_ws(c);
            if (c->p >= c->end) { rc = P_MORE; break; }
            if (*c->p == close) {
                c->p++;
                goto after_value;
            }
            if (top == cap) {
                unsigned char *grown = malloc(cap * 2);
                if (grown == NULL) { rc = P_ERR; break; }
                memcpy(grown, stack, cap);
                if (stack != small) free(stack);
                stack = grown;
                cap *= 2;
            }
            stack[top++] = is_obj;
            at_member = 1;
            continue;
        }
        if ((rc = skip_scalar(c)) != P_OK) break;
    after_value:
        while (top > 0) { /* after a value inside containers: `,` to the next member, or close */
            skip_ws(c);
            if (c->p >= c->end) { rc = P_MORE; goto done; }
            if (*c->p == (stack[top - 1] ? '}' : ']')) {
                c->p++;
                top--;
                continue;
            }
            if (*c->p != ',') { rc = P_ERR; goto done; }
            c->p++;
            skip_ws(c);
            if (c->p >= c->end) { rc = P_MORE; goto done; }
            break;
        }
        if (top == 0) { rc = P_OK; break; }
        at_member = 1;
    }
done:
    if (stack != small) free(stack);
    return rc;
}

/* ------------------------------------------------------------------ value conversions */

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Unescape a JSON string body into out (at most n bytes: escapes never grow the text);
 * returns the length, or -1 for an invalid escape. Lone surrogates become U+FFFD. */
static int64_t unescape(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            out[o++] = s[i];
            continue;
        }
        if (++i >= n) return -1;
        switch (s[i]) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (i + 4 >= n || hex4(s + i + 1, &cp) < 0) return -1;
            i += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < n && s[i + 1] == '\\' && s[i + 2] == 'u' &&
                hex4(s + i + 3, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            return -1;
        }
    }
    return (int64_t)o;
}

/* An integer literal's value; 0 when it does not fit int64 (then *ok = 0). */
static int64_t parse_int_literal(const char *s, size_t n, int *ok) {
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-') {
        neg = 1;
        i++;
    } else if (i < n && s[i] == '+') {
        i++;
    }
    if (i == n) {
        *ok = 0;
        return 0;
    }
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            *ok = 0;
            return 0;
        }
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            *ok = 0;
            return 0;
        }
        v = v * 10 + d;
    }
    if ((!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1)) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return neg ? (int64_t)(0 - v) : (int64_t)v;
}

static double parse_double(const char *s, size_t n, int *ok) {
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) {
        *ok = 0;
        return 0.0;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *endp;
    double v = strtod(tmp, &endp);
    *ok = endp == tmp + n;
    return v;
}

/* Microseconds as written (int, decimal, or exponent) to integer nanoseconds: the integer part
 * times 1000 plus the fraction rounded to whole ns, exact for Kineto's "%.3f" timestamps. */
static int us_text_to_ns(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-') {
        neg = 1;
        i++;
    }
    uint64_t whole = 0;
    size_t digits = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (digits >= 15) goto slow;
        whole = whole * 10 + (uint64_t)(s[i] - '0');
    }
    uint64_t frac = 0;
    int frac_digits = 0, round_up = 0;
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (frac_digits < 3) {
                frac = frac * 10 + (uint64_t)(s[i] - '0');
                frac_digits++;
            } else if (frac_digits == 3) {
                round_up = s[i] >= '5';
                frac_digits++;
            }
        }
    }
    if (i != n) goto slow; /* exponent or junk */
    while (frac_digits < 3) {
        frac *= 10;
        frac_digits++;
    }
    int64_t ns = (int64_t)(whole * 1000 + frac + (uint64_t)round_up);
    *out = neg ? -ns : ns;
    return 0;
slow:;
    int ok;
    double us = parse_double(s, n, &ok);
    if (!ok || !isfinite(us) || fabs(us) > 9.2e15) return -1;
    double w = floor(us);
    *out = (int64_t)w * 1000 + (int64_t)llrint((us - w) * 1000.0);
    return 0;
}

/* ------------------------------------------------------------------ one event */

typedef struct {
    const char *s;
    size_t n;
    int escaped; /* a JSON string body with escapes */
    int present;
} span;

typedef struct {
    span ph, cat, name;
    int64_t pid, tid, ts_ns, dur_ns;
    int64_t corr, ext, stream, device;
    double flops;
    span text[KT_NTEXT];
    int64_t in_nelems, out_nelems, group_size;
    int64_t src_rank, dst_rank;
    int has_comm_key;
    /* a "[memory]" event's args; mem_bytes_seen: it has "Bytes" (INT64_MIN marks a value that is not one) */
    int64_t mem_bytes, mem_alloc, mem_reserved, mem_addr, mem_dev_type, mem_dev_id;
    int mem_bytes_seen;
} event;

/* The value at c as a span: a string's body, or the raw text of any other value. */
static int value_span(cursor *c, span *out, int *is_string, int *is_int) {
    const char *start = c->p;
    *is_string = 0;
    *is_int = 0;
    int rc;
    size_t odd = non_finite_literal(c);
    if (odd == LITERAL_CUT) return P_MORE;
    if (odd) {
        c->p += odd;
        c->repairs++;
        out->s = NULL_TEXT;
        out->n = 4;
        out->escaped = 0;
        out->present = 1;
        return c->p >= c->end ? P_MORE : P_OK;
    }
    if (*c->p == '"') {
        c->p++;
        *is_string = 1;
        rc = scan_string(c, &out->s, &out->n, &out->escaped);
    } else if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
        rc = scan_number(c, is_int);
        out->s = start;
        out->n = (size_t)(c->p - start);
        out->escaped = 0;
    } else {
        rc = skip_value(c, 1);
        out->s = start;
        out->n = (size_t)(c->p - start);
        out->escaped = 0;
    }
    out->present = 1;
    return rc;
}

/* An int arg as Python's int() would take it: int literal, float truncated, numeric string. */
static int64_t lenient_int(const span *v, int is_string, int is_int) {
    int ok;
    if (is_int) {
        int64_t x = parse_int_literal(v->s, v->n, &ok);
        return ok ? x : -1;
    }
    if (is_string && !v->escaped) {
        const char *s = v->s;
        size_t n = v->n;
        while (n && (*s == ' ' || *s == '\t')) s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        int64_t x = parse_int_literal(s, n, &ok);
        return ok ? x : -1;
    }
    if (!is_string && v->n && (v->s[0] == '-' || (v->s[0] >= '0' && v->s[0] <= '9'))) {
        double d = parse_double(v->s, v->n, &ok);
        if (ok && isfinite(d) && fabs(d) < 9.2e18) return (int64_t)d;
    }
    return -1;
}

/* Bytes is negative for a free, so -1 cannot mark a bad value: INT64_MIN does (the event is dropped).
   Only an integer literal counts, as in the Python reader. */
static int64_t mem_int(const span *v, int is_int) {
    int ok;
    if (!is_int) return INT64_MIN;
    int64_t x = parse_int_literal(v->s, v->n, &ok);
    return ok && x != INT64_MIN ? x : INT64_MIN;
}

static double lenient_double(const span *v, int is_string) {
    int ok;
    if (v->n == 0 || v->escaped) return 0.0;
    double d = parse_double(v->s, v->n, &ok);
    return ok ? d : 0.0;
}

#define KEY_IS(s, n, lit) ((n) == sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

static int text_arg_index(const char *k, size_t n) {
    switch (n) {
    case 5: return KEY_IS(k, n, "dtype") ? KT_DTYPE : -1;
    case 10:
        if (KEY_IS(k, n, "Input Dims")) return KT_INPUT_DIMS;
        return KEY_IS(k, n, "Input type") ? KT_INPUT_TYPE : -1;
    case 15:
        if (KEY_IS(k, n, "Concrete Inputs")) return KT_CONCRETE;
        return KEY_IS(k, n, "Collective name") ? KT_COLLECTIVE : -1;
    case 18: return KEY_IS(k, n, "Process Group Name") ? KT_PG_NAME : -1;
    case 19: return KEY_IS(k, n, "Process Group Ranks") ? KT_PG_RANKS : -1;
    case 25: return KEY_IS(k, n, "Process Group Description") ? KT_PG_DESC : -1;
    default: return -1;
    }
}

static int parse_arg(cursor *c, event *ev, const char *k, size_t kn) {
    span v;
    int is_string, is_int;
    int rc = value_span(c, &v, &is_string, &is_int);
    if (rc != P_OK) return rc;
    int text = text_arg_index(k, kn);
    if (text >= 0) {
        ev->text[text] = v;
        if (text != KT_INPUT_DIMS && text != KT_INPUT_TYPE && text != KT_CONCRETE) ev->has_comm_key = 1;
        /* raw JSON for the list-valued ones: Python decodes them */
        if (is_string && (text == KT_PG_RANKS || text == KT_INPUT_DIMS || text == KT_INPUT_TYPE || text == KT_CONCRETE)) {
            ev->text[text].s -= 1;
            ev->text[text].n += 2;
            ev->text[text].escaped = 0;
        } else if (!is_string && (text != KT_PG_RANKS && text != KT_INPUT_DIMS && text != KT_INPUT_TYPE &&
                                  text != KT_CONCRETE) &&
                   (KEY_IS(v.s, v.n, "null") || KEY_IS(v.s, v.n, "false"))) {
            ev->text[text].n = 0; /* str(value or "") */
        }
        return P_OK;
    }
    if (KEY_IS(k, kn, "correlation")) ev->corr = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "External id")) ev->ext = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "stream")) ev->stream = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "device")) ev->device = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "flops")) ev->flops = lenient_double(&v, is_string);
    else if (KEY_IS(k, kn, "Bytes")) ev->mem_bytes = mem_int(&v, is_int), ev->mem_bytes_seen = 1;
    else if (KEY_IS(k, kn, "Total Allocated")) ev->mem_alloc = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "Total Reserved")) ev->mem_reserved = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "Addr")) ev->mem_addr = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "Device Type")) ev->mem_dev_type = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "Device Id")) ev->mem_dev_id = lenient_int(&v, is_string, is_int);
    else if (KEY_IS(k, kn, "In msg nelems")) ev->in_nelems = lenient_int(&v, is_string, is_int), ev->has_comm_key = 1;
    else if (KEY_IS(k, kn, "Out msg nelems")) ev->out_nelems = lenient_int(&v, is_string, is_int), ev->has_comm_key = 1;
    else if (KEY_IS(k, kn, "Group size")) ev->group_size = lenient_int(&v, is_string, is_int), ev->has_comm_key = 1;
    else if (KEY_IS(k, kn, "Src Rank")) ev->src_rank = lenient_int(&v, is_string, is_int), ev->has_comm_key = 1;
    else if (KEY_IS(k, kn, "Dst Rank")) ev->dst_rank = lenient_int(&v, is_string, is_int), ev->has_comm_key = 1;
    return P_OK;
}

/* Iterate "key": value pairs of the object at c, calling on_pair(c, ctx, key) at each value. */
typedef int (*pair_fn)(cursor *c, event *ev, const char *k, size_t kn);

static int parse_object(cursor *c, event *ev, pair_fn on_pair) {
    c->p++; /* { */
    skip_ws(c);
    if (c->p >= c->end) return P_MORE;
    if (*c->p == '}') {
        c->p++;
        return P_OK;
    }
    for (;;) {
        if (*c->p != '"') return P_ERR;
        c->p++;
        const char *k;
        size_t kn;
        int esc, rc;
        if ((rc = scan_string(c, &k, &kn, &esc)) != P_OK) return rc;
        skip_ws(c);
        if (c->p >= c->end) return P_MORE;
        if (*c->p != ':') return P_ERR;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return P_MORE;
        if (empty_value(c)) {
            cursor null_value = {NULL_TEXT, NULL_TEXT + 4, 0};
            c->repairs++;
            rc = esc ? P_OK : on_pair(&null_value, ev, k, kn);
        } else {
            rc = esc ? skip_value(c, 1) : on_pair(c, ev, k, kn);
        }
        if (rc != P_OK) return rc;
        skip_ws(c);
        if (c->p >= c->end) return P_MORE;
        if (*c->p == '}') {
            c->p++;
            return P_OK;
        }
        if (*c->p != ',') return P_ERR;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return P_MORE;
    }
}

/* ts / dur: a number, or a numeric string (read leniently); anything else is 0. */
static int64_t time_value(const span *v, int is_string) {
    int64_t ns;
    int numeric = v->n && (v->s[0] == '-' || (v->s[0] >= '0' && v->s[0] <= '9'));
    if ((is_string && v->escaped) || (!is_string && !numeric)) return 0;
    return us_text_to_ns(v->s, v->n, &ns) < 0 ? 0 : ns;
}

/* A number as Kineto writes ts, dur, pid and tid (an optional `-`, digits without a leading zero, an
   optional fraction), scanned once: the general path (value_span, then time_value or parse_int_literal)
   reads each digit twice. 0, with c untouched, for any other text: the general path takes it as before.
   *whole: the integer part (at most max_digits digits); *frac: the first three fraction digits as ns,
   rounded on the fourth, as us_text_to_ns does. */
static int plain_number(cursor *c, int max_digits, int64_t *whole_out, int64_t *frac_out, int *has_frac) {
    const char *p = c->p, *end = c->end;
    if (p >= end) return 0;
    int neg = *p == '-';
    p += neg;
    if (p >= end || *p < '0' || *p > '9') return 0;
    if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') return 0; /* a leading zero: an error there */
    uint64_t whole = 0;
    int digits = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (++digits > max_digits) return 0;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    uint64_t frac = 0;
    int frac_digits = 0, round_up = 0;
    *has_frac = p < end && *p == '.';
    if (*has_frac) {
        const char *first = ++p;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (frac_digits < 3) frac = frac * 10 + (uint64_t)(*p - '0');
            else if (frac_digits == 3) round_up = *p >= '5';
            frac_digits += frac_digits < 4;
        }
        if (p == first) return 0;
    }
    if (p >= end || *p == 'e' || *p == 'E') return 0; /* an exponent, or cut by the window's end */
    for (; frac_digits < 3; frac_digits++) frac *= 10;
    *whole_out = neg ? -(int64_t)whole : (int64_t)whole;
    *frac_out = neg ? -(int64_t)(frac + (uint64_t)round_up) : (int64_t)(frac + (uint64_t)round_up);
    c->p = p;
    return 1;
}

/* A 16-digit whole number of microseconds (an epoch timestamp, as several real traces write ts) takes the
   general path's strtod, which reads it exactly up to 2^53: the one pass takes it up to there too. With
   a fraction, or above, it stays on the general path, whose double rounding the one pass does not copy. */
#define EXACT_WHOLE_US 9007199254740992ULL /* 2^53 */
#define FAST_DIGITS_LIMIT 1000000000000000ULL /* 10^15: us_text_to_ns' own digits stop below it */

/* ts / dur through plain_number: 1 with *ns set, or 0 (the general path reads it). */
static int plain_time(cursor *c, int64_t *ns) {
    const char *start = c->p;
    int64_t whole, frac;
    int has_frac;
    if (!plain_number(c, 16, &whole, &frac, &has_frac)) return 0;
    uint64_t size = whole < 0 ? 0 - (uint64_t)whole : (uint64_t)whole;
    if (size >= FAST_DIGITS_LIMIT && (has_frac || size > EXACT_WHOLE_US)) {
        c->p = start;
        return 0;
    }
    *ns = whole * 1000 + frac;
    return 1;
}

/* pid / tid through plain_number: an integer literal of at most 18 digits (always fits int64). */
static int plain_id(cursor *c, int64_t *id) {
    cursor probe = *c;
    int64_t whole, frac;
    int has_frac;
    if (!plain_number(&probe, 18, &whole, &frac, &has_frac) || has_frac) return 0;
    *id = whole;
    c->p = probe.p;
    return 1;
}

static int parse_event_key(cursor *c, event *ev, const char *k, size_t kn) {
    int one_pass = atomic_load_explicit(&one_pass_numbers, memory_order_relaxed); /* a plain load on x86 */
    if (one_pass && kn == 2 && k[0] == 't' && k[1] == 's' && plain_time(c, &ev->ts_ns)) return P_OK;
    if (one_pass && kn == 3) {
        if (KEY_IS(k, kn, "dur") && plain_time(c, &ev->dur_ns)) return P_OK;
        if (KEY_IS(k, kn, "pid") && plain_id(c, &ev->pid)) return P_OK;
        if (KEY_IS(k, kn, "tid") && plain_id(c, &ev->tid)) return P_OK;
    }
    span v;
    int is_string, is_int, rc;
    if (KEY_IS(k, kn, "args")) {
        if (*c->p == '{') return parse_object(c, ev, parse_arg);
        return skip_value(c, 1);
    }
    if ((rc = value_span(c, &v, &is_string, &is_int)) != P_OK) return rc;
    switch (kn) {
    case 2:
        if (k[0] == 'p' && k[1] == 'h') ev->ph = v;
        else if (k[0] == 't' && k[1] == 's') ev->ts_ns = time_value(&v, is_string);
        break;
    case 3:
        if (KEY_IS(k, kn, "cat")) ev->cat = v;
        else if (KEY_IS(k, kn, "pid") && is_int) {
            int ok;
            ev->pid = parse_int_literal(v.s, v.n, &ok);
            if (!ok) ev->pid = -1;
        } else if (KEY_IS(k, kn, "tid") && is_int) {
            int ok;
            ev->tid = parse_int_literal(v.s, v.n, &ok);
            if (!ok) ev->tid = -1;
        } else if (KEY_IS(k, kn, "dur")) {
            ev->dur_ns = time_value(&v, is_string);
        }
        break;
    case 4:
        if (KEY_IS(k, kn, "name")) ev->name = v;
        break;
    default:
        break;
    }
    return P_OK;
}

static void event_reset(event *ev) {
    memset(ev, 0, sizeof *ev);
    ev->pid = ev->tid = -1;
    ev->corr = ev->ext = ev->stream = ev->device = -1;
    ev->flops = -1.0;
    ev->in_nelems = ev->out_nelems = ev->group_size = -1;
    ev->src_rank = ev->dst_rank = -1;
    ev->mem_alloc = ev->mem_reserved = ev->mem_addr = -1;
    ev->mem_dev_type = ev->mem_dev_id = -1;
}

/* An instant event named "[memory]" with a usable "Bytes": one row of the memory table. */
static int is_memory_event(const event *ev) {
    return ev->ph.present && ev->ph.n == 1 && ev->ph.s[0] == 'i' && ev->mem_bytes_seen &&
           ev->mem_bytes != INT64_MIN && KEY_IS(ev->name.s, ev->name.n, "[memory]");
}

static int32_t small_int(int64_t x) { return x < INT32_MIN || x > INT32_MAX ? -1 : (int32_t)x; }

static int add_mem(kt_table *t, const event *ev) {
    kt_mem *m = &t->mem;
    if (m->n == m->cap && mem_grow(m) < 0) return -1;
    m->ts_ns[m->n] = ev->ts_ns;
    m->bytes[m->n] = ev->mem_bytes;
    m->total_allocated[m->n] = ev->mem_alloc;
    m->total_reserved[m->n] = ev->mem_reserved;
    m->addr[m->n] = ev->mem_addr;
    m->device_type[m->n] = small_int(ev->mem_dev_type);
    m->device_id[m->n] = small_int(ev->mem_dev_id);
    m->n++;
    return 0;
}

/* ------------------------------------------------------------------ committing rows */

/* The well-formed UTF-8 sequence at p (Unicode's table 3-7): 1 when it is one, with *used its length;
   else 0, with *used the bytes of its maximal ill-formed part (at least 1), as Python's decoder counts. */
static int utf8_sequence(const unsigned char *p, size_t n, size_t *used) {
    unsigned char c = p[0];
    unsigned lo = 0x80, hi = 0xbf;
    size_t need;
    if (c < 0x80) need = 0;
    else if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c == 0xe0) need = 2, lo = 0xa0;
    else if (c == 0xed) need = 2, hi = 0x9f;
    else if (c >= 0xe1 && c <= 0xef) need = 2;
    else if (c == 0xf0) need = 3, lo = 0x90;
    else if (c == 0xf4) need = 3, hi = 0x8f;
    else if (c >= 0xf1 && c <= 0xf3) need = 3;
    else {
        *used = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need && i < n && p[i] >= lo && p[i] <= hi; i++) lo = 0x80, hi = 0xbf;
    *used = i;
    return i == need + 1;
}

static int is_utf8(const char *s, size_t n) {
    size_t i = 0, used;
    for (uint64_t word; i + 8 <= n; i += 8) { /* ASCII, nearly every name: 8 bytes a step */
        memcpy(&word, s + i, 8);
        if (word & 0x8080808080808080ull) break;
    }
    for (; i < n; i += used) {
        if (!((unsigned char)s[i] & 0x80)) { /* ASCII, nearly every name */
            used = 1;
            continue;
        }
        if (!utf8_sequence((const unsigned char *)s + i, n - i, &used)) return 0;
    }
    return 1;
}

/* Parquet's string columns are UTF-8, and a reader refuses a file with one bad byte (a damaged trace
   made `scope analyze` fail on its first frame): each ill-formed part becomes U+FFFD, as
   bytes.decode(errors="replace") makes it, and the event is kept. */
static int32_t intern_repaired(kt_intern *in, const char *s, size_t n) {
    char *out = malloc(3 * n + 1);
    if (!out) return -1;
    size_t o = 0, used;
    for (size_t i = 0; i < n; i += used) {
        if (utf8_sequence((const unsigned char *)s + i, n - i, &used)) {
            memcpy(out + o, s + i, used);
            o += used;
        } else {
            o += put_utf8(out + o, 0xfffd);
        }
    }
    int32_t id = intern(in, out, o);
    free(out);
    return id;
}

static int32_t intern_text(kt_intern *in, const char *s, size_t n) {
    return is_utf8(s, n) ? intern(in, s, n) : intern_repaired(in, s, n);
}

/* Intern a span (unescaping when needed) into in; -1 out of memory, -2 bad escape. */
static int32_t intern_span(kt_intern *in, const span *v, kt_bytes *scratch) {
    if (!v->present) return intern(in, "", 0);
    if (!v->escaped) return intern_text(in, v->s, v->n);
    scratch->len = 0;
    if (kb_reserve(scratch, v->n + 4) < 0) return -1;
    int64_t n = unescape(v->s, v->n, scratch->data);
    if (n < 0) return intern_text(in, v->s, v->n); /* keep the raw text rather than lose the event */
    return intern_text(in, scratch->data, (size_t)n);
}

static int starts_with(const span *v, const char *prefix) {
    size_t n = strlen(prefix);
    return v->n >= n && memcmp(v->s, prefix, n) == 0;
}

static int is_comm_name(const span *name) {
    /* symm_mem:: and _C_custom_ar:: ops launch catalog kernels (scope/ingest/comm_kernels.py LAUNCH_OP_PREFIXES) */
    return starts_with(name, "gloo:") || starts_with(name, "c10d::") || starts_with(name, "nccl:") ||
           starts_with(name, "symm_mem::") || starts_with(name, "_C_custom_ar::") ||
           KEY_IS(name->s, name->n, "record_param_comms");
}

static int add_comm(kt_table *t, const event *ev, kt_bytes *scratch) {
    if (t->ncomms == t->comms_cap) {
        int64_t cap = t->comms_cap ? t->comms_cap * 2 : 1024;
        kt_comm *comms = realloc(t->comms, (size_t)cap * sizeof *comms);
        if (!comms) return -1;
        t->comms = comms;
        t->comms_cap = cap;
    }
    kt_comm *cm = &t->comms[t->ncomms];
    for (int i = 0; i < KT_NTEXT; i++) {
        const span *v = &ev->text[i];
        cm->text_off[i] = (int64_t)t->comm_text.len;
        cm->text_len[i] = -1;
        if (!v->present) continue;
        const char *s = v->s;
        int64_t n = (int64_t)v->n;
        if (v->escaped) {
            scratch->len = 0;
            if (kb_reserve(scratch, v->n + 4) < 0) return -1;
            int64_t m = unescape(v->s, v->n, scratch->data);
            if (m >= 0) {
                s = scratch->data;
                n = m;
            }
        }
        if (kb_append(&t->comm_text, s, (size_t)n) < 0) return -1;
        cm->text_len[i] = (int32_t)n;
    }
    cm->in_nelems = ev->in_nelems;
    cm->out_nelems = ev->out_nelems;
    cm->group_size = ev->group_size;
    cm->src_rank = ev->src_rank;
    cm->dst_rank = ev->dst_rank;
    t->ncomms++;
    return 0;
}

static int add_row(kt_table *t, const event *ev, int64_t event_id, kt_bytes *scratch) {
    kt_rows *r = &t->rows;
    if (r->n == r->cap && rows_grow(r) < 0) return -1;
    int32_t cat = intern_span(&t->cats, &ev->cat, scratch);
    int32_t name = intern_span(&t->names, &ev->name, scratch);
    if (cat < 0 || name < 0) return -1;
    uint64_t key = ((uint64_t)(uint32_t)cat << 32) | (uint32_t)name;
    int32_t pair = intern(&t->pairs, (const char *)&key, sizeof key);
    if (pair < 0) return -1;
    int64_t i = r->n;
    r->event_id[i] = event_id;
    r->ts_ns[i] = ev->ts_ns;
    r->dur_ns[i] = ev->dur_ns;
    r->pid[i] = ev->pid;
    r->tid[i] = ev->tid;
    r->corr[i] = ev->corr;
    r->ext[i] = ev->ext;
    r->stream_arg[i] = ev->stream;
    r->device_arg[i] = ev->device;
    r->flops[i] = ev->flops;
    r->pair[i] = pair;
    r->comm[i] = -1;
    if (ev->has_comm_key || (ev->name.present && !ev->name.escaped && is_comm_name(&ev->name))) {
        if (add_comm(t, ev, scratch) < 0) return -1;
        r->comm[i] = (int32_t)(t->ncomms - 1);
    }
    r->n++;
    return 0;
}

/* ------------------------------------------------------------------ the file loop */

static const char EVENTS_KEY[] = "\"traceEvents\"";

/* Position just after `"traceEvents" : [` in buf[0:len), or -1 (-2: maybe cut at the end). */
static int64_t find_array_start(const char *buf, size_t len, size_t from) {
    const size_t klen = sizeof EVENTS_KEY - 1;
    size_t at = from;
    while (at + klen <= len) {
        const char *hit = memmem(buf + at, len - at, EVENTS_KEY, klen);
        if (!hit) return -1;
        const char *p = hit + klen, *end = buf + len;
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
        if (p < end && *p == ':') {
            p++;
            while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
            if (p < end && *p == '[') return (int64_t)(p + 1 - buf);
        }
        if (p >= end) return -2;
        at = (size_t)(hit - buf) + 1;
    }
    return -1;
}

static int all_whitespace(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) return 0;
    return 1;
}

/* Reads until the array opens; returns the position after `[` in the window, or -1 (status set). */
static int64_t read_head(source *s, kt_read_result *res) {
    size_t searched = 0;
    for (;;) {
        int64_t at = find_array_start(s->buf, s->len, searched > 32 ? searched - 32 : 0);
        if (at >= 0) {
            const char *key = memmem(s->buf, (size_t)at, EVENTS_KEY, sizeof EVENTS_KEY - 1);
            size_t head_len = (size_t)(key - s->buf);
            if (kb_append(&res->head, s->buf, head_len) < 0) {
                res->status = KT_NO_MEMORY;
                return -1;
            }
            return at;
        }
        searched = s->len;
        if (s->eof || (int64_t)s->len > MAX_HEAD_BYTES) break;
        if (source_fill(s) < 0) {
            res->status = KT_IO_ERROR;
            return -1;
        }
    }
    if (s->gz && s->produced == 0 && (res->gzip_problem || res->gzip_msg[0])) res->status = KT_GZIP_BAD;
    else if (all_whitespace(s->buf, s->len)) res->status = KT_EMPTY;
    else res->status = KT_NOT_TRACE;
    return -1;
}

static void read_tail(source *s, size_t pos, kt_read_result *res) {
    source_discard(s, pos);
    while (!s->eof && (int64_t)s->len < MAX_TAIL_BYTES)
        if (source_fill(s) < 0) break;
    kb_append(&res->tail, s->buf, s->len);
}

/* Parse one array element at c; P_OK with *is_x set when it is a complete event. */
static int parse_element(cursor *c, event *ev) {
    event_reset(ev);
    if (*c->p != '{') return skip_value(c, 1);
    return parse_object(c, ev, parse_event_key);
}

/* After the array's `]` at window position close: the position after the `[` of a further
 * "traceEvents" array (traces concatenated from several profiler sessions), or -1 (none; reading
 * on up to MAX_SESSION_GAP bytes for its header). The window may be refilled. */
#define MAX_SESSION_GAP (1 << 20)
static int64_t next_session(source *s, size_t close) {
    source_discard(s, close);
    for (;;) {
        int64_t at = find_array_start(s->buf, s->len, 1);
        if (at >= 0) return at;
        if (s->eof || s->len > MAX_SESSION_GAP) return -1;
        if (source_fill(s) < 0) return -1;
    }
}

/* The array closed at window position close: go on with the next session's array, or read the tail. */
static int array_closed(source *s, size_t close, size_t *pos, kt_read_result *res) {
    int64_t next = next_session(s, close);
    if (next < 0) {
        read_tail(s, 1, res); /* the window starts at the `]` */
        return 0;
    }
    res->sessions++;
    *pos = (size_t)next;
    return 1;
}

static inline int is_ws(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

/* Window position of the `{` after the next `}` `,` `{` in buf[from, len), or -1. That is how two
 * events of the array meet; inside an event it occurs only in a string or an array of objects,
 * which the parse of the event found there (the caller tries it) rules out. */
static int64_t next_boundary(const char *buf, size_t from, size_t len, char after) {
    const char *p = buf + from, *end = buf + len;
    while (p < end && (p = memchr(p, '}', (size_t)(end - p))) != NULL) {
        const char *q = p + 1;
        while (q < end && is_ws(*q)) q++;
        if (after == '{' && q < end && *q == ',') {
            q++;
            while (q < end && is_ws(*q)) q++;
            if (q < end && *q == '{') return q - buf;
        } else if (after == ']' && q < end && *q == ']') {
            return q - buf;
        }
        p++;
    }
    return -1;
}

/* Whether buf[p, end) can follow the event array's `]`: the rest of the header object, i.e. nothing,
 * `}`, or `, "key": value ... }`, then only whitespace. */
static int header_tail_ok(const char *p, const char *end) {
    cursor c = {p, end, 0};
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') {
        for (;;) {
            c.p++; /* the `,` */
            skip_ws(&c);
            if (c.p >= c.end || *c.p != '"') return 0;
            c.p++;
            const char *k;
            size_t kn;
            int esc;
            if (scan_string(&c, &k, &kn, &esc) != P_OK) return 0;
            skip_ws(&c);
            if (c.p >= c.end || *c.p != ':') return 0;
            c.p++;
            if (skip_value(&c, 1) != P_OK) return 0;
            skip_ws(&c);
            if (c.p >= c.end) return 0;
            if (*c.p == '}') break;
            if (*c.p != ',') return 0;
        }
    }
    if (c.p < c.end && *c.p == '}') c.p++;
    skip_ws(&c);
    return c.p == c.end;
}

/* After a malformed last event: the array's `]` is taken to be the last of the 32 rightmost `]`
 * in buf[from, len) that follows a `}` and precedes a valid header tail (the Python path's rule). */
static int64_t last_array_close(const char *buf, size_t from, size_t len) {
    size_t at = len;
    for (int tries = 0; tries < 32 && at > from; tries++) {
        const char *hit = NULL;
        for (size_t i = at; i > from; i--)
            if (buf[i - 1] == ']') {
                hit = buf + i - 1;
                break;
            }
        if (!hit) return -1;
        at = (size_t)(hit - buf);
        const char *q = hit;
        while (q > buf + from && is_ws(q[-1])) q--;
        if (q > buf + from && q[-1] == '}' && header_tail_ok(hit + 1, buf + len)) return hit - buf;
    }
    return -1;
}

typedef struct {
    int active;
    int64_t start, events; /* stream offset where the skipped bytes begin; events skipped */
} bad_run;

static void bad_run_end(kt_read_result *res, bad_run *bad, int64_t end) {
    if (!bad->active) return;
    if (res->nregions < KT_MAX_REGIONS) {
        res->region_start[res->nregions] = bad->start;
        res->region_end[res->nregions] = end;
        res->region_events[res->nregions] = bad->events;
    }
    res->nregions++;
    res->events_skipped += bad->events;
    bad->active = 0;
}

/* After a malformed element at window position start: the window position of the next event's `{`,
 * reading on as needed; -1 at end of input (*from: where the search ended), -2 on a read error. */
static int64_t resync(source *s, size_t start, size_t *from) {
    *from = start + 1;
    for (;;) {
        int64_t q = next_boundary(s->buf, *from, s->len, '{');
        if (q >= 0 || s->eof) return q;
        size_t rescan = s->len > *from + 64 ? s->len - 64 : *from; /* a boundary may straddle the refill */
        source_discard(s, rescan);
        *from = 0;
        if (source_fill(s) < 0) return -2;
    }
}

/* A malformed element at window position start; returns 1 when parsing resumes at *pos, 0 when the
 * array ended (status and tail set). An element cut off by the end of input is a truncation. */
static int skip_bad(source *s, size_t start, int cut, size_t *pos, bad_run *bad, int64_t last_end,
                    kt_read_result *res) {
    int64_t at = s->base + (int64_t)start;
    size_t from;
    int64_t next = resync(s, start, &from);
    if (next == -2) {
        res->status = KT_IO_ERROR;
        return 0;
    }
    if (next >= 0 || !cut) {
        if (!bad->active) *bad = (bad_run){1, at, 0};
        bad->events++;
    }
    if (next >= 0) {
        *pos = (size_t)next;
        return 1;
    }
    int64_t close = cut ? -1 : last_array_close(s->buf, from, s->len);
    bad_run_end(res, bad, close >= 0 ? s->base + close : cut ? at : s->base + (int64_t)s->len);
    if (close >= 0) {
        if (array_closed(s, (size_t)close, pos, res)) return 1;
    } else {
        res->status = KT_TRUNCATED;
        res->salvage_offset = last_end;
    }
    return 0;
}

static void scan_array(kt_table *t, source *s, size_t pos, int64_t first_id, kt_read_result *res) {
    event ev;
    kt_bytes scratch = {0};
    int first = 1;
    bad_run bad = {0};
    int64_t last_end = s->base + (int64_t)pos; /* stream offset after the last complete event */
    for (;;) {
        cursor c = {s->buf + pos, s->buf + s->len, 0};
        skip_ws(&c);
        int rc = P_MORE;
        size_t start = (size_t)(c.p - s->buf);
        if (c.p < c.end) {
            if (first && *c.p == ']') {
                if (array_closed(s, start, &pos, res)) continue;
                break;
            }
            rc = parse_element(&c, &ev);
            if (rc == P_OK) { /* the separator must be there too */
                skip_ws(&c);
                if (c.p >= c.end) rc = P_MORE;
                else if (*c.p != ',' && *c.p != ']') rc = P_ERR;
            }
        }
        if (rc == P_MORE && !s->eof) {
            source_discard(s, start);
            pos = 0;
            /* An event longer than the buffer: at least double what is held, so an event of gigabytes
               is parsed again a logarithmic number of times, not once per FILL_BYTES (quadratic). */
            size_t fill = atomic_load(&fill_bytes);
            if (source_fill_n(s, s->len > fill ? s->len : fill) < 0) {
                res->status = KT_IO_ERROR;
                break;
            }
            continue;
        }
        if (rc != P_OK) {
            if (skip_bad(s, start, rc == P_MORE, &pos, &bad, last_end, res)) continue;
            break;
        }
        bad_run_end(res, &bad, s->base + (int64_t)start);
        if (c.repairs && res->events_repaired++ == 0) res->repair_offset = s->base + (int64_t)start;
        int complete = ev.ph.present && ev.ph.n == 1 && ev.ph.s[0] == 'X';
        if (complete && ev.dur_ns < 0) { /* an event whose end was lost: read as 0, with a warning */
            ev.dur_ns = 0;
            res->negative_dur++;
        }
        if (complete && add_row(t, &ev, first_id + res->events_seen, &scratch) < 0) {
            res->status = KT_NO_MEMORY;
            break;
        }
        if (!complete && is_memory_event(&ev) && add_mem(t, &ev) < 0) {
            res->status = KT_NO_MEMORY;
            break;
        }
        res->events_seen++;
        first = 0;
        last_end = s->base + (int64_t)(c.p - s->buf);
        if (*c.p == ']') {
            first = 1;
            if (array_closed(s, (size_t)(c.p - s->buf), &pos, res)) continue;
            break;
        }
        pos = (size_t)(c.p - s->buf) + 1; /* after the comma */
    }
    kb_free(&scratch);
}

void kt_read_file(kt_table *t, const char *path, int64_t first_id, kt_read_result *res) {
    memset(res, 0, sizeof *res);
    int64_t rows_before = t->rows.n;
    source s;
    if (source_open(&s, path, res) < 0) {
        res->status = s.fh ? KT_NO_MEMORY : KT_IO_ERROR;
        source_close(&s);
        return;
    }
    if (source_fill(&s) < 0) {
        res->status = KT_IO_ERROR;
    } else {
        int64_t at = read_head(&s, res);
        if (at >= 0) scan_array(t, &s, (size_t)at, first_id, res);
    }
    res->bytes = s.produced;
    res->rows_added = t->rows.n - rows_before;
    source_close(&s);
}

/* ------------------------------------------------------------------ finishing */

int64_t kt_max_ts(const kt_table *t, int64_t from) {
    int64_t best = INT64_MIN;
    for (int64_t i = from < 0 ? 0 : from; i < t->rows.n; i++)
        if (t->rows.ts_ns[i] > best) best = t->rows.ts_ns[i];
    return best;
}

void kt_shift(kt_table *t, int64_t from, int64_t offset_ns) {
    for (int64_t i = from < 0 ? 0 : from; i < t->rows.n; i++) t->rows.ts_ns[i] += offset_ns;
}

void kt_shift_mem(kt_table *t, int64_t from, int64_t offset_ns) {
    for (int64_t i = from < 0 ? 0 : from; i < t->mem.n; i++) t->mem.ts_ns[i] += offset_ns;
}

typedef struct {
    int64_t ts;
    int64_t row;
} ts_row;

/* Digits of the LSD radix sort below: 11 bits, so that a trace spanning up to 2**44 ns (4.9 hours) sorts in
   four passes over the rows. */
enum { RADIX_BITS = 11, RADIX_SIZE = 1 << RADIX_BITS };

static inline size_t radix_digit(int64_t ts, int64_t lo, int shift) {
    return (size_t)((((uint64_t)ts - (uint64_t)lo) >> shift) & (RADIX_SIZE - 1));
}

/* order[] (every ts from lo up, rows in their order) sorted by ts, equal ts keeping their rows' order: an LSD
   radix sort, stable by construction, on ts - lo. It replaced qsort with a comparator (glibc's merge sort),
   ~4% of a 27k-event rank's ingest; the order is the same. -1: no memory. */
static int radix_sort_ts(ts_row *order, int64_t n, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    ts_row *tmp = malloc((size_t)n * sizeof *tmp);
    size_t *count = malloc(RADIX_SIZE * sizeof *count);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return -1;
    }
    ts_row *src = order, *dst = tmp;
    for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += RADIX_BITS) {
        memset(count, 0, RADIX_SIZE * sizeof *count);
        for (int64_t i = 0; i < n; i++) count[radix_digit(src[i].ts, lo, shift)]++;
        size_t at = 0;
        for (size_t d = 0; d < RADIX_SIZE; d++) {
            size_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (int64_t i = 0; i < n; i++) dst[count[radix_digit(src[i].ts, lo, shift)]++] = src[i];
        ts_row *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != order) memcpy(order, src, (size_t)n * sizeof *order);
    free(tmp);
    free(count);
    return 0;
}

#define PERMUTE(col, type)                                          \
    do {                                                            \
        type *out_ = malloc((size_t)(n ? n : 1) * sizeof(type));   \
        if (!out_) goto fail;                                       \
        for (int64_t i_ = 0; i_ < n; i_++) out_[i_] = (col)[order[i_].row]; \
        free(col);                                                  \
        (col) = out_;                                               \
    } while (0)

/* Stable sort of every column by ts. */
static int sort_rows(kt_rows *r) {
    int64_t n = r->n;
    ts_row *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return -1;
    int sorted = 1;
    int64_t lo = n ? r->ts_ns[0] : 0, hi = lo;
    for (int64_t i = 0; i < n; i++) {
        order[i].ts = r->ts_ns[i];
        order[i].row = i;
        if (i && r->ts_ns[i] < r->ts_ns[i - 1]) sorted = 0;
        if (r->ts_ns[i] < lo) lo = r->ts_ns[i];
        if (r->ts_ns[i] > hi) hi = r->ts_ns[i];
    }
    if (sorted) {
        free(order);
        return 0;
    }
    if (radix_sort_ts(order, n, lo, hi) != 0) goto fail;
    PERMUTE(r->event_id, int64_t);
    PERMUTE(r->ts_ns, int64_t);
    PERMUTE(r->dur_ns, int64_t);
    PERMUTE(r->pid, int64_t);
    PERMUTE(r->tid, int64_t);
    PERMUTE(r->corr, int64_t);
    PERMUTE(r->ext, int64_t);
    PERMUTE(r->stream_arg, int64_t);
    PERMUTE(r->device_arg, int64_t);
    PERMUTE(r->flops, double);
    PERMUTE(r->pair, int32_t);
    PERMUTE(r->comm, int32_t);
    r->cap = n;
    free(order);
    return 0;
fail:
    free(order);
    return -1;
}

static void derive_placement(kt_rows *r, const uint8_t *pair_on_gpu) {
    for (int64_t i = 0; i < r->n; i++) {
        if (pair_on_gpu[r->pair[i]]) {
            r->device[i] = (int32_t)(r->device_arg[i] >= 0 ? r->device_arg[i] : r->pid[i]);
            r->stream[i] = r->stream_arg[i] >= 0 ? r->stream_arg[i] : r->tid[i];
            r->thread[i] = -1;
        } else {
            r->device[i] = -1;
            r->stream[i] = -1;
            r->thread[i] = r->tid[i];
        }
    }
}

static int32_t step_number(const kt_intern *names, int32_t name) {
    const char *s = names->arena.data + names->offset[name];
    int32_t n = names->length[name];
    const char *hash = memchr(s, '#', (size_t)n);
    if (!hash) return -1;
    int ok;
    int64_t v = parse_int_literal(hash + 1, (size_t)(s + n - hash - 1), &ok);
    return ok && v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : -1;
}

/* CPU rows: the ProfilerStep window containing them, i.e. the latest window started at or before
 * them (numpy's searchsorted(starts, ts, "right") - 1), if they start before it ends. */
static int assign_steps_by_time(kt_table *t, const uint8_t *pair_is_step) {
    kt_rows *r = &t->rows;
    int64_t nwin = 0;
    for (int64_t i = 0; i < r->n; i++) nwin += pair_is_step[r->pair[i]] != 0;
    int64_t *start = malloc((size_t)(nwin ? nwin : 1) * sizeof *start);
    int64_t *end = malloc((size_t)(nwin ? nwin : 1) * sizeof *end);
    int32_t *number = malloc((size_t)(nwin ? nwin : 1) * sizeof *number);
    if (!start || !end || !number) {
        free(start), free(end), free(number);
        return -1;
    }
    int64_t w = 0;
    for (int64_t i = 0; i < r->n; i++) { /* rows are in ts order, so windows are in start order */
        int32_t pair = r->pair[i];
        if (!pair_is_step[pair]) continue;
        uint64_t key;
        memcpy(&key, t->pairs.arena.data + t->pairs.offset[pair], sizeof key);
        start[w] = r->ts_ns[i];
        end[w] = r->ts_ns[i] + r->dur_ns[i];
        number[w] = step_number(&t->names, (int32_t)(key & 0xffffffffu));
        w++;
    }
    int64_t k = 0; /* windows with start <= ts */
    for (int64_t i = 0; i < r->n; i++) {
        while (k < nwin && start[k] <= r->ts_ns[i]) k++;
        r->step[i] = k > 0 && r->ts_ns[i] < end[k - 1] ? number[k - 1] : -1;
    }
    free(start), free(end), free(number);
    return 0;
}

static int build_launch_index(kt_table *t);

/* GPU rows take the step of the CPU row that launched them (same correlation id). */
static int assign_gpu_steps(kt_table *t) {
    kt_rows *r = &t->rows;
    int any_gpu = 0;
    for (int64_t i = 0; i < r->n && !any_gpu; i++) any_gpu = r->device[i] >= 0 && r->corr[i] >= 0;
    if (!any_gpu) return 0;
    if (build_launch_index(t) < 0) return -1;
    if (t->nlaunch == 0) return 0;
    int32_t *cpu_step = malloc((size_t)r->n * sizeof *cpu_step);
    if (!cpu_step) return -1;
    memcpy(cpu_step, r->step, (size_t)r->n * sizeof *cpu_step);
    for (int64_t i = 0; i < r->n; i++) {
        if (r->device[i] < 0 || r->corr[i] < 0) continue;
        int64_t row = kt_launch_row(t, r->corr[i]);
        if (row >= 0) r->step[i] = cpu_step[row];
    }
    free(cpu_step);
    return 0;
}

int kt_finish(kt_table *t, const uint8_t *pair_on_gpu, const uint8_t *pair_is_step) {
    kt_rows *r = &t->rows;
    if (sort_rows(r) < 0) return -1;
    size_t n = (size_t)(r->n ? r->n : 1);
    r->device = malloc(n * sizeof *r->device);
    r->step = malloc(n * sizeof *r->step);
    r->stream = malloc(n * sizeof *r->stream);
    r->thread = malloc(n * sizeof *r->thread);
    if (!r->device || !r->step || !r->stream || !r->thread) return -1;
    derive_placement(r, pair_on_gpu);
    if (assign_steps_by_time(t, pair_is_step) < 0 || assign_gpu_steps(t) < 0) return -1;
    t->finished = 1;
    return 0;
}

/* ------------------------------------------------------------------ launch lookup */

static int by_corr_then_row(const void *a, const void *b) {
    const ts_row *x = a, *y = b; /* reuses ts_row: ts holds the correlation id */
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->row < y->row ? -1 : (x->row > y->row);
}

static int build_launch_index(kt_table *t) {
    if (t->launch_built) return 0;
    kt_rows *r = &t->rows;
    ts_row *cpu = malloc((size_t)(r->n ? r->n : 1) * sizeof *cpu);
    if (!cpu) return -1;
    int64_t m = 0;
    for (int64_t i = 0; i < r->n; i++)
        if (r->device[i] < 0 && r->corr[i] >= 0) cpu[m++] = (ts_row){r->corr[i], i};
    qsort(cpu, (size_t)m, sizeof *cpu, by_corr_then_row);
    t->launch_corr = malloc((size_t)(m ? m : 1) * sizeof *t->launch_corr);
    t->launch_row = malloc((size_t)(m ? m : 1) * sizeof *t->launch_row);
    if (!t->launch_corr || !t->launch_row) {
        free(cpu);
        return -1;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < m; i++) {
        if (k && t->launch_corr[k - 1] == cpu[i].ts) continue; /* first row (in time) per id */
        t->launch_corr[k] = cpu[i].ts;
        t->launch_row[k] = cpu[i].row;
        k++;
    }
    t->nlaunch = k;
    t->launch_built = 1;
    free(cpu);
    return 0;
}

int64_t kt_launch_row(kt_table *t, int64_t corr) {
    if (!t->rows.device) return -1; /* placement not derived yet */
    if (build_launch_index(t) < 0) return -1;
    int64_t lo = 0, hi = t->nlaunch;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (t->launch_corr[mid] < corr) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->nlaunch && t->launch_corr[lo] == corr ? t->launch_row[lo] : -1;
}
