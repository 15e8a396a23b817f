/*
 * kafkalite._speedups: C versions of the per-record kernels.
 *
 * Same functions, signatures and results as kafkalite/protocol/_record_codec_py.py
 * (the reference); kafkalite.protocol.record_codec picks this module when it
 * imports. Malformed input raises kafkalite.errors.CorruptRecordsError exactly where
 * the Python version does; the test suite compares the two on random input.
 *
 * Record layout (magic v2, Kafka's DefaultRecord): length varint, attributes int8,
 * timestampDelta varlong, offsetDelta varint, key (varint length, -1 null), value,
 * header count varint, headers (varint key length + UTF-8 key, varint value length +
 * value, -1 null). Varints are zigzag; at most 5 (varlong 10) bytes, overflowing bits
 * dropped, as Java's ByteUtils does.
 */
#include "_speedups.h"

PyObject *kl_CorruptRecordsError = NULL;
PyObject *kl_ArrayType = NULL;

void
kl_corrupt(const char *what)
{
    PyErr_Format(CorruptRecordsError, "malformed record: %s", what);
}

/* An int64 argument; out-of-range values raise ValueError (as the Python version). */
static int
as_int64(PyObject *obj, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s out of range", what);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static PyObject *
py_encode_varint(PyObject *self, PyObject *arg)
{
    int64_t v;
    uint8_t tmp[10];
    if (as_int64(arg, "varint (int32)", INT32_MIN, INT32_MAX, &v) < 0)
        return NULL;
    uint8_t *e = put_uvarint(tmp, zigzag32((int32_t)v));
    return PyBytes_FromStringAndSize((const char *)tmp, e - tmp);
}

static PyObject *
py_encode_varlong(PyObject *self, PyObject *arg)
{
    int64_t v;
    uint8_t tmp[10];
    if (as_int64(arg, "varlong (int64)", INT64_MIN, INT64_MAX, &v) < 0)
        return NULL;
    uint8_t *e = put_uvarint(tmp, zigzag64(v));
    return PyBytes_FromStringAndSize((const char *)tmp, e - tmp);
}

static PyObject *
decode_varint_common(PyObject *args, int is_long)
{
    Py_buffer view;
    Py_ssize_t pos;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*n", &view, &pos))
        return NULL;
    if (pos < 0) {
        corrupt("negative position");
    } else if (is_long) {
        int64_t v;
        if (read_varlong(view.buf, &pos, view.len, &v) == 0)
            result = Py_BuildValue("(Ln)", (long long)v, pos);
    } else {
        int32_t v;
        if (read_varint(view.buf, &pos, view.len, &v) == 0)
            result = Py_BuildValue("(in)", (int)v, pos);
    }
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
py_decode_varint(PyObject *self, PyObject *args)
{
    return decode_varint_common(args, 0);
}

static PyObject *
py_decode_varlong(PyObject *self, PyObject *args)
{
    return decode_varint_common(args, 1);
}

/* ------------------------------------------------------------------ encoding */

static int
get_field(PyObject *obj, field_t *f)
{
    f->held = 0;
    if (obj == Py_None) {
        f->ptr = NULL;
        f->len = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) { /* no buffer export needed */
        f->ptr = PyBytes_AS_STRING(obj);
        f->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &f->view, PyBUF_SIMPLE) < 0)
        return -1;
    f->held = 1;
    f->ptr = f->view.buf;
    f->len = f->view.len;
    return 0;
}

static void
release_field(field_t *f)
{
    if (f->held) {
        PyBuffer_Release(&f->view);
        f->held = 0;
    }
}

/* A header key: str (encoded UTF-8, cached by CPython) or a bytes-like object. */
static int
get_header_key(PyObject *obj, field_t *f)
{
    f->held = 0;
    if (PyUnicode_Check(obj)) {
        f->ptr = PyUnicode_AsUTF8AndSize(obj, &f->len);
        return f->ptr == NULL ? -1 : 0;
    }
    if (obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "header key must be str or bytes, not None");
        return -1;
    }
    return get_field(obj, f);
}

static inline Py_ssize_t
field_size(const field_t *f)
{
    return f->len < 0 ? 1 : uvarint_size(zigzag32((int32_t)f->len)) + f->len;
}

static inline uint8_t *
put_field(uint8_t *p, const field_t *f)
{
    if (f->len < 0) {
        *p++ = 1; /* zigzag(-1) */
        return p;
    }
    p = put_uvarint(p, zigzag32((int32_t)f->len));
    if (f->len)
        memcpy(p, f->ptr, f->len);
    return p + f->len;
}

