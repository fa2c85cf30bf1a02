/* A small Parquet writer: flat schemas of int32 / int64 / double / bool / dictionary strings.
 *
 * Written for scope's store: every column OPTIONAL (as pyarrow writes them), data pages v1,
 * PLAIN values, strings dictionary-encoded (RLE_DICTIONARY), pages ZSTD-compressed when libzstd can
 * be loaded at run time (dlopen), uncompressed otherwise. Files read back with pyarrow and DuckDB.
 */
#ifndef SCOPE_PQWRITE_H
#define SCOPE_PQWRITE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PQ_INT32 = 1, PQ_INT64 = 2, PQ_DOUBLE = 3, PQ_BOOL = 4, PQ_STRING = 5 } pq_kind;

enum { PQ_CODEC_NONE = 0, PQ_CODEC_ZSTD = 6 };

typedef struct {
    const char *name;          /* column name, NUL-terminated UTF-8 */
    pq_kind kind;
    /* nrows values: int32_t, int64_t, double, uint8_t (0/1) for PQ_BOOL,
     * or int32_t dictionary codes for PQ_STRING (a code < 0 is a null). */
    const void *values;
    const uint8_t *valid;      /* optional, 1 byte per row, 0 = null; NULL = no nulls */
    const char *const *dict;   /* PQ_STRING: dict_size entries, UTF-8, lengths in dict_len */
    const int32_t *dict_len;
    int32_t dict_size;
} pq_column;

/* Write one Parquet file at path (overwriting it). row_group_rows <= 0 means one row group.
 * codec: PQ_CODEC_ZSTD falls back to PQ_CODEC_NONE when libzstd cannot be loaded.
 * kv: n_kv key/value pairs stored in the footer's key_value_metadata.
 * Never touches Python state: callable with the GIL released.
 * Returns 0, or -1 with a message in err (which names the path and what failed). */
int pq_write(const char *path, const pq_column *cols, int ncols, int64_t nrows, int64_t row_group_rows,
             int codec, const char *const *kv_keys, const char *const *kv_values, int n_kv, char *err,
             size_t errlen);

/* Whether libzstd was found (loads it on first call). */
int pq_have_zstd(void);

/* Python: write_parquet(path, columns, *, compression="zstd", row_group_size=1048576, metadata=None)
 * columns: sequence of (name: str, type: str, values) with type one of "int32", "int64", "float64",
 * "bool", "string". values: a sequence (None = null) or, for numeric types, an object exporting a
 * contiguous buffer of the matching item size (array.array, memoryview, numpy array) - no nulls then.
 * Strings are dictionary-encoded. compression: "zstd" or "none". metadata: dict[str, str] or None.
 * Raises ValueError / TypeError for bad arguments (naming the column), OSError for I/O errors. */
PyObject *scope_write_parquet(PyObject *self, PyObject *args, PyObject *kwargs);

#endif
