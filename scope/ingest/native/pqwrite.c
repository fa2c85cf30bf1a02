/* pqwrite.c: the Parquet writer behind pqwrite.h.
 *
 * Pure C (no Python API calls), so the binding can run it with the GIL released, from several
 * threads at once for different files: all state lives in a per-call `writer`; the only shared
 * state is the table of libzstd entry points, filled once under pthread_once.
 *
 * File layout: "PAR1", then per row group and per column one column chunk (for strings a
 * dictionary page first, then data pages v1 of at most PAGE_MAX_ROWS rows), then the footer
 * (FileMetaData, Thrift compact protocol), its 4-byte little-endian length and "PAR1".
 *
 * On failure pq_write also leaves the cause in errno (ENOMEM, EINVAL for bad input, or the
 * failing system call's errno), so a binding can pick the right exception.
 */
#include "pqwrite.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pqwrite.c copies values with memcpy, which is Parquet's PLAIN encoding only on little-endian hosts"
#endif

/* ---- limits ---------------------------------------------------------------------------------------- */

enum {
    PAGE_MAX_ROWS = 128 * 1024,       /* rows per data page ... */
    PAGE_MAX_VALUE_BYTES = 1 << 20,   /* ... and at most ~1 MB of values */
    OUT_FLUSH_BYTES = 4 << 20,        /* buffered output written to the file past this size */
    STAT_MAX_BYTES = 4096,            /* string min/max longer than this are left out (as parquet-cpp does) */
    ZSTD_LEVEL = 1,
};

/* ---- Parquet and Thrift constants (parquet.thrift) --------------------------------------------------- */

enum { T_BOOLEAN = 0, T_INT32 = 1, T_INT64 = 2, T_DOUBLE = 5, T_BYTE_ARRAY = 6 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { REPETITION_OPTIONAL = 1 };
enum { CONVERTED_UTF8 = 0 };
enum { FILE_FORMAT_VERSION = 2 }; /* RLE_DICTIONARY is a format-2 encoding */

/* Thrift compact protocol type ids. */
enum { CT_STOP = 0, CT_I16 = 4, CT_I32 = 5, CT_I64 = 6, CT_BINARY = 8, CT_LIST = 9, CT_STRUCT = 12 };

/* ---- libzstd, loaded at run time --------------------------------------------------------------------- */

/* Prototypes of the few zstd functions used (stable API since zstd 1.0; there are no headers here). */
typedef size_t (*zstd_compress_fn)(void *dst, size_t cap, const void *src, size_t n, int level);
typedef size_t (*zstd_bound_fn)(size_t n);
typedef unsigned (*zstd_is_error_fn)(size_t code);
typedef void *(*zstd_create_cctx_fn)(void);
typedef size_t (*zstd_free_cctx_fn)(void *cctx);
typedef size_t (*zstd_compress_cctx_fn)(void *cctx, void *dst, size_t cap, const void *src, size_t n, int level);

static struct {
    int loaded;
    zstd_compress_fn compress;
    zstd_bound_fn bound;
    zstd_is_error_fn is_error;
    /* Optional: a context reused across the pages of one file saves ZSTD_compress's per-call setup. */
    zstd_create_cctx_fn create_cctx;
    zstd_free_cctx_fn free_cctx;
    zstd_compress_cctx_fn compress_cctx;
} zstd;

static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;

static void zstd_load(void) {
    void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) lib = dlopen("libzstd.so", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) return;
    zstd.compress = (zstd_compress_fn)dlsym(lib, "ZSTD_compress");
    zstd.bound = (zstd_bound_fn)dlsym(lib, "ZSTD_compressBound");
    zstd.is_error = (zstd_is_error_fn)dlsym(lib, "ZSTD_isError");
    if (zstd.compress == NULL || zstd.bound == NULL || zstd.is_error == NULL) {
        dlclose(lib);
        return;
    }
    zstd.create_cctx = (zstd_create_cctx_fn)dlsym(lib, "ZSTD_createCCtx");
    zstd.free_cctx = (zstd_free_cctx_fn)dlsym(lib, "ZSTD_freeCCtx");
    zstd.compress_cctx = (zstd_compress_cctx_fn)dlsym(lib, "ZSTD_compressCCtx");
    if (zstd.create_cctx == NULL || zstd.free_cctx == NULL || zstd.compress_cctx == NULL) {
        zstd.create_cctx = NULL;
        zstd.free_cctx = NULL;
        zstd.compress_cctx = NULL;
    }
    zstd.loaded = 1; /* the library stays loaded for the life of the process */
}

int pq_have_zstd(void) {
    pthread_once(&zstd_once, zstd_load);
    return zstd.loaded;
}

/* ---- growable byte buffer ---------------------------------------------------------------------------- */

/* A failed allocation sets `failed` and turns later appends into no-ops, so code that appends many
 * small pieces (the Thrift footer) checks once at the end instead of after every field. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed;
} pq_buf;

static int buf_reserve(pq_buf *b, size_t extra) {
    if (b->failed) return -1;
    if (extra <= b->cap - b->len) return 0;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return -1;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    uint8_t *data = realloc(b->data, cap);
    if (data == NULL) {
        b->failed = 1;
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static void buf_put(pq_buf *b, const void *src, size_t n) {
    if (n == 0 || buf_reserve(b, n) < 0) return;
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void buf_byte(pq_buf *b, uint8_t v) { buf_put(b, &v, 1); }

static void buf_free(pq_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ULEB128, as used by Thrift compact integers and the RLE/bit-packed hybrid headers. */
static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static void buf_varint(pq_buf *b, uint64_t v) {
    uint8_t tmp[10];
    buf_put(b, tmp, (size_t)(put_varint(tmp, v) - tmp));
}

