/*
 * kafkalite._speedups: the producer's per-record path in C.
 *
 * The pure-Python reference is kafkalite/producer/_append_py.py (and BuilderBase in
 * kafkalite/protocol/_record_codec_py.py); both give the same batches byte for byte.
 *
 * Types (most are the base class of a Python class that adds the rest):
 *
 *   BuilderBase   RecordBatchBuilder's record buffer: try_append/append encode one
 *                 record into the batch's bytearray and keep count/timestamps.
 *   FastLock      a lock usable from Python (acquire/release/with) and from C.
 *   BatchBase     ProducerBatch's builder/closed/done/callbacks.
 *   QueueBase     PartitionQueue's batches deque and lock.
 *   TopicBase     TopicState's partition count, queues, sticky partitioner, available.
 *   StickyBase    StickyPartitioner's current partition and produced bytes.
 *   RecordFuture, AsyncRecordFuture
 *                 the per-record futures (batch, index, timestamp, sizes); final C
 *                 types with a freelist, whose methods kafkalite.producer.futures
 *                 installs from Python (install_methods).
 *   Appender      Producer.send()'s common case in one call: partition (sticky or
 *                 murmur2), lock, encode into the open batch (size checked), unlock,
 *                 one future. Anything else (no open batch with room, a switch of the
 *                 sticky partition, unknown topic, non-bytes data, headers...) returns
 *                 None and the caller takes the general Python path, which handles it
 *                 exactly as before.
 *
 * Everything here runs with the GIL held and calls no Python code between taking and
 * releasing a partition's lock (except allocating the future, which cannot block).
 */
#include "_speedups.h"
#include <structmember.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#endif

#define BATCH_OVERHEAD 61

/* isinstance for our base types: their Python subclasses derive from them directly. */
#define IS_A(o, T) (Py_TYPE(o) == (T) || Py_TYPE(o)->tp_base == (T) || PyType_IsSubtype(Py_TYPE(o), (T)))

/* ------------------------------------------------------------------ clock */

/* Wall-clock milliseconds since the epoch (what int(time.time() * 1000) gives). */
static int64_t
now_ms(void)
{
#ifdef _WIN32
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    uint64_t t = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime; /* 100 ns since 1601 */
    return (int64_t)(t / 10000) - 11644473600000LL;
#else
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
}

/* ------------------------------------------------------------------ BuilderBase */

typedef struct {
    PyObject_HEAD
    PyObject *buf; /* bytearray: 61 header bytes reserved, then the records */
    Py_ssize_t count;
    long long base_timestamp;
    long long max_timestamp;
    Py_ssize_t limit;
    Py_ssize_t room; /* buffer bytes the producer reserved for this batch (buffer.memory) */
    double ratio;
} BuilderObject;

static PyTypeObject BuilderType;

static int
builder_init(BuilderObject *self, PyObject *args, PyObject *kwargs)
{
    /* RecordBatchBuilder.__init__ sets the fields; a bare base gets an empty buffer. */
    if (self->buf == NULL) {
        self->buf = PyByteArray_FromStringAndSize(NULL, BATCH_OVERHEAD);
        if (!self->buf)
            return -1;
        memset(PyByteArray_AS_STRING(self->buf), 0, BATCH_OVERHEAD);
    }
    return 0;
}

static PyObject *
builder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    BuilderObject *self = (BuilderObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->count = 0;
    self->base_timestamp = 0;
    self->max_timestamp = -1;
    self->limit = 16384;
    self->room = PY_SSIZE_T_MAX;
    self->ratio = 1.0;
    return (PyObject *)self;
}

static int
builder_traverse(BuilderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->buf);
    return 0;
}

static int
builder_clear(BuilderObject *self)
{
    Py_CLEAR(self->buf);
    return 0;
}

static void
builder_dealloc(BuilderObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    builder_clear(self);
    tp->tp_free((PyObject *)self); /* (a heap subclass's type is released by subtype_dealloc) */
}

/* Batches up to this batch.size get their whole buffer with the first record (as
 * Java's producer allocates batch.size bytes per batch); larger ones grow by half. */
#define RESERVE_MAX (4 << 20)

/* Make room for `extra` bytes at the end of a bytearray (the first growth reserves
 * `reserve` bytes); returns where they start, or NULL with an exception set.
 * Appending within the allocation only moves the size (PyByteArray_Resize costs a
 * few hundred instructions per call, and shrinks the allocation when the size drops
 * below half of it). */
static char *
bytearray_extend(PyObject *buf, Py_ssize_t extra, Py_ssize_t reserve)
{
    PyByteArrayObject *ba = (PyByteArrayObject *)buf;
    Py_ssize_t old = Py_SIZE(ba), size = old + extra;
    if (ba->ob_exports == 0 && ba->ob_start == ba->ob_bytes && size < ba->ob_alloc) {
        Py_SET_SIZE(ba, size);
        ba->ob_bytes[size] = '\0';
        return ba->ob_bytes + old;
    }
    Py_ssize_t target = size + (size >> 1) + 64;
    if (target < reserve)
        target = reserve;
    if (PyByteArray_Resize(buf, target) < 0)
        return NULL;
    /* Back to the real size, keeping the allocation (no exports: Resize succeeded). */
    Py_SET_SIZE(ba, size);
    ba->ob_bytes[size] = '\0';
    return ba->ob_bytes + old;
}

/* The size the batch is expected to have once built (compression estimated). */
static inline Py_ssize_t
builder_estimate(BuilderObject *b, Py_ssize_t size)
{
    if (b->ratio == 1.0)
        return size;
    return BATCH_OVERHEAD + (Py_ssize_t)((double)(size - BATCH_OVERHEAD) * b->ratio);
}

static inline int
builder_is_full(BuilderObject *b)
{
    return b->count > 0 && builder_estimate(b, PyByteArray_GET_SIZE(b->buf)) >= b->limit;
}

/* Append one record. Returns its index, -1 when it does not fit (check_limit and not
 * the first record; nothing written): the batch would pass batch.size (estimated) or
 * its buffer would pass the room reserved for it, -2 with an exception set. */
