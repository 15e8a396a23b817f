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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

static PyObject *CorruptRecordsError = NULL; /* kafkalite.errors.CorruptRecordsError */
static PyObject *ArrayType = NULL;           /* array.array */

static void
corrupt(const char *what)
{
    PyErr_Format(CorruptRecordsError, "malformed record: %s", what);
}

/* ------------------------------------------------------------------ varints */

static inline int
uvarint_size(uint64_t u)
{
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *
put_uvarint(uint8_t *p, uint64_t u)
{
    while (u >= 0x80) {
        *p++ = (uint8_t)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *p++ = (uint8_t)u;
    return p;
}

static inline uint64_t
zigzag64(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline uint64_t
zigzag32(int32_t v)
{
    return (uint64_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

/* Read a zigzag varint from buf[*pos..end); 0 on success, -1 with an exception set. */
static inline int
read_varint(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int32_t *out)
{
    Py_ssize_t p = *pos;
    if (p < end && buf[p] < 0x80) { /* the common one-byte case */
        uint32_t u = buf[p];
        *out = (int32_t)((u >> 1) ^ (0u - (u & 1)));
        *pos = p + 1;
        return 0;
    }
    uint32_t u = 0;
    int shift = 0;
    for (;;) {
        if (p >= end) {
            corrupt("varint runs past the end of the data");
            return -1;
        }
        uint8_t b = buf[p++];
        if (b < 0x80) {
            u |= (uint32_t)b << shift;
            break;
        }
        u |= (uint32_t)(b & 0x7F) << shift;
        shift += 7;
        if (shift > 28) {
            corrupt("varint is longer than 5 bytes");
            return -1;
        }
    }
    *out = (int32_t)((u >> 1) ^ (0u - (u & 1)));
    *pos = p;
    return 0;
}

static inline int
read_varlong(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int64_t *out)
{
    Py_ssize_t p = *pos;
    uint64_t u = 0;
    int shift = 0;
    for (;;) {
        if (p >= end) {
            corrupt("varlong runs past the end of the data");
            return -1;
        }
        uint8_t b = buf[p++];
        if (b < 0x80) {
            u |= (uint64_t)b << shift;
            break;
        }
        u |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
        if (shift > 63) {
            corrupt("varlong is longer than 10 bytes");
            return -1;
        }
    }
    *out = (int64_t)((u >> 1) ^ (0ull - (u & 1)));
    *pos = p;
    return 0;
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

/* A bytes-like field: None (null) or a buffer. */
typedef struct {
    const char *ptr;
    Py_ssize_t len; /* -1 = null */
    Py_buffer view;
    int held;
} field_t;

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

typedef struct {
    int64_t offset_delta, timestamp_delta;
    field_t key, value;
    field_t *hdrs; /* 2 per header: key, value */
    Py_ssize_t nhdrs;
    field_t small[16];
    PyObject *seq; /* PySequence_Fast of the headers */
} record_args_t;

static void
release_args(record_args_t *a)
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
    /* Initialise only what release_args reads (the struct is large; this is per record). */
    a->key.held = a->value.held = 0;
    a->key.len = a->value.len = -1;
    a->hdrs = NULL;
    a->nhdrs = 0;
    a->seq = NULL;
    if (as_int64(args[0], "varint (int32)", INT32_MIN, INT32_MAX, &a->offset_delta) < 0 ||
        as_int64(args[1], "varlong (int64)", INT64_MIN, INT64_MAX, &a->timestamp_delta) < 0 ||
        get_field(args[2], &a->key) < 0 || get_field(args[3], &a->value) < 0)
        return -1;
    if ((a->key.len > INT32_MAX) || (a->value.len > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "key or value longer than 2 GiB");
        return -1;
    }
    Py_ssize_t body = 1 + uvarint_size(zigzag64(a->timestamp_delta)) +
                      uvarint_size(zigzag32((int32_t)a->offset_delta)) + field_size(&a->key) +
                      field_size(&a->value);
    PyObject *headers = args[4];
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
        a->hdrs[2 * i + 1].len = -1;
        if (get_header_key(hk, &a->hdrs[2 * i]) < 0 || get_field(hv, &a->hdrs[2 * i + 1]) < 0)
            return -1;
        body += field_size(&a->hdrs[2 * i]) + field_size(&a->hdrs[2 * i + 1]);
    }
    return body;
}

static uint8_t *
write_record(uint8_t *p, const record_args_t *a, Py_ssize_t body)
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
            if (PyByteArray_Resize(buf, old + total) == 0) {
                write_record((uint8_t *)PyByteArray_AS_STRING(buf) + old, &a, body);
                result = PyLong_FromSsize_t(total);
            }
        }
    }
    release_args(&a);
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
    release_args(&a);
    if (body < 0)
        return NULL;
    return PyLong_FromSsize_t(uvarint_size(zigzag64(body)) + body);
}

/* ------------------------------------------------------------------ decoding */

typedef struct {
    const uint8_t *buf;
    Py_ssize_t pos, end;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *log_append_time; /* NULL or the int every timestamp takes */
} reader_t;

static int
check_range(Py_ssize_t len, reader_t *r)
{
    if (r->pos < 0 || r->end > len || r->pos > r->end) {
        PyErr_Format(CorruptRecordsError, "record range [%zd, %zd) is outside the %zd-byte buffer",
                     r->pos, r->end, len);
        return -1;
    }
    if (r->count < 0) {
        PyErr_Format(CorruptRecordsError, "invalid record count %zd in batch", r->count);
        return -1;
    }
    /* Each record takes at least 7 bytes: refuse counts the data cannot hold. */
    if (r->count > (r->end - r->pos) / 7) {
        PyErr_Format(CorruptRecordsError,
                     "batch claims %zd records but its %zd bytes of records hold at most %zd", r->count,
                     r->end - r->pos, (r->end - r->pos) / 7);
        return -1;
    }
    return 0;
}

/* Portable overflow-checked int64 addition (MSVC has no add_overflows). */
static inline int
add_overflows(long long a, long long b, long long *out)
{
    if ((b > 0 && a > LLONG_MAX - b) || (b < 0 && a < LLONG_MIN - b))
        return 1;
    *out = a + b;
    return 0;
}

/* base + delta as a Python int, exact even if it overflows int64 (as Python's +). */
static PyObject *
add_int64(long long base, int64_t delta)
{
    long long sum;
    if (!add_overflows(base, (long long)delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *a = PyLong_FromLongLong(base), *b = PyLong_FromLongLong(delta), *s = NULL;
    if (a && b)
        s = PyNumber_Add(a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return s;
}

/* The fields of one record, as positions; shared by both decoders. */
typedef struct {
    Py_ssize_t rec_end;
    int32_t length;
    int64_t ts_delta;
    int32_t offset_delta;
    Py_ssize_t key_pos, value_pos;
    int32_t key_len, value_len; /* -1 null */
    int32_t nheaders;
    Py_ssize_t headers_pos;
} rec_t;

static int
read_record_head(reader_t *r, rec_t *rec, Py_ssize_t index)
{
    const uint8_t *buf = r->buf;
    Py_ssize_t pos = r->pos;
    if (pos >= r->end) {
        PyErr_Format(CorruptRecordsError, "malformed record: record %zd runs past the end of the batch",
                     index);
        return -1;
    }
    if (read_varint(buf, &pos, r->end, &rec->length) < 0)
        return -1;
    if (rec->length < 6) {
        PyErr_Format(CorruptRecordsError, "malformed record: invalid record length %d", (int)rec->length);
        return -1;
    }
    if (rec->length > r->end - pos) {
        PyErr_Format(CorruptRecordsError,
                     "malformed record: record length %d exceeds the %zd bytes left in the batch",
                     (int)rec->length, r->end - pos);
        return -1;
    }
    Py_ssize_t end = rec->rec_end = pos + rec->length;
    pos++; /* attributes */
    if (read_varlong(buf, &pos, end, &rec->ts_delta) < 0 ||
        read_varint(buf, &pos, end, &rec->offset_delta) < 0 ||
        read_varint(buf, &pos, end, &rec->key_len) < 0)
        return -1;
    rec->key_pos = pos;
    if (rec->key_len < 0) {
        rec->key_len = -1; /* any negative length is null, as Java's Utils.readBytes */
    } else if (rec->key_len > end - pos) {
        corrupt("key runs past the end of the record");
        return -1;
    } else {
        pos += rec->key_len;
    }
    if (read_varint(buf, &pos, end, &rec->value_len) < 0)
        return -1;
    rec->value_pos = pos;
    if (rec->value_len < 0) {
        rec->value_len = -1;
    } else if (rec->value_len > end - pos) {
        corrupt("value runs past the end of the record");
        return -1;
    } else {
        pos += rec->value_len;
    }
    if (read_varint(buf, &pos, end, &rec->nheaders) < 0)
        return -1;
    if (rec->nheaders < 0) {
        corrupt("invalid header count");
        return -1;
    }
    if ((int64_t)rec->nheaders * 2 > end - pos) {
        corrupt("header count exceeds what the record's remaining bytes can hold");
        return -1;
    }
    rec->headers_pos = pos;
    return 0;
}

/* Read one header at *pos; lengths as in rec_t. */
static int
read_header(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, Py_ssize_t *kpos, int32_t *klen,
            Py_ssize_t *vpos, int32_t *vlen)
{
    if (read_varint(buf, pos, end, klen) < 0)
        return -1;
    if (*klen < 0) {
        corrupt("invalid negative header key size");
        return -1;
    }
    if (*klen > end - *pos) {
        corrupt("header key runs past the end of the record");
        return -1;
    }
    *kpos = *pos;
    *pos += *klen;
    if (read_varint(buf, pos, end, vlen) < 0)
        return -1;
    *vpos = *pos;
    if (*vlen < 0) {
        *vlen = -1;
    } else if (*vlen > end - *pos) {
        corrupt("header value runs past the end of the record");
        return -1;
    } else {
        *pos += *vlen;
    }
    return 0;
}

static int
check_record_end(Py_ssize_t pos, const rec_t *rec)
{
    if (pos != rec->rec_end) {
        PyErr_Format(CorruptRecordsError,
                     "malformed record: record length says %d bytes but its fields take %zd",
                     (int)rec->length, pos - rec->rec_end + rec->length);
        return -1;
    }
    return 0;
}

static int
check_batch_end(const reader_t *r)
{
    if (r->pos != r->end) {
        PyErr_Format(CorruptRecordsError, "incorrect declared batch size: %zd bytes remain after %zd records",
                     r->end - r->pos, r->count);
        return -1;
    }
    return 0;
}

static PyObject *
bytes_or_none(const uint8_t *buf, Py_ssize_t pos, int32_t len)
{
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)buf + pos, len);
}

static PyObject *
decode_headers(const uint8_t *buf, const rec_t *rec, Py_ssize_t *pos_out)
{
    PyObject *list = PyList_New(rec->nheaders);
    if (!list)
        return NULL;
    Py_ssize_t pos = rec->headers_pos;
    for (int32_t i = 0; i < rec->nheaders; i++) {
        Py_ssize_t kpos, vpos;
        int32_t klen, vlen;
        if (read_header(buf, &pos, rec->rec_end, &kpos, &klen, &vpos, &vlen) < 0)
            goto fail;
        /* Java decodes header keys replacing malformed UTF-8; so does the Python path. */
        PyObject *k = PyUnicode_DecodeUTF8((const char *)buf + kpos, klen, "replace");
        PyObject *v = k ? bytes_or_none(buf, vpos, vlen) : NULL;
        PyObject *pair = v ? PyTuple_New(2) : NULL;
        if (!pair) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, k);
        PyTuple_SET_ITEM(pair, 1, v);
        PyList_SET_ITEM(list, i, pair);
    }
    *pos_out = pos;
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* A new record_type instance of n items. For tuple subclasses without instance
 * storage (NamedTuples) the object is allocated directly, as structseq does; on
 * Python >= 3.14 (tuples cache their hash) we go through tuple.__new__ instead. */
static PyObject *
new_record(PyTypeObject *type, Py_ssize_t n)
{
    if (type == &PyTuple_Type)
        return PyTuple_New(n);
#if PY_VERSION_HEX < 0x030E0000
    return type->tp_alloc(type, n);
#else
    return PyTuple_New(n); /* converted by finish_record */
#endif
}

#if PY_VERSION_HEX >= 0x030E0000
static PyObject *
finish_record(PyTypeObject *type, PyObject *obj)
{
    if (type != &PyTuple_Type) {
        PyObject *args = PyTuple_Pack(1, obj);
        Py_DECREF(obj);
        if (!args)
            return NULL;
        PyObject *res = PyTuple_Type.tp_new(type, args, NULL);
        Py_DECREF(args);
        return res;
    }
    return obj;
}
#endif

/* decode_records(buf, start, end, count, base_offset, base_timestamp,
 *                log_append_time=None, record_type=tuple, extra=()) -> list */
static PyObject *
py_decode_records(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "start", "end", "count", "base_offset", "base_timestamp",
                             "log_append_time", "record_type", "extra", NULL};
    Py_buffer view;
    reader_t r = {0};
    PyObject *lat = Py_None, *extra = NULL;
    PyTypeObject *rtype = &PyTuple_Type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*nnnLL|OO!O!", kwlist, &view, &r.pos, &r.end,
                                     &r.count, &r.base_offset, &r.base_timestamp, &lat, &PyType_Type,
                                     &rtype, &PyTuple_Type, &extra))
        return NULL;
    PyObject *list = NULL;
    if (rtype != &PyTuple_Type &&
        (!PyType_IsSubtype(rtype, &PyTuple_Type) || rtype->tp_basicsize != PyTuple_Type.tp_basicsize ||
         rtype->tp_itemsize != PyTuple_Type.tp_itemsize || rtype->tp_dictoffset != 0)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be tuple or a tuple subclass without __dict__");
        goto done;
    }
    if (check_range(view.len, &r) < 0)
        goto done;
    r.buf = view.buf;
    r.log_append_time = lat == Py_None ? NULL : lat;
    Py_ssize_t nextra = extra ? PyTuple_GET_SIZE(extra) : 0;
    list = PyList_New(r.count);
    if (!list)
        goto done;
    for (Py_ssize_t i = 0; i < r.count; i++) {
        rec_t rec;
        if (read_record_head(&r, &rec, i) < 0)
            goto fail;
        PyObject *item = new_record(rtype, 5 + nextra);
        if (!item)
            goto fail;
        PyList_SET_ITEM(list, i, item); /* owned by the list from here on */
        PyObject *off = add_int64(r.base_offset, rec.offset_delta);
        if (!off)
            goto fail;
        PyTuple_SET_ITEM(item, 0, off);
        PyObject *ts;
        if (r.log_append_time) {
            ts = r.log_append_time;
            Py_INCREF(ts);
        } else {
            ts = add_int64(r.base_timestamp, rec.ts_delta);
            if (!ts)
                goto fail;
        }
        PyTuple_SET_ITEM(item, 1, ts);
        PyObject *o = bytes_or_none(r.buf, rec.key_pos, rec.key_len);
        if (!o)
            goto fail;
        PyTuple_SET_ITEM(item, 2, o);
        o = bytes_or_none(r.buf, rec.value_pos, rec.value_len);
        if (!o)
            goto fail;
        PyTuple_SET_ITEM(item, 3, o);
        Py_ssize_t pos = rec.headers_pos;
        o = rec.nheaders ? decode_headers(r.buf, &rec, &pos) : PyList_New(0);
        if (!o)
            goto fail;
        PyTuple_SET_ITEM(item, 4, o);
        for (Py_ssize_t j = 0; j < nextra; j++) {
            PyObject *x = PyTuple_GET_ITEM(extra, j);
            Py_INCREF(x);
            PyTuple_SET_ITEM(item, 5 + j, x);
        }
        if (check_record_end(pos, &rec) < 0)
            goto fail;
        r.pos = rec.rec_end;
        if (rtype != &PyTuple_Type) {
#if PY_VERSION_HEX >= 0x030E0000
            Py_INCREF(item);
            PyObject *conv = finish_record(rtype, item);
            if (!conv)
                goto fail;
            PyList_SetItem(list, i, conv);
#endif
        }
    }
    if (check_batch_end(&r) < 0)
        goto fail;
    goto done;