static void buf_u32le(pq_buf *b, uint32_t v) {
    uint8_t tmp[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_put(b, tmp, 4);
}

/* ---- Thrift compact protocol encoder ----------------------------------------------------------------- */

enum { THRIFT_MAX_DEPTH = 16 };

/* Field headers carry the delta from the previous field id of the same struct, hence the stack. */
typedef struct {
    pq_buf *out;
    int depth;
    int16_t last_id[THRIFT_MAX_DEPTH];
} thrift;

static uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static void th_init(thrift *t, pq_buf *out) {
    t->out = out;
    t->depth = 0;
    t->last_id[0] = 0;
}

static void th_field(thrift *t, int16_t id, uint8_t type) {
    int delta = id - t->last_id[t->depth];
    if (delta > 0 && delta <= 15) {
        buf_byte(t->out, (uint8_t)(delta << 4 | type));
    } else {
        buf_byte(t->out, type);
        buf_varint(t->out, zigzag64(id));
    }
    t->last_id[t->depth] = id;
}

static void th_i32(thrift *t, int16_t id, int32_t v) {
    th_field(t, id, CT_I32);
    buf_varint(t->out, zigzag64(v));
}

static void th_i64(thrift *t, int16_t id, int64_t v) {
    th_field(t, id, CT_I64);
    buf_varint(t->out, zigzag64(v));
}

static void th_binary(thrift *t, int16_t id, const void *data, size_t n) {
    th_field(t, id, CT_BINARY);
    buf_varint(t->out, n);
    buf_put(t->out, data, n);
}

static void th_string(thrift *t, int16_t id, const char *s) { th_binary(t, id, s, strlen(s)); }

/* Opens a struct that is a list element (no field header): its field ids start again from 0. */
static void th_element_begin(thrift *t) {
    if (t->depth + 1 >= THRIFT_MAX_DEPTH) { /* cannot happen with the fixed Parquet nesting */
        t->out->failed = 1;
        return;
    }
    t->depth++;
    t->last_id[t->depth] = 0;
}

static void th_struct_begin(thrift *t, int16_t id) {
    th_field(t, id, CT_STRUCT);
    th_element_begin(t);
}

/* Ends the current struct (nested or the top-level one) with a stop field. */
static void th_struct_end(thrift *t) {
    buf_byte(t->out, CT_STOP);
    if (t->depth > 0) t->depth--;
}

static void th_list_begin(thrift *t, int16_t id, uint8_t elem_type, size_t n) {
    th_field(t, id, CT_LIST);
    if (n < 15) {
        buf_byte(t->out, (uint8_t)(n << 4 | elem_type));
    } else {
        buf_byte(t->out, (uint8_t)(0xF0 | elem_type));
        buf_varint(t->out, n);
    }
}

/* ---- RLE / bit-packed hybrid encoding ------------------------------------------------------------------ */

/* Worst case of put_hybrid: every 8 values cost at most one header (<= 5 bytes) plus either one
 * RLE value (<= 4 bytes) or one bit-packed group (width bytes). */
static size_t hybrid_bound(size_t n, int width) { return (n / 8 + 2) * (size_t)(width + 9); }

static int bit_width(uint32_t max_value) {
    int w = 0;
    while (w < 32 && (max_value >> w) != 0) w++;
    return w;
}

static uint8_t *put_rle_run(uint8_t *p, size_t count, uint32_t value, int width) {
    p = put_varint(p, (uint64_t)count << 1);
    for (int b = 0; b < (width + 7) / 8; b++) *p++ = (uint8_t)(value >> (8 * b));
    return p;
}

/* count values bit-packed LSB first, padded with zeros to whole groups of 8. */
static uint8_t *put_bitpacked(uint8_t *p, const uint32_t *v, size_t count, int width) {
    size_t groups = (count + 7) / 8;
    p = put_varint(p, (uint64_t)groups << 1 | 1);
    uint64_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < groups * 8; i++) {
        acc |= (uint64_t)(i < count ? v[i] : 0) << bits;
        bits += width;
        while (bits >= 8) {
            *p++ = (uint8_t)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    return p; /* 8 * width bits per group: nothing is left in acc */
}

static size_t run_length(const uint32_t *v, size_t i, size_t n, size_t cap) {
    size_t j = i + 1;
    while (j < n && j - i < cap && v[j] == v[i]) j++;
    return j - i;
}

/* Repeats of 8 or more become RLE runs; everything between is bit-packed in groups of 8. */
static uint8_t *put_hybrid(uint8_t *p, const uint32_t *v, size_t n, int width) {
    size_t i = 0;
    while (i < n) {
        size_t run = run_length(v, i, n, SIZE_MAX);
        if (run >= 8) {
            p = put_rle_run(p, run, v[i], width);
            i += run;
            continue;
        }
        size_t start = i;
        do {
            i += 8;
        } while (i < n && run_length(v, i, n, 8) < 8);
        if (i > n) i = n;
        p = put_bitpacked(p, v + start, i - start, width);
    }
    return p;
}

/* ---- the writer -------------------------------------------------------------------------------------- */

/* What the footer needs to know about one written column chunk. */
typedef struct {
    int64_t num_values; /* rows, nulls included */
    int64_t null_count;
    int64_t dict_page_offset; /* -1: no dictionary page */
    int64_t data_page_offset;
    int64_t uncompressed_bytes, compressed_bytes; /* page headers included */
    int has_minmax;
    uint8_t min_plain[8], max_plain[8]; /* numeric min/max, PLAIN-encoded */
    const void *min, *max;              /* -> min_plain/max_plain, or into the caller's dictionary */
    size_t min_len, max_len;
} chunk_info;

/* Per string column: which dictionary entries the current row group uses, renumbered densely so
 * the chunk's dictionary page holds only those and the codes need as few bits as possible. */
typedef struct {
    int32_t *remap; /* dict_size entries: caller's code -> chunk code, -1 if unused */
    int32_t *used;  /* chunk code -> caller's code */
    int32_t n_used;
} chunk_dict;

/* Running min/max of one column chunk's non-null values. */
typedef struct {
    int any;
    int64_t imin, imax;
    double dmin, dmax;
} minmax;

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    int errnum; /* 0 while all is well */
    int fd;
    int codec;
    void *cctx;
    pq_buf out;      /* bytes not yet written to fd */
    int64_t flushed; /* bytes already written to fd */
    pq_buf page;     /* uncompressed body of the page being built */
    pq_buf packed;   /* its compressed form */
    pq_buf header;   /* its page header */
    uint32_t *scratch; /* PAGE_MAX_ROWS definition levels or dictionary codes */
} writer;

static const char *errno_text(int errnum, char *tmp, size_t n) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(errnum, tmp, n); /* GNU variant: returns the text */
#else
    if (strerror_r(errnum, tmp, n) != 0) snprintf(tmp, n, "errno %d", errnum);
    return tmp;
#endif
}

