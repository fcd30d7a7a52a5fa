/*
 * The Python side of _chunk_bpe that is not the ChunkBPE type nor the decoder's (decode_table.c,
 * stream.c): PlainArrayCall (numpy arrays made
 * with numpy's C API, the only file that includes it), batch_grains (for tests), the module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/decode.h"
#include "encode/encode.h"

/* PlainArrayCall(kernel, scanner, allowed_special, disallowed_special): the common call of
 * Tokenizer.encode_to_numpy (one document, special-token arguments that need no handling) in one C
 * call. Called as f(text, allowed_special, disallowed_special, num_threads), with the same two
 * argument objects it was made for, one thread and a str, it encodes text as encode_text_array
 * does and returns the ids as a uint32 numpy array over that buffer, made with numpy's C API
 * (numpy.frombuffer's argument parsing costs more than encoding a short document); otherwise, or
 * for a text with a lone surrogate, None (the caller takes its general path). Immutable: the
 * Tokenizer makes a new one when its special tokens change. numpy's C API is imported when the
 * first one is made (import hf_bbpe does not import numpy). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *kernel, *scanner, *allowed, *disallowed;
} PlainArrayCall;

static PyObject *PlainArrayCall_vectorcall(PlainArrayCall *self, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 4 || kwnames) {
        PyErr_SetString(PyExc_TypeError, "PlainArrayCall(text, allowed_special, disallowed_special, num_threads)");
        return NULL;
    }
    if (args[1] != self->allowed || args[2] != self->disallowed || !PyUnicode_Check(args[0]) ||
        !PyLong_CheckExact(args[3]) || PyLong_AsLong(args[3]) != 1)
        Py_RETURN_NONE;
    PyObject *call[2] = {args[0], self->scanner};
    PyObject *ids = encode_whole_text((ChunkBPE *)self->kernel, call, 2, 1);
    if (!ids || ids == Py_None) return ids;
    IdArray *a = (IdArray *)ids; /* the array's base: it frees the ids with the array */
    npy_intp dims[1] = {a->len};
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_UINT32), 1, dims, NULL, a->ids,
                                           NPY_ARRAY_CARRAY, NULL);
    if (!array || PyArray_SetBaseObject((PyArrayObject *)array, ids) < 0) {
        Py_XDECREF(array);
        Py_DECREF(ids);
        return NULL;
    }
    return array;
}

static PyObject *PlainArrayCall_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *kernel, *scanner, *allowed, *disallowed;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "PlainArrayCall takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OOO:PlainArrayCall", &ChunkBPEType, &kernel, &scanner, &allowed, &disallowed) ||
        !get_scanner(scanner))
        return NULL;
    if (!PyArray_API && _import_array() < 0) return NULL;
    PlainArrayCall *self = (PlainArrayCall *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = (vectorcallfunc)PlainArrayCall_vectorcall;
    self->kernel = Py_NewRef(kernel);
    self->scanner = Py_NewRef(scanner);
    self->allowed = Py_NewRef(allowed);
    self->disallowed = Py_NewRef(disallowed);
    return (PyObject *)self;
}

static void PlainArrayCall_dealloc(PlainArrayCall *self) {
    Py_XDECREF(self->kernel);
    Py_XDECREF(self->scanner);
    Py_XDECREF(self->allowed);
    Py_XDECREF(self->disallowed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject PlainArrayCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.encoding._chunk_bpe.PlainArrayCall",
    .tp_basicsize = sizeof(PlainArrayCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(PlainArrayCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_doc = "PlainArrayCall(kernel, scanner, allowed_special, disallowed_special): "
              "encode_to_numpy's common call in C; f(text, allowed_special, disallowed_special, num_threads) gives "
              "the array, or None when the call is not that one.",
    .tp_new = PlainArrayCall_new,
    .tp_dealloc = (destructor)PlainArrayCall_dealloc,
};

/* batch_grains(texts, scanner, num_threads): how encode_texts would cut this batch into grains (see
 * BATCH_GRAIN_BYTES), for tests: a list of (first text, end text, first byte, is a part); one
 * grain of every text when it would run on one thread. */
static PyObject *batch_grains(PyObject *module, PyObject *args) {
    PyObject *texts, *capsule;
    int num_threads;
    if (!PyArg_ParseTuple(args, "O!Oi", &PyList_Type, &texts, &capsule, &num_threads)) return NULL;
    const PretokScanner *scanner = get_scanner(capsule);
    if (!scanner) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(texts), nparts;
    PretokText *docs = malloc((size_t)(count + 1) * sizeof(PretokText));
    BatchGrain *grains = NULL;
    PartSync *syncs = NULL;
    PyObject *result = NULL;
    if (!docs) return PyErr_NoMemory();
    if (utf8_texts(texts, count, docs) < 0) goto done;
    int split;
    Py_ssize_t ngrains = batch_setup(scanner, docs, count, &num_threads, &split, &nparts);
    if (num_threads <= 1) {
        result = Py_BuildValue("[(nnnO)]", (Py_ssize_t)0, count, (Py_ssize_t)0, Py_False);
        goto done;
    }
    grains = malloc((size_t)ngrains * sizeof(BatchGrain));
    syncs = malloc((size_t)(nparts ? nparts : 1) * sizeof(PartSync));
    if (!grains || !syncs) { PyErr_NoMemory(); goto done; }
    batch_plan(scanner, docs, count, split, grains, syncs, &nparts);
    if (!(result = PyList_New(ngrains))) goto done;
    for (Py_ssize_t g = 0; g < ngrains; g++) {
        PyObject *item = Py_BuildValue("(nnnO)", grains[g].doc, grains[g].doc_end, grains[g].start,
                                       grains[g].sync ? Py_True : Py_False);
        if (!item) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, g, item);
    }
done:
    free(docs); free(grains); free(syncs);
    return result;
}

static PyMethodDef module_functions[] = {
    {"batch_grains", batch_grains, METH_VARARGS,
     "batch_grains(texts, scanner, num_threads): the grains encode_texts would cut the batch into: "
     "(first text, end text, first byte, is a part of a long text), for tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunk_bpe", "The chunk encoder's kernel in C (see hf_bbpe/chunk_encoder.py).", -1, module_functions,
};

PyMODINIT_FUNC PyInit__chunk_bpe(void) {
    if (PyType_Ready(&ChunkBPEType) < 0 || PyType_Ready(&IdArrayType) < 0 || PyType_Ready(&PlainArrayCallType) < 0 ||
        PyType_Ready(&TokenDecoderType) < 0 || PyType_Ready(&DecodeStreamType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "ChunkBPE", (PyObject *)&ChunkBPEType) < 0 ||
        PyModule_AddObjectRef(m, "PlainArrayCall", (PyObject *)&PlainArrayCallType) < 0 ||
        PyModule_AddObjectRef(m, "TokenDecoder", (PyObject *)&TokenDecoderType) < 0 ||
        PyModule_AddObjectRef(m, "DecodeStream", (PyObject *)&DecodeStreamType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
