/* Frames and stacks of a snapshot interned while it is read (snapshot_py.c): every distinct frame once
 * (by address first: torch's pickle shares each frame dict; then by content), every distinct stack once
 * (a run of frame ids, by a hash). */
#include "snapshot.h"

#include <string.h>

int sn_fail(const char *msg) {
    PyErr_SetString(PyExc_ValueError, msg);
    return -1;
}

int sn_grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t elem) {
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *p = realloc(*buf, (size_t)n * elem);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = n;
    return 0;
}

int sn_charge(Reader *r, Py_ssize_t n) {
    r->budget -= (long long)n + 1;
    if (r->budget < 0) {
        PyErr_Format(PyExc_ValueError,
                     "its shared references expand past %lld values (a pickle bomb, not a snapshot)", r->limit);
        return -1;
    }
    return 0;
}


PyObject *sn_text_or_unknown(PyObject *v) {
    /* a field of the wrong type is never converted (a container could be a bomb's root) */
    static PyObject *unknown = NULL;
    if (v != NULL && PyUnicode_CheckExact(v)) return v;
    if (unknown == NULL) unknown = PyUnicode_InternFromString("?");
    return unknown;
}

long long sn_int_or(PyObject *v, long long dflt) {
    if (v == NULL || !PyLong_CheckExact(v)) return dflt;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return dflt;
    }
    return x;
}

#define PTR_CACHE_MAX (1 << 20) /* frame dicts remembered by address; past that, by content alone */

static size_t ptr_slot(PyObject *p, Py_ssize_t cap) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull & (size_t)(cap - 1); }

static int ptr_find(Reader *r, PyObject *fdict, int32_t *out) {
    if (r->pcap == 0) return 0;
    for (size_t j = ptr_slot(fdict, r->pcap); r->pkeys[j]; j = (j + 1) & (size_t)(r->pcap - 1))
        if (r->pkeys[j] == fdict) {
            *out = r->pvals[j];
            return 1;
        }
    return 0;
}

/* Remember FDICT's frame id by address; the cache holds a reference, so the address stays the dict's. */
static int ptr_add(Reader *r, PyObject *fdict, int32_t id) {
    if (r->pcount >= PTR_CACHE_MAX) return 0;
    if ((r->pcount + 1) * 2 > r->pcap) {
        Py_ssize_t cap = r->pcap ? r->pcap * 2 : 1024;
        PyObject **keys = calloc((size_t)cap, sizeof(PyObject *));
        int32_t *vals = calloc((size_t)cap, sizeof(int32_t));
        if (keys == NULL || vals == NULL) return free(keys), free(vals), PyErr_NoMemory(), -1;
        for (Py_ssize_t i = 0; i < r->pcap; i++) {
            if (r->pkeys[i] == NULL) continue;
            size_t j = ptr_slot(r->pkeys[i], cap);
            while (keys[j]) j = (j + 1) & (size_t)(cap - 1);
            keys[j] = r->pkeys[i];
            vals[j] = r->pvals[i];
        }
        free(r->pkeys), free(r->pvals);
        r->pkeys = keys, r->pvals = vals, r->pcap = cap;
    }
    size_t j = ptr_slot(fdict, r->pcap);
    while (r->pkeys[j]) j = (j + 1) & (size_t)(r->pcap - 1);
    Py_INCREF(fdict);
    r->pkeys[j] = fdict;
    r->pvals[j] = id;
    r->pcount++;
    return 0;
}

static int frame_id_by_content(Reader *r, PyObject *fdict, int32_t *out);

static int frame_id(Reader *r, PyObject *fdict, int32_t *out) {
    if (ptr_find(r, fdict, out)) return 0;
    if (frame_id_by_content(r, fdict, out) < 0) return -1;
    return ptr_add(r, fdict, *out);
}