static Py_ssize_t
builder_add(BuilderObject *b, int64_t ts, PyObject *key, PyObject *value, PyObject *headers, int check_limit)
{
    PyObject *buf = b->buf;
    if (buf == NULL || !PyByteArray_Check(buf)) {
        PyErr_SetString(PyExc_TypeError, "the batch builder has no buffer");
        return -2;
    }
    Py_ssize_t n = b->count;
    int64_t delta = 0;
    if (n > 0) {
        if ((ts > 0 && b->base_timestamp < (long long)(INT64_MIN + ts)) ||
            (ts < 0 && b->base_timestamp > (long long)(INT64_MAX + ts))) {
            PyErr_SetString(PyExc_ValueError, "varlong (int64) out of range");
            return -2;
        }
        delta = ts - b->base_timestamp;
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "varint (int32) out of range");
        return -2;
    }
    record_args_t a;
    Py_ssize_t body = kl_parse_record((int64_t)n, delta, key, value, headers, &a);
    Py_ssize_t result = -2;
    if (body < 0)
        goto done;
    if (body > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "record larger than 2 GiB");
        goto done;
    }
    Py_ssize_t total = uvarint_size(zigzag32((int32_t)body)) + body;
    Py_ssize_t before = PyByteArray_GET_SIZE(buf);
    if (check_limit && n > 0 && (builder_estimate(b, before) + total > b->limit || before + total > b->room)) {
        result = -1;
        goto done;
    }
    Py_ssize_t cap = b->room < b->limit ? b->room : b->limit;
    char *dest = bytearray_extend(buf, total, cap <= RESERVE_MAX ? cap + 64 : 0);
    if (!dest)
        goto done;
    kl_write_record((uint8_t *)dest, &a, body);
    if (n == 0) {
        b->base_timestamp = ts;
        b->max_timestamp = ts;
    } else if (ts > b->max_timestamp) {
        b->max_timestamp = ts;
    }
    b->count = n + 1;
    result = n;
done:
    kl_release_args(&a);
    return result;
}

static PyObject *
builder_append_common(BuilderObject *self, PyObject *const *args, Py_ssize_t nargs, int check_limit)
{
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "takes (timestamp_ms, key, value, headers=None)");
        return NULL;
    }
    long long ts = PyLong_AsLongLong(args[0]);
    if (ts == -1 && PyErr_Occurred())
        return NULL;
    PyObject *headers = nargs == 4 ? args[3] : Py_None;
    Py_ssize_t r = builder_add(self, ts, args[1], args[2], headers, check_limit);
    if (r == -2)
        return NULL;
    return PyLong_FromSsize_t(r);
}

static PyObject *
builder_try_append(BuilderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return builder_append_common(self, args, nargs, 1);
}

static PyObject *
builder_append(BuilderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return builder_append_common(self, args, nargs, 0);
}

static PyObject *
builder_py_is_full(BuilderObject *self, PyObject *unused)
{
    if (self->buf == NULL || !PyByteArray_Check(self->buf)) {
        PyErr_SetString(PyExc_TypeError, "the batch builder has no buffer");
        return NULL;
    }
    return PyBool_FromLong(builder_is_full(self));
}

static PyObject *
builder_py_estimate(BuilderObject *self, PyObject *unused)
{
    if (self->buf == NULL || !PyByteArray_Check(self->buf)) {
        PyErr_SetString(PyExc_TypeError, "the batch builder has no buffer");
        return NULL;
    }
    return PyLong_FromSsize_t(builder_estimate(self, PyByteArray_GET_SIZE(self->buf)));
}