void
kl_release_args(record_args_t *a)
{
    release_field(&a->key);
    release_field(&a->value);
    if (a->hdrs) {
        for (Py_ssize_t i = 0; i < 2 * a->nhdrs; i++)
            release_field(&a->hdrs[i]);
        if (a->hdrs != a->small)
            PyMem_Free(a->hdrs);
    }
    Py_XDECREF(a->seq);
}

/* Parse (offset_delta, timestamp_delta, key, value, headers); returns the body size. */
static Py_ssize_t
parse_record_args(PyObject *const *args, record_args_t *a)
{
    int64_t od = 0, td = 0;
    a->key.held = a->value.held = 0;
    a->hdrs = NULL;
    a->nhdrs = 0;
    a->seq = NULL;
    if (as_int64(args[0], "varint (int32)", INT32_MIN, INT32_MAX, &od) < 0 ||
        as_int64(args[1], "varlong (int64)", INT64_MIN, INT64_MAX, &td) < 0)
        return -1;
    return kl_parse_record(od, td, args[2], args[3], args[4], a);
}

/* The record (key, value, headers objects) as fields; returns the body size, -1 on error.
 * kl_release_args must be called afterwards either way. */
Py_ssize_t
kl_parse_record(int64_t offset_delta, int64_t timestamp_delta, PyObject *key, PyObject *value,
                PyObject *headers, record_args_t *a)
{
    /* Initialise only what release_args reads (the struct is large; this is per record). */
    a->key.held = a->value.held = 0;
    a->key.len = a->value.len = -1;
    a->hdrs = NULL;
    a->nhdrs = 0;
    a->seq = NULL;
    a->offset_delta = offset_delta;
    a->timestamp_delta = timestamp_delta;
    if (get_field(key, &a->key) < 0 || get_field(value, &a->value) < 0)
        return -1;
    if ((a->key.len > INT32_MAX) || (a->value.len > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "key or value longer than 2 GiB");
        return -1;
    }
    Py_ssize_t body = 1 + uvarint_size(zigzag64(a->timestamp_delta)) +
                      uvarint_size(zigzag32((int32_t)a->offset_delta)) + field_size(&a->key) +
                      field_size(&a->value);
    Py_ssize_t n = 0;
    if (headers != Py_None) {
        a->seq = PySequence_Fast(headers, "headers must be a sequence of (key, value) pairs");
        if (!a->seq)
            return -1;
        n = PySequence_Fast_GET_SIZE(a->seq);
    }
    body += uvarint_size(zigzag32((int32_t)n));
    if (n == 0)
        return body;
    a->hdrs = n <= 8 ? a->small : PyMem_Calloc(2 * n, sizeof(field_t));
    if (!a->hdrs) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(a->seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = items[i], *hk, *hv;
        if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
            hk = PyTuple_GET_ITEM(pair, 0);
            hv = PyTuple_GET_ITEM(pair, 1);
        } else if (PyList_CheckExact(pair) && PyList_GET_SIZE(pair) == 2) {
            hk = PyList_GET_ITEM(pair, 0);
            hv = PyList_GET_ITEM(pair, 1);
        } else {
            PyErr_SetString(PyExc_TypeError, "each header must be a (key, value) pair");
            return -1;
        }
        a->nhdrs = i + 1; /* so release_args releases what was acquired */
        a->hdrs[2 * i].held = a->hdrs[2 * i + 1].held = 0; /* both are released on error */
        a->hdrs[2 * i + 1].len = -1;
        if (get_header_key(hk, &a->hdrs[2 * i]) < 0 || get_field(hv, &a->hdrs[2 * i + 1]) < 0)
            return -1;
        body += field_size(&a->hdrs[2 * i]) + field_size(&a->hdrs[2 * i + 1]);
    }
    return body;
}

uint8_t *
kl_write_record(uint8_t *p, const record_args_t *a, Py_ssize_t body)
{
    p = put_uvarint(p, zigzag32((int32_t)body));
    *p++ = 0; /* attributes: unused in v2 records */
    p = put_uvarint(p, zigzag64(a->timestamp_delta));
    p = put_uvarint(p, zigzag32((int32_t)a->offset_delta));
    p = put_field(p, &a->key);
    p = put_field(p, &a->value);
    p = put_uvarint(p, zigzag32((int32_t)a->nhdrs));
    for (Py_ssize_t i = 0; i < 2 * a->nhdrs; i++)
        p = put_field(p, &a->hdrs[i]);
    return p;
}

/* Resize a bytearray to `size`, over-allocating by half when it must grow.
 * CPython grows bytearrays by only 1/8 per resize (so a batch built one record at a
 * time is copied ~8 times over); growing to 1.5x and shrinking back keeps the
 * capacity, because a shrink to at least half the allocation does not reallocate. */