static int frame_id_by_content(Reader *r, PyObject *fdict, int32_t *out) {
    PyObject *fn = sn_text_or_unknown(PyDict_GetItemWithError(fdict, r->k_filename));
    if (PyErr_Occurred()) return -1;
    PyObject *nm = sn_text_or_unknown(PyDict_GetItemWithError(fdict, r->k_name));
    if (PyErr_Occurred()) return -1;
    long long line = sn_int_or(PyDict_GetItemWithError(fdict, r->k_line), -1);
    if (PyErr_Occurred()) return -1;
    Py_hash_t h1 = PyObject_Hash(fn), h2 = PyObject_Hash(nm);
    if (h1 == -1 || h2 == -1) return -1;
    Py_hash_t h = (Py_hash_t)((uint64_t)h1 * 1000003u ^ (uint64_t)h2 * 8191u ^ (uint64_t)line);
    if (r->nframes * 2 >= r->fslot_cap) { /* rehash at half full */
        Py_ssize_t cap = r->fslot_cap ? r->fslot_cap * 2 : 1024;
        int32_t *slots = calloc((size_t)cap, sizeof(int32_t));
        if (slots == NULL) return PyErr_NoMemory(), -1;
        for (Py_ssize_t i = 0; i < r->nframes; i++) {
            size_t j = (size_t)r->frames[i].hash & (size_t)(cap - 1);
            while (slots[j]) j = (j + 1) & (size_t)(cap - 1);
            slots[j] = (int32_t)(i + 1);
        }
        free(r->fslots);
        r->fslots = slots;
        r->fslot_cap = cap;
    }
    size_t j = (size_t)h & (size_t)(r->fslot_cap - 1);
    while (r->fslots[j]) {
        FrameKey *k = &r->frames[r->fslots[j] - 1];
        if (k->hash == h && k->line == line) {
            int a = k->filename == fn ? 1 : PyObject_RichCompareBool(k->filename, fn, Py_EQ);
            int b = k->name == nm ? 1 : PyObject_RichCompareBool(k->name, nm, Py_EQ);
            if (a < 0 || b < 0) return -1;
            if (a && b) {
                *out = r->fslots[j] - 1;
                return 0;
            }
        }
        j = (j + 1) & (size_t)(r->fslot_cap - 1);
    }
    if (r->nframes >= INT32_MAX - 1) return sn_fail("too many distinct frames");
    if (sn_grow((void **)&r->frames, &r->fcap, r->nframes + 1, sizeof(FrameKey)) < 0) return -1;
    Py_INCREF(fn);
    Py_INCREF(nm);
    r->frames[r->nframes] = (FrameKey){fn, nm, line, h};
    r->fslots[j] = (int32_t)(r->nframes + 1);
    *out = (int32_t)r->nframes++;
    return 0;
}

static uint64_t seq_hash(const int32_t *v, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ull;
    return h;
}

static int stack_rehash(Reader *r) {
    Py_ssize_t cap = r->sslot_cap ? r->sslot_cap * 2 : 1024;
    int32_t *slots = calloc((size_t)cap, sizeof(int32_t));
    if (slots == NULL) return PyErr_NoMemory(), -1;
    for (Py_ssize_t i = 0; i < r->nstacks; i++) {
        int64_t a = r->stack_off[i], b = r->stack_off[i + 1];
        size_t j = (size_t)seq_hash(r->stack_frames + a, (Py_ssize_t)(b - a)) & (size_t)(cap - 1);
        while (slots[j]) j = (j + 1) & (size_t)(cap - 1);
        slots[j] = (int32_t)(i + 1);
    }
    free(r->sslots);
    r->sslots = slots;
    r->sslot_cap = cap;
    return 0;
}

/* The stack id of a frames list (-1 for an empty one). */
int sn_stack_id_of(Reader *r, PyObject *list, long *out) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (sn_charge(r, n) < 0) return -1;
    if (sn_grow((void **)&r->scratch, &r->scratch_cap, n + 1, sizeof(int32_t)) < 0) return -1;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *f = PyList_GET_ITEM(list, i);
        if (!PyDict_CheckExact(f)) continue;
        if (frame_id(r, f, &r->scratch[k]) < 0) return -1;
        k++;
    }
    if (k == 0) {
        *out = -1;
        return 0;
    }
    if (r->nstacks * 2 >= r->sslot_cap && stack_rehash(r) < 0) return -1;
    uint64_t h = seq_hash(r->scratch, k);
    size_t j = (size_t)h & (size_t)(r->sslot_cap - 1);
    while (r->sslots[j]) {
        Py_ssize_t s = r->sslots[j] - 1;
        int64_t a = r->stack_off[s], b = r->stack_off[s + 1];
        if (b - a == k && memcmp(r->stack_frames + a, r->scratch, (size_t)k * sizeof(int32_t)) == 0) {
            *out = (long)s;
            return 0;
        }
        j = (j + 1) & (size_t)(r->sslot_cap - 1);
    }
    if (r->nstacks >= INT32_MAX - 1) return sn_fail("too many distinct stacks");
    if (sn_grow((void **)&r->stack_frames, &r->sfcap, r->nsf + k, sizeof(int32_t)) < 0) return -1;
    if (sn_grow((void **)&r->stack_off, &r->socap, r->nstacks + 2, sizeof(int64_t)) < 0) return -1;
    if (r->nstacks == 0) r->stack_off[0] = 0;
    memcpy(r->stack_frames + r->nsf, r->scratch, (size_t)k * sizeof(int32_t));
    r->nsf += k;
    r->stack_off[r->nstacks + 1] = r->nsf;
    r->sslots[j] = (int32_t)(r->nstacks + 1);
    *out = (long)r->nstacks++;
    return 0;
}
