/* read_snapshot: a CUDA allocator snapshot pickle read without trusting it, streamed into columns.
 *
 * A snapshot of a long trace unpickled whole is a million dicts, each holding a fresh list of 20-40
 * frames, all alive at once (the pickle's memo keeps every one): gigabytes. This reader runs the
 * pickle's opcodes itself, refusing every opcode that could name a global or call anything (only
 * dicts, lists, tuples, strings, numbers, booleans and None come out), and reduces as it goes:
 *   - a list set under the key "frames" becomes a stack id: its frame dicts are interned by content
 *     (filename, line, name) and the sequence of frame ids by a hash; the memo then holds the id, not
 *     the list, so a later reference to the same list is the same id at no cost;
 *   - a dict with an "action" key appended to a list (a trace entry) becomes one row of columns
 *     (action code, addr, size, time_us, stack, owning list) and is dropped, memo slot included.
 * Everything else (segments, blocks, annotations, settings: small) comes back as Python objects.
 * Interning walks each frames list once; its cost is charged to a budget proportional to the file,
 * so shared references cannot make the work explode (a pickle bomb is refused).
 */

#include <stdint.h>
#include <string.h>

#include "snapshot.h"

/* Trace entry actions, in the order scope.memory_snapshot.ACTIONS lists them; the last is "other". */
static const char *ACTION_NAMES[] = {"alloc",        "free_requested", "free_completed", "segment_alloc",
                                     "segment_free", "oom",            "snapshot",       "segment_map",
                                     "segment_unmap"};
#define N_ACTIONS SN_N_ACTIONS
_Static_assert(sizeof(ACTION_NAMES) / sizeof(ACTION_NAMES[0]) == SN_N_ACTIONS, "ACTION_NAMES and SN_N_ACTIONS");

static int push(Reader *r, PyObject *obj) { /* steals obj */
    if (obj == NULL) return -1;
    if (sn_grow((void **)&r->stack, &r->scap, r->sp + 1, sizeof(Slot)) < 0) {
        Py_DECREF(obj);
        return -1;
    }
    r->stack[r->sp].obj = obj;
    r->stack[r->sp].memo = -1;
    r->stack[r->sp].row = 0;
    r->sp++;
    return 0;
}

static Py_ssize_t floor_of(Reader *r) { return r->mp ? r->marks[r->mp - 1] : 0; }

static int need(Reader *r, Py_ssize_t n) {
    if (r->sp - floor_of(r) < n) return sn_fail("stack underflow (corrupt pickle)");
    return 0;
}

static int take(Reader *r, Py_ssize_t n, const unsigned char **out) {
    if (r->end - r->p < n) return sn_fail("truncated pickle");
    *out = r->p;
    r->p += n;
    return 0;
}

static uint64_t le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

/* ---- the memo ---- */

static int memo_put(Reader *r, Py_ssize_t idx) {
    if (r->sp <= floor_of(r)) return sn_fail("memo store on an empty stack (corrupt pickle)");
    /* every memo slot is made by at least one byte of the file: a larger index is a lie */
    if (idx < 0 || idx > r->total + 256) return sn_fail("memo index out of range (corrupt pickle)");
    Py_ssize_t old = r->mcap_memo, cap_rows = r->mcap_memo;
    if (sn_grow((void **)&r->memo, &r->mcap_memo, idx + 1, sizeof(PyObject *)) < 0) return -1;
    if (sn_grow((void **)&r->memo_row, &cap_rows, r->mcap_memo, sizeof(Py_ssize_t)) < 0) return -1;
    if (r->mcap_memo > old) {
        memset(r->memo + old, 0, (size_t)(r->mcap_memo - old) * sizeof(PyObject *));
        memset(r->memo_row + old, 0, (size_t)(r->mcap_memo - old) * sizeof(Py_ssize_t));
    }
    PyObject *obj = r->stack[r->sp - 1].obj;
    Py_INCREF(obj);
    if (r->memo[idx] == NULL)
        r->mcount++;
    else
        Py_DECREF(r->memo[idx]);
    r->memo[idx] = obj;
    r->memo_row[idx] = r->stack[r->sp - 1].row;
    r->stack[r->sp - 1].memo = idx;
    return 0;
}