static PyMethodDef builder_methods[] = {
    {"try_append", (PyCFunction)(void (*)(void))builder_try_append, METH_FASTCALL,
     "try_append(timestamp_ms, key, value, headers=None) -> index, or -1 if the batch is full"},
    {"append", (PyCFunction)(void (*)(void))builder_append, METH_FASTCALL,
     "append(timestamp_ms, key, value, headers=None) -> index (no size limit)"},
    {"is_full", (PyCFunction)builder_py_is_full, METH_NOARGS,
     "True once the estimated size reaches the batch size (Java's isFull)"},
    {"estimated_size_in_bytes", (PyCFunction)builder_py_estimate, METH_NOARGS,
     "the size the built batch is expected to have (compression estimated)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef builder_members[] = {
    {"_buf", T_OBJECT_EX, offsetof(BuilderObject, buf), 0, "the batch buffer (header reserved)"},
    {"_count", T_PYSSIZET, offsetof(BuilderObject, count), 0, "records appended"},
    {"_base_timestamp", T_LONGLONG, offsetof(BuilderObject, base_timestamp), 0, "first record's timestamp"},
    {"_max_timestamp", T_LONGLONG, offsetof(BuilderObject, max_timestamp), 0, "largest timestamp"},
    {"_limit", T_PYSSIZET, offsetof(BuilderObject, limit), 0, "batch.size"},
    {"_room", T_PYSSIZET, offsetof(BuilderObject, room), 0, "buffer bytes reserved for the batch"},
    {"_ratio", T_DOUBLE, offsetof(BuilderObject, ratio), 0, "estimated compression ratio x 1.05"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups.BuilderBase",
    .tp_basicsize = sizeof(BuilderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The record buffer of a record batch builder (see RecordBatchBuilder).",
    .tp_new = builder_new,
    .tp_init = (initproc)builder_init,
    .tp_traverse = (traverseproc)builder_traverse,
    .tp_clear = (inquiry)builder_clear,
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_methods = builder_methods,
    .tp_members = builder_members,
};

/* ------------------------------------------------------------------ FastLock
 *
 * With the GIL, the lock is a flag that is only read and written while holding the
 * GIL, so taking a free lock costs a few instructions (an OS lock costs a few hundred
 * per record on the append path). Every holder keeps it for a few microseconds: a
 * thread that finds it taken gives up the GIL and yields until it is free (rare: the
 * sender draining a partition while a caller appends to it). Without the GIL
 * (free-threaded builds) it is an OS lock. */

#if defined(Py_GIL_DISABLED)
#define KL_OS_LOCK 1
#endif

typedef struct {
    PyObject_HEAD
#ifdef KL_OS_LOCK
    PyThread_type_lock lock;
#endif
    char locked;
} LockObject;

static PyTypeObject LockType;

static PyObject *
lock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    LockObject *self = (LockObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
#ifdef KL_OS_LOCK
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
#endif
    self->locked = 0;
    return (PyObject *)self;
}

static void
lock_dealloc(LockObject *self)
{
#ifdef KL_OS_LOCK
    if (self->lock) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
#endif
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Take the lock if it is free (never waits). */
static inline int
lock_try(LockObject *self)
{
#ifdef KL_OS_LOCK
    if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        self->locked = 1;
        return 1;
    }
    return 0;
#else
    if (self->locked)
        return 0;
    self->locked = 1;
    return 1;
#endif
}

static inline void
lock_release_c(LockObject *self)
{
    self->locked = 0;
#ifdef KL_OS_LOCK
    PyThread_release_lock(self->lock);
#endif
}

/* Wait for the lock (GIL released meanwhile) for at most `timeout` s (< 0: forever). */
static int
lock_wait(LockObject *self, double timeout)
{
#ifdef KL_OS_LOCK
    PY_TIMEOUT_T us = timeout < 0 ? -1 : (PY_TIMEOUT_T)(timeout * 1e6);
    PyLockStatus r;
    Py_BEGIN_ALLOW_THREADS
    r = PyThread_acquire_lock_timed(self->lock, us, 0);
    Py_END_ALLOW_THREADS
    if (r == PY_LOCK_ACQUIRED) {
        self->locked = 1;
        return 1;
    }
    return 0;
#else
    int64_t deadline = timeout < 0 ? -1 : now_ms() + (int64_t)(timeout * 1000);
    for (int spins = 0;; spins++) {
        /* Let the holder (which needs the GIL to finish) run. */
        Py_BEGIN_ALLOW_THREADS
#ifdef _WIN32
        Sleep(spins < 10 ? 0 : 1);
#else
        struct timespec ts = {0, spins < 10 ? 0 : 50000};
        nanosleep(&ts, NULL);
#endif
        Py_END_ALLOW_THREADS
        if (lock_try(self))
            return 1;
        if (deadline >= 0 && now_ms() >= deadline)
            return 0;
    }
#endif
}

static PyObject *
lock_acquire(LockObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pd:acquire", kwlist, &blocking, &timeout))
        return NULL;
    if (lock_try(self))
        Py_RETURN_TRUE;
    if (!blocking || timeout == 0)
        Py_RETURN_FALSE;
    return PyBool_FromLong(lock_wait(self, timeout));
}

static PyObject *
lock_enter(LockObject *self, PyObject *unused)
{
    if (!lock_try(self))
        lock_wait(self, -1);
    Py_RETURN_TRUE;
}

static PyObject *
lock_release(LockObject *self, PyObject *unused)
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    lock_release_c(self);
    Py_RETURN_NONE;
}

static PyObject *
lock_exit(LockObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lock_release(self, NULL);
}

static PyObject *
lock_locked(LockObject *self, PyObject *unused)
{
    return PyBool_FromLong(self->locked);
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool"},
    {"release", (PyCFunction)lock_release, METH_NOARGS, "release()"},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS, "locked() -> bool"},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups.FastLock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plain lock (like threading.Lock) that the C append path can take without Python calls.",
    .tp_new = lock_new,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_methods = lock_methods,
};

/* ------------------------------------------------------------------ plain bases */


typedef struct {
    PyObject_HEAD
    PyObject *builder;
    PyObject *callbacks; /* None/NULL or a list of (future, fn, kind) */
    char closed;
    char done;
} BatchObject;

static int
BatchObject_traverse(BatchObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->builder);
    Py_VISIT(self->callbacks);
    return 0;
}

static int
BatchObject_clear(BatchObject *self)
{
    Py_CLEAR(self->builder);
    Py_CLEAR(self->callbacks);
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *batches; /* deque of batches */
    PyObject *lock;    /* FastLock */
} QueueObject;

static int
QueueObject_traverse(QueueObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->batches);
    Py_VISIT(self->lock);
    return 0;
}

static int
QueueObject_clear(QueueObject *self)
{
    Py_CLEAR(self->batches);
    Py_CLEAR(self->lock);
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *queues; /* list of QueueBase */
    PyObject *sticky; /* StickyBase */
    PyObject *available;
    Py_ssize_t num_partitions;
} TopicObject;

static int
TopicObject_traverse(TopicObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->queues);
    Py_VISIT(self->sticky);
    Py_VISIT(self->available);
    return 0;
}

static int
TopicObject_clear(TopicObject *self)
{
    Py_CLEAR(self->queues);
    Py_CLEAR(self->sticky);
    Py_CLEAR(self->available);
    return 0;
}

typedef struct {
    PyObject_HEAD
    Py_ssize_t current;
    Py_ssize_t produced_bytes;
    Py_ssize_t batch_size;
} StickyObject;

typedef struct {
    PyObject_HEAD
    PyObject *batch;
    Py_ssize_t index;
    long long timestamp;
    Py_ssize_t key_size;
    Py_ssize_t value_size;
} FutureObject;

static int
FutureObject_traverse(FutureObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->batch);
    return 0;
}

static int
FutureObject_clear(FutureObject *self)
{
    Py_CLEAR(self->batch);
    return 0;
}

#define DEALLOC(T)                                                                                 \
    static void T##_dealloc(T *self)                                                               \
    {                                                                                              \
        PyTypeObject *tp = Py_TYPE(self);                                                          \
        PyObject_GC_UnTrack(self);                                                                 \
        T##_clear(self);                                                                           \
        tp->tp_free((PyObject *)self);                                                             \
    }

DEALLOC(BatchObject)
DEALLOC(QueueObject)
DEALLOC(TopicObject)

static void
StickyObject_dealloc(StickyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (PyType_IS_GC(tp))
        PyObject_GC_UnTrack(self);
    tp->tp_free((PyObject *)self); /* (a heap subclass's type is released by subtype_dealloc) */
}

