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


#endif