/* Records the first failure as "PATH: what (strerror)" and returns -1. */
static int fail(writer *w, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(writer *w, int errnum, const char *fmt, ...) {
    if (w->errnum != 0) return -1;
    w->errnum = errnum;
    char what[512], tmp[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (w->err != NULL && w->errlen > 0)
        snprintf(w->err, w->errlen, "%s: %s (%s)", w->path, what, errno_text(errnum, tmp, sizeof tmp));
    return -1;
}

static int write_all(writer *w, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return fail(w, errno, "write failed");
        if (k == 0) return fail(w, EIO, "write failed"); /* no progress: do not spin */
        p += k;
        n -= (size_t)k;
        w->flushed += k;
    }
    return 0;
}

static int out_flush(writer *w) {
    int rc = write_all(w, w->out.data, w->out.len);
    w->out.len = 0;
    return rc;
}

static int64_t out_pos(const writer *w) { return w->flushed + (int64_t)w->out.len; }

static int out_put(writer *w, const void *p, size_t n) {
    if (n >= OUT_FLUSH_BYTES) { /* big pages go straight to the file, without a copy */
        if (out_flush(w) < 0) return -1;
        return write_all(w, p, n);
    }
    buf_put(&w->out, p, n);
    if (w->out.failed) return fail(w, ENOMEM, "out of memory for the output buffer");
    return w->out.len >= OUT_FLUSH_BYTES ? out_flush(w) : 0;
}

/* Compresses the page body into w->packed (zstd level 1: fast, and most of the size gain). */
static int compress_page(writer *w, const pq_buf *body) {
    size_t cap = zstd.bound(body->len);
    w->packed.len = 0;
    if (buf_reserve(&w->packed, cap) < 0) return fail(w, ENOMEM, "out of memory for a compressed page");
    size_t n = w->cctx != NULL
                   ? zstd.compress_cctx(w->cctx, w->packed.data, cap, body->data, body->len, ZSTD_LEVEL)
                   : zstd.compress(w->packed.data, cap, body->data, body->len, ZSTD_LEVEL);
    if (zstd.is_error(n)) return fail(w, EIO, "zstd compression failed");
    w->packed.len = n;
    return 0;
}

/* Writes one page (header, then body, compressed if the file is) and counts its bytes. */
static int emit_page(writer *w, chunk_info *ci, int page_type, int32_t num_values, int encoding) {
    const pq_buf *body = &w->page;
    const pq_buf *payload = body;
    if (w->codec == PQ_CODEC_ZSTD) {
        if (compress_page(w, body) < 0) return -1;
        payload = &w->packed;
    }
    if (body->len > INT32_MAX || payload->len > INT32_MAX) return fail(w, EFBIG, "page larger than 2 GB");

    thrift t;
    w->header.len = 0;
    th_init(&t, &w->header);
    th_i32(&t, 1, page_type);
    th_i32(&t, 2, (int32_t)body->len);
    th_i32(&t, 3, (int32_t)payload->len);
    if (page_type == PAGE_DATA) {
        th_struct_begin(&t, 5); /* DataPageHeader */
        th_i32(&t, 1, num_values);
        th_i32(&t, 2, encoding);
        th_i32(&t, 3, ENC_RLE); /* definition levels */
        th_i32(&t, 4, ENC_RLE); /* repetition levels (none: flat schema) */
        th_struct_end(&t);
    } else {
        th_struct_begin(&t, 7); /* DictionaryPageHeader */
        th_i32(&t, 1, num_values);
        th_i32(&t, 2, encoding);
        th_struct_end(&t);
    }
    th_struct_end(&t);
    if (w->header.failed) return fail(w, ENOMEM, "out of memory for a page header");

    ci->uncompressed_bytes += (int64_t)(w->header.len + body->len);
    ci->compressed_bytes += (int64_t)(w->header.len + payload->len);
    if (out_put(w, w->header.data, w->header.len) < 0) return -1;
    return out_put(w, payload->data, payload->len);
}

/* ---- column values ------------------------------------------------------------------------------------ */

static size_t value_size(pq_kind kind) {
    switch (kind) {
    case PQ_INT64:
    case PQ_DOUBLE: return 8;
    case PQ_BOOL: return 1;
    default: return 4;
    }
}

static int64_t rows_per_page(pq_kind kind) {
    int64_t by_bytes = PAGE_MAX_VALUE_BYTES / (int64_t)value_size(kind);
    return by_bytes < PAGE_MAX_ROWS ? by_bytes : PAGE_MAX_ROWS;
}

static int is_null(const pq_column *c, int64_t row) {
    if (c->valid != NULL && c->valid[row] == 0) return 1;
    return c->kind == PQ_STRING && ((const int32_t *)c->values)[row] < 0;
}

static int64_t count_nulls(const pq_column *c, int64_t row, int64_t n) {
    int64_t nulls = 0;
    if (c->valid != NULL)
        for (int64_t i = row; i < row + n; i++) nulls += c->valid[i] == 0;
    if (c->kind == PQ_STRING) {
        const int32_t *codes = c->values;
        for (int64_t i = row; i < row + n; i++) nulls += codes[i] < 0 && (c->valid == NULL || c->valid[i] != 0);
    }
    return nulls;
}

/* Definition levels (1 = value present) with their 4-byte length prefix. */
static uint8_t *put_def_levels(writer *w, const pq_column *c, int64_t row, int64_t n, int64_t nulls, uint8_t *p) {
    uint8_t *len_at = p;
    p += 4;
    if (nulls == 0) {
        p = put_rle_run(p, (size_t)n, 1, 1);
    } else {
        for (int64_t i = 0; i < n; i++) w->scratch[i] = !is_null(c, row + i);
        p = put_hybrid(p, w->scratch, (size_t)n, 1);
    }
    uint32_t len = (uint32_t)(p - len_at - 4);
    memcpy(len_at, &len, 4);
    return p;
}

static void minmax_int(minmax *m, int64_t v) {
    if (!m->any) {
        m->any = 1;
        m->imin = m->imax = v;
    } else if (v < m->imin) {
        m->imin = v;
    } else if (v > m->imax) {
        m->imax = v;
    }
}

static void minmax_double(minmax *m, double v) {
    if (v != v) return; /* NaN has no place in an order: leave it out of the statistics */
    if (!m->any) {
        m->any = 1;
        m->dmin = m->dmax = v;
    } else if (v < m->dmin) {
        m->dmin = v;
    } else if (v > m->dmax) {
        m->dmax = v;
    }
}

/* Min/max of the non-null values; one loop per type so the compiler can vectorise the no-null case. */
static void fixed_minmax(const pq_column *c, int64_t row, int64_t n, int64_t nulls, minmax *m) {
    const uint8_t *valid = nulls != 0 ? c->valid + row : NULL;
    if (c->kind == PQ_INT32) {
        const int32_t *v = (const int32_t *)c->values + row;
        for (int64_t i = 0; i < n; i++)
            if (valid == NULL || valid[i]) minmax_int(m, v[i]);
    } else if (c->kind == PQ_INT64) {
        const int64_t *v = (const int64_t *)c->values + row;
        for (int64_t i = 0; i < n; i++)
            if (valid == NULL || valid[i]) minmax_int(m, v[i]);
    } else {
        const double *v = (const double *)c->values + row;
        for (int64_t i = 0; i < n; i++)
            if (valid == NULL || valid[i]) minmax_double(m, v[i]);
    }
}

/* PLAIN values of a fixed-width column: the non-null values back to back. */
static uint8_t *put_plain_fixed(const pq_column *c, int64_t row, int64_t n, int64_t nulls, minmax *m, uint8_t *p) {
    size_t size = value_size(c->kind);
    const uint8_t *src = (const uint8_t *)c->values + (size_t)row * size;
    if (nulls == 0) {
        memcpy(p, src, (size_t)n * size);
        p += (size_t)n * size;
    } else {
        for (int64_t i = 0; i < n; i++) {
            if (c->valid[row + i] == 0) continue;
            memcpy(p, src + (size_t)i * size, size);
            p += size;
        }
    }
    fixed_minmax(c, row, n, nulls, m);
    return p;
}

/* PLAIN booleans: one bit per non-null value, LSB first. */
static uint8_t *put_plain_bools(const pq_column *c, int64_t row, int64_t n, minmax *m, uint8_t *p) {
    const uint8_t *v = c->values;
    uint8_t byte = 0;
    int bit = 0;
    for (int64_t i = row; i < row + n; i++) {
        if (c->valid != NULL && c->valid[i] == 0) continue;
        int b = v[i] != 0;
        minmax_int(m, b);
        byte |= (uint8_t)(b << bit);
        if (++bit == 8) {
            *p++ = byte;
            byte = 0;
            bit = 0;
        }
    }
    if (bit != 0) *p++ = byte;
    return p;
}

/* RLE_DICTIONARY values: bit width, then the non-null chunk codes as a hybrid run. */
static uint8_t *put_dict_codes(writer *w, const pq_column *c, int64_t row, int64_t n, const chunk_dict *d,
                               int width, uint8_t *p) {
    const int32_t *codes = c->values;
    size_t k = 0;
    for (int64_t i = row; i < row + n; i++)
        if (!is_null(c, i)) w->scratch[k++] = (uint32_t)d->remap[codes[i]];
    *p++ = (uint8_t)width;
    return put_hybrid(p, w->scratch, k, width);
}

/* Largest page body: levels, then the widest values (8-byte PLAIN or 32-bit codes). */
static size_t page_body_bound(void) {
    size_t levels = 4 + hybrid_bound(PAGE_MAX_ROWS, 1);
    size_t plain = (size_t)PAGE_MAX_VALUE_BYTES;
    size_t codes = 1 + hybrid_bound(PAGE_MAX_ROWS, 32);
    return levels + (plain > codes ? plain : codes);
}

static int write_data_page(writer *w, const pq_column *c, int64_t row, int64_t n, const chunk_dict *d, int width,
                           chunk_info *ci, minmax *m) {
    int64_t nulls = count_nulls(c, row, n);
    uint8_t *p = put_def_levels(w, c, row, n, nulls, w->page.data);
    switch (c->kind) {
    case PQ_BOOL: p = put_plain_bools(c, row, n, m, p); break;
    case PQ_STRING: p = put_dict_codes(w, c, row, n, d, width, p); break;
    default: p = put_plain_fixed(c, row, n, nulls, m, p); break;
    }
    w->page.len = (size_t)(p - w->page.data);
    ci->null_count += nulls;
    return emit_page(w, ci, PAGE_DATA, (int32_t)n, c->kind == PQ_STRING ? ENC_RLE_DICTIONARY : ENC_PLAIN);
}

/* ---- dictionaries -------------------------------------------------------------------------------------- */

/* Finds the dictionary entries rows [row, row+n) use, numbered in order of first use. */
static int collect_chunk_dict(writer *w, const pq_column *c, int64_t row, int64_t n, chunk_dict *d) {
    const int32_t *codes = c->values;
    for (int64_t i = row; i < row + n; i++) {
        if (is_null(c, i)) continue;
        int32_t code = codes[i];
        if (code >= c->dict_size)
            return fail(w, EINVAL, "column '%s': row %lld: dictionary code %d out of range (dictionary of %d)",
                        c->name, (long long)i, (int)code, (int)c->dict_size);
        if (d->remap[code] < 0) {
            d->remap[code] = d->n_used;
            d->used[d->n_used++] = code;
        }
    }
    return 0;
}

static void reset_chunk_dict(chunk_dict *d) {
    for (int32_t k = 0; k < d->n_used; k++) d->remap[d->used[k]] = -1;
    d->n_used = 0;
}

/* Dictionary page: PLAIN byte arrays (4-byte length, then the bytes) of the entries used. */
static int write_dictionary_page(writer *w, const pq_column *c, const chunk_dict *d, chunk_info *ci) {
    size_t size = 0;
    for (int32_t k = 0; k < d->n_used; k++) size += 4 + (size_t)c->dict_len[d->used[k]];
    if (size > INT32_MAX) return fail(w, EFBIG, "column '%s': dictionary page larger than 2 GB", c->name);
    w->page.len = 0;
    if (buf_reserve(&w->page, size) < 0) return fail(w, ENOMEM, "out of memory for a dictionary page");
    for (int32_t k = 0; k < d->n_used; k++) {
        int32_t e = d->used[k];
        buf_u32le(&w->page, (uint32_t)c->dict_len[e]);
        buf_put(&w->page, c->dict[e], (size_t)c->dict_len[e]);
    }
    return emit_page(w, ci, PAGE_DICTIONARY, d->n_used, ENC_PLAIN);
}

static int bytes_cmp(const void *a, size_t alen, const void *b, size_t blen) {
    int r = memcmp(a, b, alen < blen ? alen : blen);
    if (r != 0) return r;
    return alen < blen ? -1 : alen > blen;
}

/* String min/max in byte order (UTF8's sort order), from the entries the chunk uses. */
static void string_minmax(const pq_column *c, const chunk_dict *d, chunk_info *ci) {
    if (d->n_used == 0) return;
    int32_t lo = d->used[0], hi = d->used[0];
    for (int32_t k = 1; k < d->n_used; k++) {
        int32_t e = d->used[k];
        if (bytes_cmp(c->dict[e], (size_t)c->dict_len[e], c->dict[lo], (size_t)c->dict_len[lo]) < 0) lo = e;
        if (bytes_cmp(c->dict[e], (size_t)c->dict_len[e], c->dict[hi], (size_t)c->dict_len[hi]) > 0) hi = e;
    }
    if (c->dict_len[lo] > STAT_MAX_BYTES || c->dict_len[hi] > STAT_MAX_BYTES) return;
    ci->has_minmax = 1;
    ci->min = c->dict[lo];
    ci->min_len = (size_t)c->dict_len[lo];
    ci->max = c->dict[hi];
    ci->max_len = (size_t)c->dict_len[hi];
}

/* Numeric min/max as PLAIN bytes. Doubles follow the spec's rule for zeros: -0.0 as min, +0.0 as max. */
static void numeric_minmax(pq_kind kind, const minmax *m, chunk_info *ci) {
    if (!m->any) return;
    ci->has_minmax = 1;
    ci->min = ci->min_plain;
    ci->max = ci->max_plain;
    ci->min_len = ci->max_len = value_size(kind);
    if (kind == PQ_DOUBLE) {
        double lo = m->dmin == 0.0 ? -0.0 : m->dmin, hi = m->dmax == 0.0 ? 0.0 : m->dmax;
        memcpy(ci->min_plain, &lo, 8);
        memcpy(ci->max_plain, &hi, 8);
    } else if (kind == PQ_INT64) {
        memcpy(ci->min_plain, &m->imin, 8);
        memcpy(ci->max_plain, &m->imax, 8);
    } else if (kind == PQ_INT32) {
        int32_t lo = (int32_t)m->imin, hi = (int32_t)m->imax;
        memcpy(ci->min_plain, &lo, 4);
        memcpy(ci->max_plain, &hi, 4);
    } else {
        ci->min_plain[0] = (uint8_t)m->imin;
        ci->max_plain[0] = (uint8_t)m->imax;
    }
}

/* ---- column chunks and row groups -------------------------------------------------------------------- */

static int write_column_chunk(writer *w, const pq_column *c, int64_t row, int64_t n, chunk_dict *d,
                              chunk_info *ci) {
    memset(ci, 0, sizeof *ci);
    ci->num_values = n;
    ci->dict_page_offset = -1;
    int width = 0;
    if (c->kind == PQ_STRING) {
        if (collect_chunk_dict(w, c, row, n, d) < 0) return -1;
        ci->dict_page_offset = out_pos(w);
        if (write_dictionary_page(w, c, d, ci) < 0) return -1;
        width = d->n_used > 1 ? bit_width((uint32_t)(d->n_used - 1)) : 1;
        string_minmax(c, d, ci);
    }
    ci->data_page_offset = out_pos(w);
    minmax m = {0};
    int64_t per_page = rows_per_page(c->kind);
    for (int64_t done = 0; done < n; done += per_page) {
        int64_t k = n - done < per_page ? n - done : per_page;
        if (write_data_page(w, c, row + done, k, d, width, ci, &m) < 0) return -1;
    }
    if (c->kind == PQ_STRING)
        reset_chunk_dict(d);
    else
        numeric_minmax(c->kind, &m, ci);
    return 0;
}

static int alloc_chunk_dict(writer *w, const pq_column *c, chunk_dict *d) {
    size_t n = c->dict_size > 0 ? (size_t)c->dict_size : 1;
    d->remap = malloc(n * sizeof *d->remap);
    d->used = malloc(n * sizeof *d->used);
    if (d->remap == NULL || d->used == NULL) return fail(w, ENOMEM, "out of memory for column '%s'", c->name);
    memset(d->remap, 0xff, n * sizeof *d->remap); /* all -1: unused */
    d->n_used = 0;
    return 0;
}

/* ---- footer ------------------------------------------------------------------------------------------ */

static int parquet_type(pq_kind kind) {
    switch (kind) {
    case PQ_INT32: return T_INT32;
    case PQ_INT64: return T_INT64;
    case PQ_DOUBLE: return T_DOUBLE;
    case PQ_BOOL: return T_BOOLEAN;
    default: return T_BYTE_ARRAY;
    }
}

static void put_schema(thrift *t, const pq_column *cols, int ncols) {
    th_list_begin(t, 2, CT_STRUCT, (size_t)ncols + 1);
    th_element_begin(t); /* root */
    th_string(t, 4, "schema");
    th_i32(t, 5, ncols);
    th_struct_end(t);
    for (int i = 0; i < ncols; i++) {
        th_element_begin(t);
        th_i32(t, 1, parquet_type(cols[i].kind));
        th_i32(t, 3, REPETITION_OPTIONAL);
        th_string(t, 4, cols[i].name);
        if (cols[i].kind == PQ_STRING) {
            th_i32(t, 6, CONVERTED_UTF8);
            th_struct_begin(t, 10); /* LogicalType union */
            th_struct_begin(t, 1);  /* STRING: StringType {} */
            th_struct_end(t);
            th_struct_end(t);
        }
        th_struct_end(t);
    }
}

static void put_column_meta(thrift *t, const pq_column *c, const chunk_info *ci, int codec) {
    th_struct_begin(t, 3); /* ColumnMetaData */
    th_i32(t, 1, parquet_type(c->kind));
    if (c->kind == PQ_STRING) {
        th_list_begin(t, 2, CT_I32, 3);
        buf_varint(t->out, zigzag64(ENC_PLAIN));
        buf_varint(t->out, zigzag64(ENC_RLE));
        buf_varint(t->out, zigzag64(ENC_RLE_DICTIONARY));
    } else {
        th_list_begin(t, 2, CT_I32, 2);
        buf_varint(t->out, zigzag64(ENC_PLAIN));
        buf_varint(t->out, zigzag64(ENC_RLE));
    }
    th_list_begin(t, 3, CT_BINARY, 1); /* path_in_schema */
    buf_varint(t->out, strlen(c->name));
    buf_put(t->out, c->name, strlen(c->name));
    th_i32(t, 4, codec);
    th_i64(t, 5, ci->num_values);
    th_i64(t, 6, ci->uncompressed_bytes);
    th_i64(t, 7, ci->compressed_bytes);
    th_i64(t, 9, ci->data_page_offset);
    if (ci->dict_page_offset >= 0) th_i64(t, 11, ci->dict_page_offset);
    th_struct_begin(t, 12); /* Statistics */
    th_i64(t, 3, ci->null_count);
    if (ci->has_minmax) {
        th_binary(t, 5, ci->max, ci->max_len);
        th_binary(t, 6, ci->min, ci->min_len);
    }
    th_struct_end(t);
    th_struct_end(t);
}

static void put_row_groups(thrift *t, const pq_column *cols, int ncols, const chunk_info *infos, int64_t nrg,
                           int64_t nrows, int64_t rg_rows, int codec) {
    th_list_begin(t, 4, CT_STRUCT, (size_t)nrg);
    for (int64_t g = 0; g < nrg; g++) {
        const chunk_info *row = infos + g * ncols;
        int64_t uncompressed = 0, compressed = 0;
        th_element_begin(t);
        th_list_begin(t, 1, CT_STRUCT, (size_t)ncols);
        for (int i = 0; i < ncols; i++) {
            const chunk_info *ci = &row[i];
            uncompressed += ci->uncompressed_bytes;
            compressed += ci->compressed_bytes;
            th_element_begin(t);
            th_i64(t, 2, ci->dict_page_offset >= 0 ? ci->dict_page_offset : ci->data_page_offset);
            put_column_meta(t, &cols[i], ci, codec);
            th_struct_end(t);
        }
        int64_t first = row[0].dict_page_offset >= 0 ? row[0].dict_page_offset : row[0].data_page_offset;
        th_i64(t, 2, uncompressed);
        th_i64(t, 3, nrows - g * rg_rows < rg_rows ? nrows - g * rg_rows : rg_rows);
        th_i64(t, 5, first);
        th_i64(t, 6, compressed);
        th_struct_end(t);
    }
}

static void put_key_values(thrift *t, const char *const *keys, const char *const *values, int n) {
    th_list_begin(t, 5, CT_STRUCT, (size_t)n);
    for (int i = 0; i < n; i++) {
        th_element_begin(t);
        th_string(t, 1, keys[i]);
        th_string(t, 2, values[i]);
        th_struct_end(t);
    }
}

/* One TYPE_ORDER per column: without column_orders readers may not trust min/max. */
static void put_column_orders(thrift *t, int ncols) {
    th_list_begin(t, 7, CT_STRUCT, (size_t)ncols);
    for (int i = 0; i < ncols; i++) {
        th_element_begin(t); /* ColumnOrder union */
        th_struct_begin(t, 1); /* TYPE_ORDER: TypeDefinedOrder {} */
        th_struct_end(t);
        th_struct_end(t);
    }
}

static int write_footer(writer *w, const pq_column *cols, int ncols, int64_t nrows, const chunk_info *infos,
                        int64_t nrg, int64_t rg_rows, const char *const *kv_keys, const char *const *kv_values,
                        int n_kv) {
    pq_buf footer = {0};
    thrift t;
    th_init(&t, &footer);
    th_i32(&t, 1, FILE_FORMAT_VERSION);
    put_schema(&t, cols, ncols);
    th_i64(&t, 3, nrows);
    put_row_groups(&t, cols, ncols, infos, nrg, nrows, rg_rows, w->codec);
    if (n_kv > 0) put_key_values(&t, kv_keys, kv_values, n_kv);
    th_string(&t, 6, "scope");
    put_column_orders(&t, ncols);
    th_struct_end(&t);
    buf_u32le(&footer, (uint32_t)footer.len);
    buf_put(&footer, "PAR1", 4);
    int rc = footer.failed ? fail(w, ENOMEM, "out of memory for the footer") : out_put(w, footer.data, footer.len);
    buf_free(&footer);
    return rc;
}

/* ---- entry point ------------------------------------------------------------------------------------- */

static int check_columns(writer *w, const pq_column *cols, int ncols, int64_t nrows) {
    for (int i = 0; i < ncols; i++) {
        const pq_column *c = &cols[i];
        if (c->name == NULL) return fail(w, EINVAL, "column %d has no name", i);
        if (c->kind < PQ_INT32 || c->kind > PQ_STRING)
            return fail(w, EINVAL, "column '%s': unknown kind %d", c->name, (int)c->kind);
        if (nrows > 0 && c->values == NULL) return fail(w, EINVAL, "column '%s': no values", c->name);
        if (c->kind == PQ_STRING && c->dict_size < 0)
            return fail(w, EINVAL, "column '%s': negative dictionary size", c->name);
        if (c->kind == PQ_STRING && c->dict_size > 0 && (c->dict == NULL || c->dict_len == NULL))
            return fail(w, EINVAL, "column '%s': no dictionary", c->name);
    }
    return 0;
}

static int open_output(writer *w) {
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) return fail(w, errno, "cannot open for writing");
    return 0;
}