static PyObject *
sticky_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    StickyObject *self = (StickyObject *)type->tp_alloc(type, 0);
    if (self) {
        self->current = -1;
        self->batch_size = 1;
    }
    return (PyObject *)self;
}

/* RecordFuture and AsyncRecordFuture are C types (one is made per record: a freelist
 * and no heap-type machinery keep that cheap); their methods are Python functions
 * that kafkalite.producer.futures installs with install_methods(). */
static PyTypeObject FutureType, AsyncFutureType;

#ifndef Py_GIL_DISABLED
#define FUTURE_FREELIST 512
static FutureObject *future_freelist[FUTURE_FREELIST];
static int future_nfree = 0;
#endif

/* A new, untracked future of `type` with batch = NULL. */
static inline FutureObject *
future_alloc(PyTypeObject *type)
{
#ifdef FUTURE_FREELIST
    if (future_nfree > 0) {
        FutureObject *f = future_freelist[--future_nfree];
        PyObject_Init((PyObject *)f, type);
        f->batch = NULL;
        return f;
    }
#endif
    FutureObject *f = PyObject_GC_New(FutureObject, type);
    if (f)
        f->batch = NULL;
    return f;
}

static void
FutureObject_dealloc(FutureObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->batch);
#ifdef FUTURE_FREELIST
    if (future_nfree < FUTURE_FREELIST) {
        future_freelist[future_nfree++] = self;
        return;
    }
#endif
    PyObject_GC_Del(self);
}

/* __repr__ and __await__ are Python methods "_repr" and "_await" (slots of static
 * types cannot be assigned from Python). */
static PyObject *str_repr_method, *str_await_method;

static PyObject *
future_repr(PyObject *self)
{
    return PyObject_CallMethodNoArgs(self, str_repr_method);
}

static PyObject *
future_await(PyObject *self)
{
    return PyObject_CallMethodNoArgs(self, str_await_method);
}

static PyAsyncMethods future_async = {.am_await = future_await};