fail:
    Py_CLEAR(list);
done:
    PyBuffer_Release(&view);
    return list;
}

/* ------------------------------------------------------------------ columnar */

typedef struct {
    char *data;
    Py_ssize_t len, cap; /* in items */
    Py_ssize_t itemsize;
} vec_t;

static int
vec_reserve(vec_t *v, Py_ssize_t need)
{
    if (need <= v->cap)
        return 0;
    Py_ssize_t cap = v->cap ? v->cap : 16;
    while (cap < need)
        cap *= 2;
    char *p = PyMem_Realloc(v->data, cap * v->itemsize);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    v->data = p;
    v->cap = cap;
    return 0;
}

static inline int
vec_push_i32(vec_t *v, int64_t x)
{
    if (v->len == v->cap && vec_reserve(v, v->len + 1) < 0)
        return -1;
    if (x < INT_MIN || x > INT_MAX) {
        corrupt("position does not fit in an int32 column");
        return -1;
    }
    ((int *)v->data)[v->len++] = (int)x;
    return 0;
}

static PyObject *
vec_to_array(vec_t *v, const char *typecode)
{
    return PyObject_CallFunction(ArrayType, "sy#", typecode, v->data ? v->data : "",
                                 v->len * v->itemsize);
}

enum { C_OFF, C_TS, C_KS, C_KL, C_VS, C_VL, C_HO, C_HKS, C_HKL, C_HVS, C_HVL, NCOLS };