int
kl_grow_bytearray(PyObject *buf, Py_ssize_t size)
{
    Py_ssize_t alloc = ((PyByteArrayObject *)buf)->ob_alloc;
    if (size >= alloc) {
        Py_ssize_t target = size + (size >> 1) + 64;
        if (PyByteArray_Resize(buf, target) < 0)
            return -1;
    }
    return PyByteArray_Resize(buf, size);
}

/* encode_record_into(buf, offset_delta, timestamp_delta, key, value, headers) -> int */
static PyObject *
py_encode_record_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "encode_record_into takes 6 arguments");
        return NULL;
    }
    PyObject *buf = args[0];
    if (!PyByteArray_Check(buf)) {
        PyErr_SetString(PyExc_TypeError, "encode_record_into needs a bytearray");
        return NULL;
    }
    record_args_t a;
    Py_ssize_t body = parse_record_args(args + 1, &a);
    PyObject *result = NULL;
    if (body >= 0) {
        if (body > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "record larger than 2 GiB");
        } else {
            Py_ssize_t total = uvarint_size(zigzag32((int32_t)body)) + body;
            Py_ssize_t old = PyByteArray_GET_SIZE(buf);
            if (kl_grow_bytearray(buf, old + total) == 0) {
                kl_write_record((uint8_t *)PyByteArray_AS_STRING(buf) + old, &a, body);
                result = PyLong_FromSsize_t(total);
            }
        }
    }
    kl_release_args(&a);
    return result;
}

/* record_size(offset_delta, timestamp_delta, key, value, headers) -> int */
static PyObject *
py_record_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "record_size takes 5 arguments");
        return NULL;
    }
    record_args_t a;
    Py_ssize_t body = parse_record_args(args, &a);
    kl_release_args(&a);
    if (body < 0)
        return NULL;
    return PyLong_FromSsize_t(uvarint_size(zigzag64(body)) + body);
}

/* ------------------------------------------------------------------ murmur2 */

/* Kafka's Utils.murmur2 (seed 0x9747b28c) as a signed 32-bit int. */
static PyObject *
py_murmur2(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t h = kl_murmur2(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromLong((long)(int32_t)h);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"encode_record_into", (PyCFunction)(void (*)(void))py_encode_record_into, METH_FASTCALL,
     "encode_record_into(buf, offset_delta, timestamp_delta, key, value, headers) -> int"},
    {"record_size", (PyCFunction)(void (*)(void))py_record_size, METH_FASTCALL,
     "record_size(offset_delta, timestamp_delta, key, value, headers) -> int"},
    {"decode_records", (PyCFunction)(void (*)(void))kl_decode_records, METH_VARARGS | METH_KEYWORDS,
     "decode_records(buf, start, end, count, base_offset, base_timestamp, log_append_time=None, "
     "record_type=tuple, extra=()) -> list"},
    {"decode_records_columnar", (PyCFunction)(void (*)(void))kl_decode_records_columnar,
     METH_VARARGS | METH_KEYWORDS,
     "decode_records_columnar(buf, start, end, count, base_offset, base_timestamp, "
     "log_append_time=None) -> tuple of 11 arrays"},
    {"murmur2", py_murmur2, METH_O, "murmur2(data) -> int (Kafka's Utils.murmur2, signed)"},
    {"encode_varint", py_encode_varint, METH_O, "encode_varint(int32) -> bytes (zigzag)"},
    {"encode_varlong", py_encode_varlong, METH_O, "encode_varlong(int64) -> bytes (zigzag)"},
    {"decode_varint", py_decode_varint, METH_VARARGS, "decode_varint(buf, pos) -> (value, next_pos)"},
    {"decode_varlong", py_decode_varlong, METH_VARARGS, "decode_varlong(buf, pos) -> (value, next_pos)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "kafkalite._speedups",
    "C implementations of kafkalite's per-record kernels (see kafkalite.protocol.record_codec).", -1,
    methods, NULL, NULL, NULL, NULL,
    /* No slots: single-phase initialisation, which a free-threaded CPython (3.13t) runs
     * with the GIL enabled. The kernels must keep it until docs/free-threading.md's list
     * of shared state is done. */
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *errors = PyImport_ImportModule("kafkalite.errors");
    if (!errors)
        return NULL;
    CorruptRecordsError = PyObject_GetAttrString(errors, "CorruptRecordsError");
    Py_DECREF(errors);
    if (!CorruptRecordsError)
        return NULL;
    PyObject *array_mod = PyImport_ImportModule("array");
    if (!array_mod)
        return NULL;
    ArrayType = PyObject_GetAttrString(array_mod, "array");
    Py_DECREF(array_mod);
    if (!ArrayType)
        return NULL;
    PyObject *module = PyModule_Create(&moduledef);
    if (module && kl_produce_init(module) < 0)
        Py_CLEAR(module);
    return module;
}