static PyObject *
future_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *batch;
    Py_ssize_t index, key_size, value_size;
    long long timestamp;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "takes (batch, index, timestamp, key_size, value_size)");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnLnn", &batch, &index, &timestamp, &key_size, &value_size))
        return NULL;
    FutureObject *self = future_alloc(type);
    if (!self)
        return NULL;
    Py_INCREF(batch);
    self->batch = batch;
    self->index = index;
    self->timestamp = timestamp;
    self->key_size = key_size;
    self->value_size = value_size;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyMemberDef batch_members[] = {
    {"builder", T_OBJECT_EX, offsetof(BatchObject, builder), 0, NULL},
    {"callbacks", T_OBJECT, offsetof(BatchObject, callbacks), 0, NULL},
    {"closed", T_BOOL, offsetof(BatchObject, closed), 0, NULL},
    {"done", T_BOOL, offsetof(BatchObject, done), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef queue_members[] = {
    {"batches", T_OBJECT_EX, offsetof(QueueObject, batches), 0, NULL},
    {"lock", T_OBJECT_EX, offsetof(QueueObject, lock), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef topic_members[] = {
    {"queues", T_OBJECT_EX, offsetof(TopicObject, queues), 0, NULL},
    {"sticky", T_OBJECT_EX, offsetof(TopicObject, sticky), 0, NULL},
    {"available", T_OBJECT_EX, offsetof(TopicObject, available), 0, NULL},
    {"num_partitions", T_PYSSIZET, offsetof(TopicObject, num_partitions), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef sticky_members[] = {
    {"current", T_PYSSIZET, offsetof(StickyObject, current), 0, NULL},
    {"produced_bytes", T_PYSSIZET, offsetof(StickyObject, produced_bytes), 0, NULL},
    {"batch_size", T_PYSSIZET, offsetof(StickyObject, batch_size), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMemberDef future_members[] = {
    {"_batch", T_OBJECT_EX, offsetof(FutureObject, batch), 0, NULL},
    {"_index", T_PYSSIZET, offsetof(FutureObject, index), 0, NULL},
    {"_timestamp", T_LONGLONG, offsetof(FutureObject, timestamp), 0, NULL},
    {"_key_size", T_PYSSIZET, offsetof(FutureObject, key_size), 0, NULL},
    {"_value_size", T_PYSSIZET, offsetof(FutureObject, value_size), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

#define GC_BASE(NAME, T, MEMBERS, DOC)                                                             \
    {                                                                                              \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups." NAME,                    \
        .tp_basicsize = sizeof(T), .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, \
        .tp_doc = DOC, .tp_new = PyType_GenericNew, .tp_traverse = (traverseproc)T##_traverse,     \
        .tp_clear = (inquiry)T##_clear, .tp_dealloc = (destructor)T##_dealloc, .tp_members = MEMBERS, \
    }

static PyTypeObject BatchType = GC_BASE("BatchBase", BatchObject, batch_members, "Base of ProducerBatch.");
static PyTypeObject QueueType = GC_BASE("QueueBase", QueueObject, queue_members, "Base of PartitionQueue.");
static PyTypeObject TopicType = GC_BASE("TopicBase", TopicObject, topic_members, "Base of TopicState.");
static PyTypeObject FutureType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite.producer.futures.RecordFuture",
    .tp_basicsize = sizeof(FutureObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The outcome of one send(): a RecordMetadata or an error (see kafkalite.producer.futures).",
    .tp_new = future_new,
    .tp_traverse = (traverseproc)FutureObject_traverse,
    .tp_clear = (inquiry)FutureObject_clear,
    .tp_dealloc = (destructor)FutureObject_dealloc,
    .tp_members = future_members,
    .tp_repr = future_repr,
};
static PyTypeObject AsyncFutureType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite.producer.futures.AsyncRecordFuture",
    .tp_basicsize = sizeof(FutureObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The asyncio producer's future: await it for the RecordMetadata.",
    .tp_new = future_new,
    .tp_traverse = (traverseproc)FutureObject_traverse,
    .tp_clear = (inquiry)FutureObject_clear,
    .tp_dealloc = (destructor)FutureObject_dealloc,
    .tp_as_async = &future_async,
    .tp_base = &FutureType,
};

/* install_methods(type, namespace): put a Python class body's functions, properties
 * and constants into RecordFuture / AsyncRecordFuture (once, at import). */
static PyObject *
install_methods(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyType_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "install_methods(type, dict)");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    if (type != &FutureType && type != &AsyncFutureType) {
        PyErr_SetString(PyExc_TypeError, "install_methods is for RecordFuture and AsyncRecordFuture");
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(args[1], &pos, &key, &value)) {
        if (!PyUnicode_Check(key))
            continue;
        /* The class machinery's own entries stay the C type's. */
        if (PyUnicode_CompareWithASCIIString(key, "__dict__") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "__weakref__") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "__slots__") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "__module__") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "__qualname__") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "__annotations__") == 0)
            continue;
        if (PyDict_SetItem(type->tp_dict, key, value) < 0)
            return NULL;
    }
    PyType_Modified(type);
    Py_RETURN_NONE;
}

static PyMethodDef produce_functions[] = {
    {"install_methods", (PyCFunction)(void (*)(void))install_methods, METH_FASTCALL,
     "install_methods(type, namespace): give RecordFuture / AsyncRecordFuture their Python methods"},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject StickyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups.StickyBase",
    .tp_basicsize = sizeof(StickyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Base of StickyPartitioner.",
    .tp_new = sticky_new,
    .tp_dealloc = (destructor)StickyObject_dealloc,
    .tp_members = sticky_members,
};

/* ------------------------------------------------------------------ Appender */

typedef struct {
    PyObject_HEAD
    PyObject *topics;     /* dict: topic -> TopicBase */
    PyObject *future_cls; /* RecordFuture or AsyncRecordFuture */
    Py_ssize_t batch_size;
    Py_ssize_t size_threshold; /* key + value sizes at or above this take the general path */
    PyObject *last_topic;      /* the topic str of the last call and its TopicBase (a */
    PyObject *last_state;      /* topic's state object never changes once created) */
    char enabled;
} AppenderObject;

static PyObject *str_update;

static int
appender_init(AppenderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"topics", "future_cls", "batch_size", "size_threshold", NULL};
    PyObject *topics, *future_cls;
    Py_ssize_t batch_size, threshold;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!nn:Appender", kwlist, &PyDict_Type, &topics,
                                     &PyType_Type, &future_cls, &batch_size, &threshold))
        return -1;
    if ((PyTypeObject *)future_cls != &FutureType && (PyTypeObject *)future_cls != &AsyncFutureType) {
        PyErr_SetString(PyExc_TypeError, "future_cls must be RecordFuture or AsyncRecordFuture");
        return -1;
    }
    Py_INCREF(topics);
    Py_XSETREF(self->topics, topics);
    Py_INCREF(future_cls);
    Py_XSETREF(self->future_cls, future_cls);
    self->batch_size = batch_size > 0 ? batch_size : 1;
    self->size_threshold = threshold;
    self->enabled = 1;
    return 0;
}

static int
AppenderObject_traverse(AppenderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->topics);
    Py_VISIT(self->future_cls);
    Py_VISIT(self->last_topic);
    Py_VISIT(self->last_state);
    return 0;
}

static int
AppenderObject_clear(AppenderObject *self)
{
    Py_CLEAR(self->topics);
    Py_CLEAR(self->future_cls);
    Py_CLEAR(self->last_topic);
    Py_CLEAR(self->last_state);
    return 0;
}

DEALLOC(AppenderObject)

/* Where a record went: its batch (borrowed from the queue, kept alive by the caller's
 * reference in `batch`) and index; `appended` = encoded bytes. */
typedef struct {
    PyObject *batch; /* new reference */
    Py_ssize_t index;
    Py_ssize_t appended;
} placed_t;

/* Switching is rare (once per batch.size bytes): StickyPartitioner.update does it. The
 * record is already appended, so a failure here is reported, not raised. */
static void
sticky_switch(StickyObject *sticky, TopicObject *state, Py_ssize_t p, Py_ssize_t appended, int full, Py_ssize_t n)
{
    PyObject *args[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    args[0] = (PyObject *)sticky;
    args[1] = PyLong_FromSsize_t(p);
    args[2] = PyLong_FromSsize_t(appended);
    args[3] = PyBool_FromLong(full);
    args[4] = state->available ? state->available : Py_None;
    Py_INCREF(args[4]);
    args[5] = PyLong_FromSsize_t(n);
    PyObject *r = NULL;
    if (args[1] && args[2] && args[5])
        r = PyObject_VectorcallMethod(str_update, args, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (!r)
        PyErr_WriteUnraisable((PyObject *)sticky);
    Py_XDECREF(r);
    for (int i = 1; i < 6; i++)
        Py_XDECREF(args[i]);
}

/* Append one record to its partition's open batch if that is the common case.
 * Returns 1 (placed), 0 (take the general path; nothing changed), -1 (error). */
static int
append_one(AppenderObject *self, TopicObject *state, PyObject *key, PyObject *value, PyObject *partition,
           int64_t ts, PyObject *callback, PyObject **future_out, placed_t *placed)
{
    Py_ssize_t klen, vlen;
    if (key == Py_None)
        klen = -1;
    else if (PyBytes_CheckExact(key))
        klen = PyBytes_GET_SIZE(key);
    else
        return 0;
    if (value == Py_None)
        vlen = -1;
    else if (PyBytes_CheckExact(value))
        vlen = PyBytes_GET_SIZE(value);
    else
        return 0;
    if (klen + vlen >= self->size_threshold)
        return 0; /* the general path checks max.request.size / buffer.memory */
    Py_ssize_t n = state->num_partitions, p;
    StickyObject *sticky = NULL;
    if (partition == Py_None) {
        if (key != Py_None) {
            if (n <= 0)
                return 0;
            uint32_t h = kl_murmur2(PyBytes_AS_STRING(key), klen);
            p = (Py_ssize_t)((h & 0x7FFFFFFFu) % (uint32_t)n);
        } else {
            if (!state->sticky || !IS_A(state->sticky, &StickyType))
                return 0;
            sticky = (StickyObject *)state->sticky;
            p = sticky->current;
            /* Due to switch (KIP-794): the general path decides where to. */
            if (p < 0 || p >= n || sticky->produced_bytes >= 2 * self->batch_size)
                return 0;
        }
    } else {
        if (!PyLong_CheckExact(partition))
            return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(partition, &overflow);
        if (overflow || v < 0 || v >= n)
            return 0;
        p = (Py_ssize_t)v;
    }
    PyObject *queues = state->queues;
    if (!queues || !PyList_CheckExact(queues) || p >= PyList_GET_SIZE(queues))
        return 0;
    PyObject *pqo = PyList_GET_ITEM(queues, p);
    if (!IS_A(pqo, &QueueType))
        return 0;
    QueueObject *pq = (QueueObject *)pqo;
    if (!pq->lock || Py_TYPE(pq->lock) != &LockType || !pq->batches)
        return 0;
    LockObject *lock = (LockObject *)pq->lock;
    if (!lock_try(lock))
        return 0; /* someone holds it (the sender draining): wait in the general path */
    int result = 0;
    PyObject *last = NULL, *future = NULL;
    Py_ssize_t size = PyObject_Length(pq->batches);
    if (size <= 0) {
        if (size < 0)
            result = -1;
        goto unlock;
    }
    last = PySequence_GetItem(pq->batches, size - 1);
    if (!last) {
        result = -1;
        goto unlock;
    }
    if (!IS_A(last, &BatchType))
        goto unlock;
    BatchObject *batch = (BatchObject *)last;
    if (batch->closed || batch->done || !batch->builder || !IS_A(batch->builder, &BuilderType))
        goto unlock;
    BuilderObject *builder = (BuilderObject *)batch->builder;
    Py_ssize_t before = builder->buf && PyByteArray_Check(builder->buf) ? PyByteArray_GET_SIZE(builder->buf) : 0;
    Py_ssize_t index = builder_add(builder, ts, key, value, Py_None, 1);
    if (index == -1)
        goto unlock; /* full: the general path closes it and starts the next batch */
    if (index == -2) {
        result = -1;
        goto unlock;
    }
    Py_ssize_t appended = PyByteArray_GET_SIZE(builder->buf) - before;
    if (future_out) {
        FutureObject *f = future_alloc((PyTypeObject *)self->future_cls);
        if (!f) {
            result = -1; /* the record stays in the batch without a future: as if sent without one */
            goto unlock;
        }
        Py_INCREF(last);
        f->batch = last;
        f->index = index;
        f->timestamp = ts;
        f->key_size = klen;
        f->value_size = vlen;
        PyObject_GC_Track(f);
        future = (PyObject *)f;
        if (callback != Py_None) {
            PyObject *entry = PyTuple_New(3);
            if (!entry) {
                result = -1;
                goto unlock;
            }
            Py_INCREF(future);
            PyTuple_SET_ITEM(entry, 0, future);
            Py_INCREF(callback);
            PyTuple_SET_ITEM(entry, 1, callback);
            PyTuple_SET_ITEM(entry, 2, PyLong_FromLong(0)); /* CB_SEND; small int, cannot fail */
            if (batch->callbacks == NULL || batch->callbacks == Py_None) {
                PyObject *list = PyList_New(1);
                if (!list) {
                    Py_DECREF(entry);
                    result = -1;
                    goto unlock;
                }
                PyList_SET_ITEM(list, 0, entry);
                Py_XSETREF(batch->callbacks, list);
            } else {
                int r = PyList_Append(batch->callbacks, entry);
                Py_DECREF(entry);
                if (r < 0) {
                    result = -1;
                    goto unlock;
                }
            }
        }
    }
    placed->index = index;
    placed->appended = appended;
    result = 1;
unlock:
    lock_release_c(lock);
    if (result == 1) {
        placed->batch = last;
        if (future_out)
            *future_out = future;
        if (sticky) {
            /* StickyPartitioner.update: count the bytes; switch once batch.size was
             * produced and the batch is full, or twice batch.size regardless. */
            Py_ssize_t produced = sticky->produced_bytes + appended;
            Py_ssize_t bs = sticky->batch_size;
            int full = builder_is_full((BuilderObject *)((BatchObject *)last)->builder);
            if ((produced >= bs && full) || produced >= 2 * bs) {
                sticky_switch(sticky, state, p, appended, full, n);
            } else if (sticky->current == p) {
                sticky->produced_bytes = produced;
            }
        }
        return 1;
    }
    Py_XDECREF(future);
    Py_XDECREF(last);
    return result;
}

/* The timestamp argument: None (now), or a non-negative exact int. 0 = general path. */
static inline int
get_timestamp(PyObject *obj, int64_t *ts)
{
    if (obj == Py_None) {
        *ts = now_ms();
        return 1;
    }
    if (!PyLong_CheckExact(obj))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || v < 0)
        return 0;
    *ts = v;
    return 1;
}

static inline TopicObject *
get_topic(AppenderObject *self, PyObject *topic)
{
    if (!self->enabled || !self->topics)
        return NULL;
    if (topic == self->last_topic)
        return (TopicObject *)self->last_state;
    PyObject *state = PyDict_GetItemWithError(self->topics, topic);
    if (!state || !IS_A(state, &TopicType))
        return NULL;
    Py_INCREF(topic);
    Py_XSETREF(self->last_topic, topic);
    Py_INCREF(state);
    Py_XSETREF(self->last_state, state);
    return (TopicObject *)state;
}

/* append(topic, key, value, partition, timestamp, callback) -> future or None */
static PyObject *
appender_append(AppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "append(topic, key, value, partition, timestamp, callback)");
        return NULL;
    }
    TopicObject *state = get_topic(self, args[0]);
    if (!state) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    int64_t ts;
    if (!get_timestamp(args[4], &ts))
        Py_RETURN_NONE;
    PyObject *future = NULL;
    placed_t placed;
    Py_INCREF(state);
    int r = append_one(self, state, args[1], args[2], args[3], ts, args[5], &future, &placed);
    Py_DECREF(state);
    if (r < 0)
        return NULL;
    if (r == 0)
        Py_RETURN_NONE;
    Py_DECREF(placed.batch);
    return future;
}

/* append_many(topic, keys, values, start, partition, timestamp, spans) -> next index
 *
 * Appends values[start:] (keys None, or a sequence as long as values) without futures
 * and returns the index of the first record the general path must take (len(values)
 * when all were appended). For every run of records it appends to one batch with
 * consecutive indexes, `spans` (a list) gets (batch, index in the batch of the run's
 * first record, index in values of that record). */
static PyObject *
appender_append_many(AppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "append_many(topic, keys, values, start, partition, timestamp, spans)");
        return NULL;
    }
    PyObject *keys = args[1], *spans = args[6];
    if (!PyList_Check(spans)) {
        PyErr_SetString(PyExc_TypeError, "spans must be a list");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    PyObject *values = PySequence_Fast(args[2], "values must be a sequence");
    if (!values)
        return NULL;
    PyObject *keyseq = NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(values), i = start < 0 ? 0 : start;
    PyObject *result = NULL, *last_batch = NULL;
    Py_ssize_t last_index = -2;
    if (keys != Py_None) {
        keyseq = PySequence_Fast(keys, "keys must be None or a sequence");
        if (!keyseq)
            goto done;
        if (PySequence_Fast_GET_SIZE(keyseq) != count) {
            PyErr_Format(PyExc_ValueError, "keys has %zd items but values has %zd",
                         PySequence_Fast_GET_SIZE(keyseq), count);
            goto done;
        }
    }
    TopicObject *state = get_topic(self, args[0]);
    if (!state) {
        if (PyErr_Occurred())
            goto done;
        result = PyLong_FromSsize_t(i);
        goto done;
    }
    Py_INCREF(state);
    int64_t ts;
    if (!get_timestamp(args[5], &ts)) {
        Py_DECREF(state);
        result = PyLong_FromSsize_t(i);
        goto done;
    }
    for (; i < count; i++) {
        /* Re-read: a switch of the sticky partition may run Python code. */
        PyObject *value = PySequence_Fast_ITEMS(values)[i];
        PyObject *key = keyseq ? PySequence_Fast_ITEMS(keyseq)[i] : Py_None;
        placed_t placed;
        int r = append_one(self, state, key, value, args[4], ts, Py_None, NULL, &placed);
        if (r < 0) {
            Py_DECREF(state);
            goto done;
        }
        if (r == 0)
            break;
        if (placed.batch != last_batch || placed.index != last_index + 1) {
            PyObject *span = Py_BuildValue("(Onn)", placed.batch, placed.index, i);
            if (!span || PyList_Append(spans, span) < 0) {
                Py_XDECREF(span);
                Py_DECREF(placed.batch);
                Py_DECREF(state);
                goto done; /* (out of memory: the record is in the batch, the error says so) */
            }
            Py_DECREF(span);
            Py_XSETREF(last_batch, placed.batch);
        } else {
            Py_DECREF(placed.batch);
        }
        last_index = placed.index;
        if (!self->enabled)
            { i++; break; }
    }
    Py_DECREF(state);
    result = PyLong_FromSsize_t(i);
done:
    Py_XDECREF(last_batch);
    Py_XDECREF(keyseq);
    Py_DECREF(values);
    return result;
}