static int memo_get(Reader *r, Py_ssize_t idx) {
    if (idx < 0 || idx >= r->mcap_memo || r->memo[idx] == NULL) return sn_fail("memo reference to nothing (corrupt pickle)");
    Py_INCREF(r->memo[idx]);
    if (push(r, r->memo[idx]) < 0) return -1;
    r->stack[r->sp - 1].memo = idx;
    r->stack[r->sp - 1].row = r->memo_row[idx];
    return 0;
}

/* Replace what memo slot IDX holds (when it still holds OLD) by NEW (borrowed). */
static void memo_swap(Reader *r, Py_ssize_t idx, PyObject *old, PyObject *new_) {
    if (idx < 0 || idx >= r->mcap_memo || r->memo[idx] != old) return;
    Py_INCREF(new_);
    Py_SETREF(r->memo[idx], new_);
}

/* ---- containers ---- */

static int is_key(PyObject *k, PyObject *want) {
    if (k == want) return 1;
    if (!PyUnicode_CheckExact(k) || PyUnicode_GET_LENGTH(k) != PyUnicode_GET_LENGTH(want)) return 0;
    return PyUnicode_Compare(k, want) == 0;
}

/* Take the pickle's own key strings for ours: it shares each key, so lookups then match by address. */
static void adopt_key(Reader *r, PyObject *k) {
    PyObject **keys[] = {&r->k_frames, &r->k_action, &r->k_addr,     &r->k_size,
                         &r->k_time,   &r->k_line,   &r->k_filename, &r->k_name};
    const size_t n = sizeof(keys) / sizeof(keys[0]);
    for (size_t i = 0; i < n; i++)
        if (*keys[i] == k) return;
    if (!PyUnicode_CheckExact(k) || PyUnicode_GET_LENGTH(k) > 8) return;
    for (size_t i = 0; i < n; i++)
        if (PyUnicode_GET_LENGTH(*keys[i]) == PyUnicode_GET_LENGTH(k) && PyUnicode_Compare(*keys[i], k) == 0) {
            Py_INCREF(k);
            Py_SETREF(*keys[i], k);
            return;
        }
}

/* A frames list set into a dict becomes its stack id (in the dict and in the memo). */
static int set_item(Reader *r, PyObject *d, Slot *key, Slot *val) {
    adopt_key(r, key->obj);
    if (PyList_CheckExact(val->obj) && is_key(key->obj, r->k_frames)) {
        long sid;
        if (sn_stack_id_of(r, val->obj, &sid) < 0) return -1;
        PyObject *id = PyLong_FromLong(sid);
        if (id == NULL) return -1;
        memo_swap(r, val->memo, val->obj, id);
        Py_SETREF(val->obj, id);
    }
    if (PyDict_SetItem(d, key->obj, val->obj) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            return sn_fail("unhashable dict key (not a snapshot)");
        }
        return -1;
    }
    return 0;
}

static int action_code(Reader *r, PyObject *a) {
    if (a == NULL || !PyUnicode_CheckExact(a)) return N_ACTIONS;
    for (int i = 0; i < N_ACTIONS; i++)
        if (a == r->action_str[i]) return i;
    for (int i = 0; i < N_ACTIONS; i++)
        if (PyUnicode_CompareWithASCIIString(a, ACTION_NAMES[i]) == 0) return i;
    return N_ACTIONS;
}