static int alloc_buffers(writer *w) {
    if (buf_reserve(&w->out, OUT_FLUSH_BYTES) < 0 || buf_reserve(&w->page, page_body_bound()) < 0 ||
        buf_reserve(&w->header, 256) < 0)
        return fail(w, ENOMEM, "out of memory for page buffers");
    w->scratch = malloc(PAGE_MAX_ROWS * sizeof *w->scratch);
    if (w->scratch == NULL) return fail(w, ENOMEM, "out of memory for page buffers");
    if (w->codec == PQ_CODEC_ZSTD && zstd.create_cctx != NULL) {
        w->cctx = zstd.create_cctx();
        if (w->cctx == NULL) return fail(w, ENOMEM, "cannot create a zstd context");
    }
    return 0;
}

static int write_file(writer *w, const pq_column *cols, int ncols, int64_t nrows, int64_t rg_rows,
                      const char *const *kv_keys, const char *const *kv_values, int n_kv, chunk_dict *dicts,
                      chunk_info **infos_out) {
    /* No row groups without rows, nor without columns (a row group needs a column chunk). */
    int64_t nrg = nrows == 0 || ncols == 0 ? 0 : (nrows + rg_rows - 1) / rg_rows;
    chunk_info *infos = calloc((size_t)(nrg * ncols > 0 ? nrg * ncols : 1), sizeof *infos);
    *infos_out = infos;
    if (infos == NULL) return fail(w, ENOMEM, "out of memory for column chunk metadata");
    for (int i = 0; i < ncols; i++)
        if (cols[i].kind == PQ_STRING && alloc_chunk_dict(w, &cols[i], &dicts[i]) < 0) return -1;

    if (out_put(w, "PAR1", 4) < 0) return -1;
    for (int64_t g = 0; g < nrg; g++) {
        int64_t row = g * rg_rows, n = nrows - row < rg_rows ? nrows - row : rg_rows;
        for (int i = 0; i < ncols; i++)
            if (write_column_chunk(w, &cols[i], row, n, &dicts[i], &infos[g * ncols + i]) < 0) return -1;
    }
    if (write_footer(w, cols, ncols, nrows, infos, nrg, rg_rows, kv_keys, kv_values, n_kv) < 0) return -1;
    return out_flush(w);
}