/* decode_records_columnar(buf, start, end, count, base_offset, base_timestamp,
 *                         log_append_time=None) -> tuple of 11 arrays */
static PyObject *
py_decode_records_columnar(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "start", "end", "count", "base_offset", "base_timestamp",
                             "log_append_time", NULL};
    Py_buffer view;
    reader_t r = {0};
    PyObject *lat = Py_None, *result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*nnnLL|O", kwlist, &view, &r.pos, &r.end, &r.count,
                                     &r.base_offset, &r.base_timestamp, &lat))
        return NULL;
    vec_t cols[NCOLS];
    memset(cols, 0, sizeof(cols));
    for (int c = 0; c < NCOLS; c++)
        cols[c].itemsize = (c == C_OFF || c == C_TS) ? sizeof(long long) : sizeof(int);
    long long lat_value = 0;
    int has_lat = lat != Py_None;
    if (has_lat) {
        lat_value = PyLong_AsLongLong(lat);
        if (lat_value == -1 && PyErr_Occurred())
            goto done;
    }
    if (check_range(view.len, &r) < 0)
        goto done;
    r.buf = view.buf;
    for (int c = 0; c < C_HO; c++)
        if (vec_reserve(&cols[c], r.count) < 0)
            goto done;
    if (vec_reserve(&cols[C_HO], r.count + 1) < 0 || vec_push_i32(&cols[C_HO], 0) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < r.count; i++) {
        rec_t rec;
        if (read_record_head(&r, &rec, i) < 0)
            goto done;
        long long off, ts;
        if (add_overflows(r.base_offset, (long long)rec.offset_delta, &off) ||
            (!has_lat && add_overflows(r.base_timestamp, (long long)rec.ts_delta, &ts))) {
            corrupt("offset or timestamp overflows int64");
            goto done;
        }
        if (has_lat)
            ts = lat_value;
        ((long long *)cols[C_OFF].data)[cols[C_OFF].len++] = off;
        ((long long *)cols[C_TS].data)[cols[C_TS].len++] = ts;
        if (vec_push_i32(&cols[C_KS], rec.key_pos) < 0 || vec_push_i32(&cols[C_KL], rec.key_len) < 0 ||
            vec_push_i32(&cols[C_VS], rec.value_pos) < 0 || vec_push_i32(&cols[C_VL], rec.value_len) < 0)
            goto done;
        Py_ssize_t pos = rec.headers_pos;
        for (int32_t h = 0; h < rec.nheaders; h++) {
            Py_ssize_t kpos, vpos;
            int32_t klen, vlen;
            if (read_header(r.buf, &pos, rec.rec_end, &kpos, &klen, &vpos, &vlen) < 0 ||
                vec_push_i32(&cols[C_HKS], kpos) < 0 || vec_push_i32(&cols[C_HKL], klen) < 0 ||
                vec_push_i32(&cols[C_HVS], vpos) < 0 || vec_push_i32(&cols[C_HVL], vlen) < 0)
                goto done;
        }
        if (vec_push_i32(&cols[C_HO], cols[C_HKS].len) < 0 || check_record_end(pos, &rec) < 0)
            goto done;
        r.pos = rec.rec_end;
    }
    if (check_batch_end(&r) < 0)
        goto done;
    result = PyTuple_New(NCOLS);
    if (!result)
        goto done;
    for (int c = 0; c < NCOLS; c++) {
        PyObject *arr = vec_to_array(&cols[c], (c == C_OFF || c == C_TS) ? "q" : "i");
        if (!arr) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, c, arr);
    }