static int owner_of(Reader *r, PyObject *list, int32_t *out) {
    if (list != r->last_owner) { /* a snapshot has one list per device: look back a little */
        Py_ssize_t n = PyList_GET_SIZE(r->owners), found = -1;
        for (Py_ssize_t i = n - 1; i >= 0 && i >= n - 64 && found < 0; i--)
            if (PyList_GET_ITEM(r->owners, i) == list) found = i;
        if (found < 0) {
            if (PyList_Append(r->owners, list) < 0) return -1;
            found = n;
        }
        r->last_owner = list;
        r->last_owner_idx = found;
    }
    *out = (int32_t)r->last_owner_idx;
    return 0;
}

static int grow_rows(Reader *r) {
    if (sn_grow((void **)&r->action, &r->rcap, r->rows + 1, 1) < 0) return -1;
    Py_ssize_t cap = r->rcap;
#define GROW_COL(col, T)                                                 \
    do {                                                                 \
        T *p = realloc(col, (size_t)cap * sizeof(T));                    \
        if (p == NULL) return PyErr_NoMemory(), -1;                      \
        col = p;                                                         \
    } while (0)
    GROW_COL(r->addr, int64_t);
    GROW_COL(r->size, int64_t);
    GROW_COL(r->time_us, int64_t);
    GROW_COL(r->stack_id, int32_t);
    GROW_COL(r->owner, int32_t);
#undef GROW_COL
    return 0;
}

/* An entry appended again (the pickle shares it): its row once more, owned by LIST. */
static int copy_row(Reader *r, PyObject *list, Py_ssize_t row) {
    if (row < 0 || row >= r->rows) return 0;
    if (grow_rows(r) < 0) return -1;
    Py_ssize_t i = r->rows;
    r->action[i] = r->action[row], r->addr[i] = r->addr[row], r->size[i] = r->size[row];
    r->time_us[i] = r->time_us[row], r->stack_id[i] = r->stack_id[row];
    if (owner_of(r, list, &r->owner[i]) < 0) return -1;
    r->rows++;
    return 0;
}

/* A trace entry appended to LIST: one row of columns. */
static int sink_entry(Reader *r, PyObject *list, PyObject *e) {
    if (grow_rows(r) < 0) return -1;
    Py_ssize_t i = r->rows;
    PyObject *v;
    r->action[i] = (uint8_t)action_code(r, PyDict_GetItemWithError(e, r->k_action));
    r->addr[i] = sn_int_or(PyDict_GetItemWithError(e, r->k_addr), 0);
    r->size[i] = sn_int_or(PyDict_GetItemWithError(e, r->k_size), 0);
    r->time_us[i] = sn_int_or(PyDict_GetItemWithError(e, r->k_time), -1);
    v = PyDict_GetItemWithError(e, r->k_frames);
    long long sid = sn_int_or(v, -1);
    r->stack_id[i] = (int32_t)(sid >= 0 && sid < r->nstacks ? sid : -1);
    if (PyErr_Occurred()) return -1;
    if (owner_of(r, list, &r->owner[i]) < 0) return -1;
    r->rows++;
    return 0;
}

static int append_items(Reader *r, Py_ssize_t target, Py_ssize_t from) {
    PyObject *list = r->stack[target].obj;
    if (!PyList_CheckExact(list)) return sn_fail("append to something not a list (not a snapshot)");
    for (Py_ssize_t i = from; i < r->sp; i++) {
        Slot *s = &r->stack[i];
        int entry = PyDict_CheckExact(s->obj) && PyDict_GetItemWithError(s->obj, r->k_action) != NULL;
        if (PyErr_Occurred()) return -1;
        if (s->row) {
            if (copy_row(r, list, s->row - 1) < 0) return -1;
        } else if (entry) {
            if (sink_entry(r, list, s->obj) < 0) return -1;
            if (s->memo >= 0 && s->memo < r->mcap_memo && r->memo[s->memo] == s->obj) r->memo_row[s->memo] = r->rows;
            memo_swap(r, s->memo, s->obj, Py_None);
        } else if (PyList_Append(list, s->obj) < 0) {
            return -1;
        }
    }
    for (Py_ssize_t i = from; i < r->sp; i++) Py_CLEAR(r->stack[i].obj);
    r->sp = from;
    return 0;
}