int pq_write(const char *path, const pq_column *cols, int ncols, int64_t nrows, int64_t row_group_rows,
             int codec, const char *const *kv_keys, const char *const *kv_values, int n_kv, char *err,
             size_t errlen) {
    writer w;
    memset(&w, 0, sizeof w);
    w.path = path != NULL ? path : "(null)";
    w.err = err;
    w.errlen = errlen;
    w.fd = -1;
    if (err != NULL && errlen > 0) err[0] = '\0';
    w.codec = codec == PQ_CODEC_ZSTD && pq_have_zstd() ? PQ_CODEC_ZSTD : PQ_CODEC_NONE;
    if (codec != PQ_CODEC_ZSTD && codec != PQ_CODEC_NONE) fail(&w, EINVAL, "unknown codec %d", codec);
    if (path == NULL || ncols < 0 || nrows < 0 || (ncols > 0 && cols == NULL) || n_kv < 0 ||
        (n_kv > 0 && (kv_keys == NULL || kv_values == NULL)))
        fail(&w, EINVAL, "invalid arguments");
    for (int i = 0; i < n_kv && w.errnum == 0; i++)
        if (kv_keys[i] == NULL || kv_values[i] == NULL) fail(&w, EINVAL, "metadata entry %d is NULL", i);
    if (w.errnum == 0) check_columns(&w, cols, ncols, nrows);
    int64_t rg_rows = row_group_rows > 0 && row_group_rows < nrows ? row_group_rows : (nrows > 0 ? nrows : 1);

    chunk_dict *dicts = ncols > 0 ? calloc((size_t)ncols, sizeof *dicts) : NULL;
    chunk_info *infos = NULL;
    if (w.errnum == 0 && ncols > 0 && dicts == NULL) fail(&w, ENOMEM, "out of memory");
    if (w.errnum == 0 && open_output(&w) == 0 && alloc_buffers(&w) == 0)
        write_file(&w, cols, ncols, nrows, rg_rows, kv_keys, kv_values, n_kv, dicts, &infos);

    if (w.fd >= 0) {
        /* Never leave a truncated Parquet file behind; but only remove regular files (not /dev/...). */
        struct stat st;
        int regular = fstat(w.fd, &st) == 0 && S_ISREG(st.st_mode);
        if (close(w.fd) != 0) fail(&w, errno, "close failed");
        if (w.errnum != 0 && regular) unlink(w.path);
    }
    for (int i = 0; dicts != NULL && i < ncols; i++) {
        free(dicts[i].remap);
        free(dicts[i].used);
    }
    free(dicts);
    free(infos);
    free(w.scratch);
    if (w.cctx != NULL) zstd.free_cctx(w.cctx);
    buf_free(&w.out);
    buf_free(&w.page);
    buf_free(&w.packed);
    buf_free(&w.header);
    if (w.errnum != 0) {
        errno = w.errnum;
        return -1;
    }
    return 0;
}