static PyMethodDef appender_methods[] = {
    {"append", (PyCFunction)(void (*)(void))appender_append, METH_FASTCALL,
     "append(topic, key, value, partition, timestamp, callback) -> RecordFuture, or None for the general path"},
    {"append_many", (PyCFunction)(void (*)(void))appender_append_many, METH_FASTCALL,
     "append_many(topic, keys, values, start, partition, timestamp, spans) -> index of the first record not "
     "appended"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef appender_members[] = {
    {"enabled", T_BOOL, offsetof(AppenderObject, enabled), 0, "False: every record takes the general path"},
    {"batch_size", T_PYSSIZET, offsetof(AppenderObject, batch_size), 0, NULL},
    {"size_threshold", T_PYSSIZET, offsetof(AppenderObject, size_threshold), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups.Appender",
    .tp_basicsize = sizeof(AppenderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Appender(topics, future_cls, batch_size, size_threshold): send()'s common case in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)appender_init,
    .tp_traverse = (traverseproc)AppenderObject_traverse,
    .tp_clear = (inquiry)AppenderObject_clear,
    .tp_dealloc = (destructor)AppenderObject_dealloc,
    .tp_methods = appender_methods,
    .tp_members = appender_members,
};

/* ------------------------------------------------------------------ SendFunction
 *
 * Producer.send as one C call: SendFunction(appender, producer, send) is installed
 * as the producer's `send` attribute. It takes send()'s arguments (positional or by
 * keyword), appends through the Appender, and hands every call it does not complete
 * (headers, a new batch, an unknown topic, wrong types, bad keywords ...) to the
 * Python method `send(producer, ...)` unchanged, so behaviour and errors are the
 * method's. It holds the producer weakly: no reference cycle, so a dropped producer
 * is finalized at once, as before. */

typedef struct {
    PyObject_HEAD
    AppenderObject *appender;
    PyObject *owner; /* weakref to the producer */
    PyObject *func;  /* the Python function send(self, topic, value, key, partition, timestamp, headers, callback) */
    vectorcallfunc vectorcall;
} SendObject;

static PyTypeObject SendType;
static PyObject *send_kwnames[7]; /* topic, value, key, partition, timestamp, headers, callback */

/* The producer behind the weakref, as a new reference: 1 when it is alive, 0 (and *owner
 * NULL) when it is gone, -1 with an exception set. 3.13 deprecates PyWeakref_GetObject (it
 * hands back a borrowed reference that another thread could free) for PyWeakref_GetRef. */
static int
send_owner(SendObject *self, PyObject **owner)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyWeakref_GetRef(self->owner, owner);
#else
    PyObject *borrowed = PyWeakref_GetObject(self->owner);
    *owner = NULL;
    if (borrowed == NULL)
        return -1;
    if (borrowed == Py_None)
        return 0;
    *owner = Py_NewRef(borrowed);
    return 1;
#endif
}

static PyObject *
send_fallback(SendObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *owner;
    int alive = send_owner(self, &owner);
    if (alive < 0)
        return NULL;
    if (alive == 0) {
        PyErr_SetString(PyExc_ReferenceError, "the producer no longer exists");
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[17], **stack = small;
    if (total + 1 > 17) {
        stack = PyMem_Malloc((total + 1) * sizeof(PyObject *));
        if (!stack) {
            Py_DECREF(owner);
            return PyErr_NoMemory();
        }
    }
    stack[0] = owner;
    for (Py_ssize_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(self->func, stack, nargs + 1, kwnames);
    Py_DECREF(owner);
    if (stack != small)
        PyMem_Free(stack);
    return r;
}

static PyObject *
send_vectorcall(SendObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *a[7] = {NULL, Py_None, Py_None, Py_None, Py_None, Py_None, Py_None};
    if (nargs > 7)
        goto fallback;
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    if (kwnames) {
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            int slot = -1;
            for (int j = 0; j < 7; j++) {
                if (name == send_kwnames[j]) {
                    slot = j;
                    break;
                }
            }
            if (slot < 0) {
                for (int j = 0; j < 7; j++) {
                    if (PyUnicode_Check(name) && PyUnicode_Compare(name, send_kwnames[j]) == 0) {
                        slot = j;
                        break;
                    }
                }
            }
            if (slot < nargs) /* unknown, or given twice: the method raises the TypeError */
                goto fallback;
            a[slot] = args[nargs + k];
        }
    }
    if (a[0] == NULL || a[5] != Py_None)
        goto fallback;
    TopicObject *state = get_topic(self->appender, a[0]);
    if (!state) {
        if (PyErr_Occurred())
            return NULL;
        goto fallback;
    }
    int64_t ts;
    if (!get_timestamp(a[4], &ts))
        goto fallback;
    PyObject *future = NULL;
    placed_t placed;
    Py_INCREF(state);
    int r = append_one(self->appender, state, a[2], a[1], a[3], ts, a[6], &future, &placed);
    Py_DECREF(state);
    if (r < 0)
        return NULL;
    if (r > 0) {
        Py_DECREF(placed.batch);
        return future;
    }
fallback:
    return send_fallback(self, args, nargsf, kwnames);
}

static PyObject *
send_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *appender, *owner, *func;
    if (!PyArg_ParseTuple(args, "O!OO:SendFunction", &AppenderType, &appender, &owner, &func))
        return NULL;
    SendObject *self = (SendObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->owner = PyWeakref_NewRef(owner, NULL);
    if (!self->owner) {
        Py_DECREF(self);
        return NULL;
    }
    Py_INCREF(appender);
    self->appender = (AppenderObject *)appender;
    Py_INCREF(func);
    self->func = func;
    self->vectorcall = (vectorcallfunc)send_vectorcall;
    return (PyObject *)self;
}

static int
SendObject_traverse(SendObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->appender);
    Py_VISIT(self->owner);
    Py_VISIT(self->func);
    return 0;
}

static int
SendObject_clear(SendObject *self)
{
    Py_CLEAR(self->appender);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->func);
    return 0;
}

DEALLOC(SendObject)

/* The bound Python method (so help(), inspect.signature() and __doc__ show send's). */
static PyObject *
send_get_wrapped(SendObject *self, void *closure)
{
    PyObject *owner;
    int alive = send_owner(self, &owner);
    if (alive < 0)
        return NULL;
    if (alive == 0)
        return Py_NewRef(self->func);
    PyObject *method = PyMethod_New(self->func, owner);
    Py_DECREF(owner);
    return method;
}

static PyObject *
send_get_doc(SendObject *self, void *closure)
{
    return PyObject_GetAttrString(self->func, "__doc__");
}

static PyGetSetDef send_getset[] = {
    {"__wrapped__", (getter)send_get_wrapped, NULL, "the Python method", NULL},
    {"__doc__", (getter)send_get_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SendType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafkalite._speedups.SendFunction",
    .tp_basicsize = sizeof(SendObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "SendFunction(appender, producer, send): producer.send's common case in one C call.",
    .tp_new = send_new,
    .tp_traverse = (traverseproc)SendObject_traverse,
    .tp_clear = (inquiry)SendObject_clear,
    .tp_dealloc = (destructor)SendObject_dealloc,
    .tp_vectorcall_offset = offsetof(SendObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getset = send_getset,
};

int
kl_produce_init(PyObject *module)
{
    str_update = PyUnicode_InternFromString("update");
    if (!str_update)
        return -1;
    const char *names[7] = {"topic", "value", "key", "partition", "timestamp", "headers", "callback"};
    for (int i = 0; i < 7; i++) {
        send_kwnames[i] = PyUnicode_InternFromString(names[i]);
        if (!send_kwnames[i])
            return -1;
    }
    str_repr_method = PyUnicode_InternFromString("_repr");
    str_await_method = PyUnicode_InternFromString("_await");
    if (!str_repr_method || !str_await_method)
        return -1;
    if (PyModule_AddFunctions(module, produce_functions) < 0)
        return -1;
    struct {
        const char *name;
        PyTypeObject *type;
    } types[] = {
        {"BuilderBase", &BuilderType}, {"FastLock", &LockType},   {"BatchBase", &BatchType},
        {"QueueBase", &QueueType},     {"TopicBase", &TopicType}, {"StickyBase", &StickyType},
        {"RecordFuture", &FutureType}, {"AsyncRecordFuture", &AsyncFutureType},
        {"Appender", &AppenderType},   {"SendFunction", &SendType},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyType_Ready(types[i].type) < 0)
            return -1;
        Py_INCREF(types[i].type);
        if (PyModule_AddObject(module, types[i].name, (PyObject *)types[i].type) < 0) {
            Py_DECREF(types[i].type);
            return -1;
        }
    }
    return 0;
}
