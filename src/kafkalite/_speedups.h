/*
 * Shared declarations of kafkalite._speedups (see _speedups.c).
 */
#ifndef KAFKALITE_SPEEDUPS_H
#define KAFKALITE_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

extern PyObject *kl_CorruptRecordsError; /* kafkalite.errors.CorruptRecordsError */
extern PyObject *kl_ArrayType;           /* array.array */
#define CorruptRecordsError kl_CorruptRecordsError
#define ArrayType kl_ArrayType

/* Raise CorruptRecordsError("malformed record: <what>"). */
void kl_corrupt(const char *what);
#define corrupt kl_corrupt

PyObject *kl_decode_records(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *kl_decode_records_columnar(PyObject *self, PyObject *args, PyObject *kwargs);

/* ------------------------------------------------------------------ encoding (_speedups.c) */

/* A bytes-like field: None (null) or a buffer. */
typedef struct {
    const char *ptr;
    Py_ssize_t len; /* -1 = null */
    Py_buffer view;
    int held;
} field_t;

/* One record's fields while it is encoded. */
typedef struct {
    int64_t offset_delta, timestamp_delta;
    field_t key, value;
    field_t *hdrs; /* 2 per header: key, value */
    Py_ssize_t nhdrs;
    field_t small[16];
    PyObject *seq; /* PySequence_Fast of the headers */
} record_args_t;

/* Fill `a` from key, value, headers (None or a sequence of pairs); returns the record
 * body size (everything after the length varint), or -1 with an exception set.
 * kl_release_args(a) must follow either way. */
Py_ssize_t kl_parse_record(int64_t offset_delta, int64_t timestamp_delta, PyObject *key, PyObject *value,
                           PyObject *headers, record_args_t *a);
void kl_release_args(record_args_t *a);
/* Write the record (length varint + body) at p; returns the end. */
uint8_t *kl_write_record(uint8_t *p, const record_args_t *a, Py_ssize_t body);
/* Resize a bytearray, over-allocating by half when it grows. */
int kl_grow_bytearray(PyObject *buf, Py_ssize_t size);

/* ------------------------------------------------------------------ producer (_speedups_produce.c) */

/* Adds the producer's types to the module; 0 or -1. */
int kl_produce_init(PyObject *module);

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

/* Kafka's Utils.murmur2 (seed 0x9747b28c); callers cast to int32 for the signed value. */
static inline uint32_t
kl_murmur2(const void *data, Py_ssize_t len)
{
    const uint8_t *d = data;
    uint32_t length = (uint32_t)len;
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
    return h;
}

#endif