done:
    for (int c = 0; c < NCOLS; c++)
        PyMem_Free(cols[c].data);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ murmur2 */

/* Kafka's Utils.murmur2 (seed 0x9747b28c) as a signed 32-bit int. */
static PyObject *
py_murmur2(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *d = view.buf;
    uint32_t length = (uint32_t)view.len;
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28cu ^ length;
    uint32_t nwords = length / 4;
    for (uint32_t i = 0; i < nwords; i++) {
        const uint8_t *p = d + 4 * i;
        uint32_t k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = d + (length & ~3u);
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    PyBuffer_Release(&view);
    return PyLong_FromLong((long)(int32_t)h);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"encode_record_into", (PyCFunction)(void (*)(void))py_encode_record_into, METH_FASTCALL,
     "encode_record_into(buf, offset_delta, timestamp_delta, key, value, headers) -> int"},
    {"record_size", (PyCFunction)(void (*)(void))py_record_size, METH_FASTCALL,
     "record_size(offset_delta, timestamp_delta, key, value, headers) -> int"},
    {"decode_records", (PyCFunction)(void (*)(void))py_decode_records, METH_VARARGS | METH_KEYWORDS,
     "decode_records(buf, start, end, count, base_offset, base_timestamp, log_append_time=None, "
     "record_type=tuple, extra=()) -> list"},
    {"decode_records_columnar", (PyCFunction)(void (*)(void))py_decode_records_columnar,
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
    methods,
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
    return PyModule_Create(&moduledef);
}