static int set_items(Reader *r, Py_ssize_t target, Py_ssize_t from) {
    PyObject *d = r->stack[target].obj;
    if (!PyDict_CheckExact(d)) return sn_fail("set item on something not a dict (not a snapshot)");
    if ((r->sp - from) % 2) return sn_fail("odd number of items for a dict (corrupt pickle)");
    for (Py_ssize_t i = from; i < r->sp; i += 2)
        if (set_item(r, d, &r->stack[i], &r->stack[i + 1]) < 0) return -1;
    for (Py_ssize_t i = from; i < r->sp; i++) Py_CLEAR(r->stack[i].obj);
    r->sp = from;
    return 0;
}

static int make_tuple(Reader *r, Py_ssize_t from) {
    Py_ssize_t n = r->sp - from;
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(t, i, r->stack[from + i].obj);
        r->stack[from + i].obj = NULL;
    }
    r->sp = from;
    return push(r, t);
}

static int pop_mark(Reader *r, Py_ssize_t *at) {
    if (r->mp == 0) return sn_fail("no mark on the stack (corrupt pickle)");
    *at = r->marks[--r->mp];
    return 0;
}

static PyObject *read_long(const unsigned char *b, Py_ssize_t n) {
    if (n == 0) return PyLong_FromLong(0);
    if (n > 64) return PyErr_Format(PyExc_ValueError, "integer of %zd bytes (not a snapshot)", n), NULL;
    return _PyLong_FromByteArray(b, (size_t)n, 1, 1);
}

static PyObject *read_text(const unsigned char *b, Py_ssize_t n) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)b, n, "surrogatepass");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        return PyErr_Format(PyExc_ValueError, "string that is not UTF-8 (corrupt pickle)"), NULL;
    }
    return s;
}

static int refuse(unsigned char op) {
    switch (op) {
    case 'c': case 0x93: case 'i':
        return sn_fail("refusing global (a memory snapshot names no class or function)");
    case 'R': case 'b': case 'o': case 0x81: case 0x92: case 'P': case 'Q': case 0x82: case 0x83: case 0x84:
        return sn_fail("refusing opcode that builds objects (a memory snapshot holds plain values only)");
    default:
        PyErr_Format(PyExc_ValueError, "unsupported pickle opcode 0x%02x (not a snapshot written by torch)", op);
        return -1;
    }
}

