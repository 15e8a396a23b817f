/*
 * kafkalite._speedups: decoding a batch's records into tuples (decode_records) or
 * columns (decode_records_columnar). Semantics match _record_codec_py.py exactly.
 */
#include "_speedups.h"

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
        PyObject_GC_UnTrack(pair); /* (str, bytes | None): atomic, see untrack_record */
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

/* The cyclic GC need not track a decoded record: it holds ints, bytes, str, None
 * (and the caller's `extra`, checked to be untracked objects too) and one headers list
 * of (str, bytes | None) pairs, so no reference cycle runs through it. Tracking them
 * made the young-generation collections triggered by a fetch's worth of records cost
 * about as much as decoding them (~1,200 of ~2,700 instructions per record, measured
 * with callgrind). Only code that puts the record (or something referring to it)
 * into its own headers list could make a cycle, which would then not be collected. */
static inline void
untrack_record(PyObject *item)
{
    PyObject_GC_UnTrack(PyTuple_GET_ITEM(item, 4));
    PyObject_GC_UnTrack(item);
}

/* decode_records(buf, start, end, count, base_offset, base_timestamp,
 *                log_append_time=None, record_type=tuple, extra=()) -> list */
PyObject *
kl_decode_records(PyObject *self, PyObject *args, PyObject *kwargs)
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
    int untrack = 1;
    for (Py_ssize_t j = 0; j < nextra; j++)
        if (PyObject_GC_IsTracked(PyTuple_GET_ITEM(extra, j)))
            untrack = 0;
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
            item = conv;
#endif
        }
        if (untrack)
            untrack_record(item);
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
PyObject *
kl_decode_records_columnar(PyObject *self, PyObject *args, PyObject *kwargs)
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