/* One opcode; 1 at STOP. */
static int step(Reader *r) {
    const unsigned char *b = NULL;
    Py_ssize_t at = 0;
    if (r->p >= r->end) return sn_fail("truncated pickle");
    unsigned char op = *r->p++;
    switch (op) {
    case 0x80: /* PROTO */
        if (take(r, 1, &b) < 0) return -1;
        if (b[0] < 2) return sn_fail("pickle protocol below 2 (not written by torch)");
        return 0;
    case 0x95: return take(r, 8, &b); /* FRAME: a hint only */
    case '.': return 1;
    case '(':
        if (sn_grow((void **)&r->marks, &r->mcap, r->mp + 1, sizeof(Py_ssize_t)) < 0) return -1;
        r->marks[r->mp++] = r->sp;
        return 0;
    case '}': return push(r, PyDict_New());
    case ']': return push(r, PyList_New(0));
    case ')': return push(r, PyTuple_New(0));
    case 'N': Py_INCREF(Py_None); return push(r, Py_None);
    case 0x88: Py_INCREF(Py_True); return push(r, Py_True);
    case 0x89: Py_INCREF(Py_False); return push(r, Py_False);
    case 'J': return take(r, 4, &b) < 0 ? -1 : push(r, PyLong_FromLong((long)(int32_t)le(b, 4)));
    case 'K': return take(r, 1, &b) < 0 ? -1 : push(r, PyLong_FromLong(b[0]));
    case 'M': return take(r, 2, &b) < 0 ? -1 : push(r, PyLong_FromLong((long)le(b, 2)));
    case 0x8a: { /* LONG1 */
        const unsigned char *d = NULL;
        if (take(r, 1, &b) < 0 || take(r, b[0], &d) < 0) return -1;
        return push(r, read_long(d, b[0]));
    }
    case 0x8b: { /* LONG4 */
        const unsigned char *d = NULL;
        if (take(r, 4, &b) < 0) return -1;
        int32_t n = (int32_t)le(b, 4);
        if (n < 0 || take(r, n, &d) < 0) return sn_fail("truncated pickle");
        return push(r, read_long(d, n));
    }
    case 'G': {
        if (take(r, 8, &b) < 0) return -1;
        double x = PyFloat_Unpack8((const char *)b, 0);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        return push(r, PyFloat_FromDouble(x));
    }
    case 0x8c: case 'X': case 0x8d: { /* SHORT_BINUNICODE, BINUNICODE, BINUNICODE8 */
        int w = op == 0x8c ? 1 : op == 'X' ? 4 : 8;
        const unsigned char *d = NULL;
        if (take(r, w, &b) < 0) return -1;
        uint64_t n = le(b, w);
        if (n > (uint64_t)(r->end - r->p)) return sn_fail("truncated pickle");
        if (take(r, (Py_ssize_t)n, &d) < 0) return -1;
        return push(r, read_text(d, (Py_ssize_t)n));
    }
    case 0x94: return memo_put(r, r->mcount); /* MEMOIZE */
    case 'q': return take(r, 1, &b) < 0 ? -1 : memo_put(r, b[0]);
    case 'r': return take(r, 4, &b) < 0 ? -1 : memo_put(r, (Py_ssize_t)le(b, 4));
    case 'h': return take(r, 1, &b) < 0 ? -1 : memo_get(r, b[0]);
    case 'j': return take(r, 4, &b) < 0 ? -1 : memo_get(r, (Py_ssize_t)le(b, 4));
    case 'a':
        if (need(r, 2) < 0) return -1;
        return append_items(r, r->sp - 2, r->sp - 1);
    case 'e':
        if (pop_mark(r, &at) < 0) return -1;
        if (at < 1 || at - 1 < floor_of(r)) return sn_fail("append with no list (corrupt pickle)");
        return append_items(r, at - 1, at);
    case 's':
        if (need(r, 3) < 0) return -1;
        return set_items(r, r->sp - 3, r->sp - 2);
    case 'u':
        if (pop_mark(r, &at) < 0) return -1;
        if (at < 1 || at - 1 < floor_of(r)) return sn_fail("set items with no dict (corrupt pickle)");
        return set_items(r, at - 1, at);
    case 't':
        if (pop_mark(r, &at) < 0) return -1;
        return make_tuple(r, at);
    case 0x85: case 0x86: case 0x87: {
        Py_ssize_t n = op - 0x84;
        if (need(r, n) < 0) return -1;
        return make_tuple(r, r->sp - n);
    }
    case '0':
        if (need(r, 1) < 0) return -1;
        r->sp--;
        Py_CLEAR(r->stack[r->sp].obj);
        return 0;
    case '1':
        if (pop_mark(r, &at) < 0) return -1;
        while (r->sp > at) {
            r->sp--;
            Py_CLEAR(r->stack[r->sp].obj);
        }
        return 0;
    default: return refuse(op);
    }
}

static PyObject *column(const void *data, Py_ssize_t n, size_t elem) {
    return PyBytes_FromStringAndSize(n ? (const char *)data : "", n * (Py_ssize_t)elem);
}

static PyObject *frames_list(Reader *r) {
    PyObject *out = PyList_New(r->nframes);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < r->nframes; i++) {
        FrameKey *k = &r->frames[i];
        PyObject *t = Py_BuildValue("(OLO)", k->filename, k->line, k->name);
        if (t == NULL) return Py_DECREF(out), NULL;
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

static PyObject *result(Reader *r, PyObject *root) {
    PyObject *frames = frames_list(r);
    if (frames == NULL) return NULL;
    if (r->nstacks == 0 && sn_grow((void **)&r->stack_off, &r->socap, 1, sizeof(int64_t)) < 0) return NULL;
    r->stack_off[0] = 0;
    return Py_BuildValue("{sOsNsNsNsNsNsNsOsNsNsN}", "root", root, "action", column(r->action, r->rows, 1), "addr",
                         column(r->addr, r->rows, 8), "size", column(r->size, r->rows, 8), "time_us",
                         column(r->time_us, r->rows, 8), "stack", column(r->stack_id, r->rows, 4), "owner",
                         column(r->owner, r->rows, 4), "owners", r->owners, "frames", frames, "stack_frames",
                         column(r->stack_frames, r->nsf, 4), "stack_offsets",
                         column(r->stack_off, r->nstacks + 1, 8));
}

static void reader_free(Reader *r) {
    for (Py_ssize_t i = 0; i < r->sp; i++) Py_XDECREF(r->stack[i].obj);
    for (Py_ssize_t i = 0; i < r->mcap_memo; i++) Py_XDECREF(r->memo[i]);
    for (Py_ssize_t i = 0; i < r->pcap; i++) Py_XDECREF(r->pkeys[i]);
    free(r->pkeys), free(r->pvals);
    for (Py_ssize_t i = 0; i < r->nframes; i++) {
        Py_DECREF(r->frames[i].filename);
        Py_DECREF(r->frames[i].name);
    }
    free(r->stack), free(r->marks), free(r->memo), free(r->memo_row), free(r->action), free(r->addr), free(r->size);
    free(r->time_us), free(r->stack_id), free(r->owner), free(r->frames), free(r->fslots);
    free(r->stack_frames), free(r->stack_off), free(r->sslots), free(r->scratch);
    Py_XDECREF(r->owners);
    PyObject **keys[] = {&r->k_frames, &r->k_action, &r->k_addr, &r->k_size,
                         &r->k_time,   &r->k_filename, &r->k_line, &r->k_name};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) Py_XDECREF(*keys[i]);
    for (int i = 0; i < N_ACTIONS; i++) Py_XDECREF(r->action_str[i]);
}

static int reader_init(Reader *r, const unsigned char *data, Py_ssize_t n, long long budget) {
    memset(r, 0, sizeof(*r));
    r->p = data;
    r->end = data + n;
    r->total = n;
    r->budget = r->limit = budget;
    r->owners = PyList_New(0);
    r->k_frames = PyUnicode_InternFromString("frames");
    r->k_action = PyUnicode_InternFromString("action");
    r->k_addr = PyUnicode_InternFromString("addr");
    r->k_size = PyUnicode_InternFromString("size");
    r->k_time = PyUnicode_InternFromString("time_us");
    r->k_filename = PyUnicode_InternFromString("filename");
    r->k_line = PyUnicode_InternFromString("line");
    r->k_name = PyUnicode_InternFromString("name");
    for (int i = 0; i < N_ACTIONS; i++) r->action_str[i] = PyUnicode_InternFromString(ACTION_NAMES[i]);
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *scope_read_snapshot(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long budget;
    if (!PyArg_ParseTuple(args, "y*L:read_snapshot", &buf, &budget)) return NULL;
    Reader r;
    PyObject *out = NULL;
    if (reader_init(&r, buf.buf, buf.len, budget) == 0) {
        int rc = 0;
        while ((rc = step(&r)) == 0) {}
        if (rc == 1) {
            if (r.sp != 1 || r.mp != 0)
                sn_fail("stack not a single value at STOP (corrupt pickle)");
            else
                out = result(&r, r.stack[0].obj);
        }
    }
    reader_free(&r);
    PyBuffer_Release(&buf);
    return out;
}
