/* Take the JSON trees the store keeps out of the cyclic garbage collector's sight.
 *
 * CPython's collector scans every container allocated since its last young collection that is
 * still alive. The store keeps a decoded tree of dicts and lists per current object version
 * (about 50-100 containers a queued Job); under a burst of 15,000 Jobs those trees were about
 * two fifths of what each young collection scanned, in pauses of 0.4-0.5 s that stop every
 * thread of the control plane. A tree decoded from JSON holds only dicts, lists, strings,
 * numbers, booleans and None, so it cannot be part of a reference cycle: the collector has
 * nothing to find there. The interpreter itself untracks a dict of atomic values the first time
 * a collection sees it; this does the same for the whole tree when the store takes it, before
 * any collection pays for the look.
 *
 * Safe by CPython's rules: an untracked container is freed by reference counting as before; a
 * dict given a tracked value later is tracked again by the interpreter; an object reachable
 * from an untracked container counts as referenced from outside, so it is never freed early
 * (the worst a cycle built through a stored list could do is outlive its last use, and nobody
 * may change a stored object). Only exact dicts and lists are touched, to a bounded depth.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Deeper than any object the API accepts (orjson refuses JSON nested past 1,024); below it
 * the containers stay tracked, which is only slower. */
#define MAX_DEPTH 512

/* Whether ``obj`` is a container the walk looks into: an exact dict or list. A type
 * comparison, where most values of a tree are strings and numbers. */
static inline int is_json_container(PyObject *obj)
{
    return PyDict_CheckExact(obj) || PyList_CheckExact(obj);
}

/* ``obj``: an exact dict or list. */
static void untrack_tree(PyObject *obj, int depth)
{
    /* An untracked dict or list holds no tracked container: CPython creates a dict of atomic
     * values untracked and tracks it once a container goes in, and a list is tracked from
     * birth unless walked here already. So the walk stops there, which also keeps it linear
     * where a tree shares a subtree. */
    if (depth > MAX_DEPTH || !PyObject_GC_IsTracked(obj)) {
        return;
    }
    PyObject_GC_UnTrack(obj);
    if (PyDict_CheckExact(obj)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(obj, &pos, &key, &value)) {
            if (is_json_container(value)) {
                untrack_tree(value, depth + 1);
            }
        }
    }
    else {
        Py_ssize_t n = PyList_GET_SIZE(obj);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PyList_GET_ITEM(obj, i);
            if (is_json_container(item)) {
                untrack_tree(item, depth + 1);
            }
        }
    }
}

static PyObject *untrack_json(PyObject *module, PyObject *obj)
{
    if (is_json_container(obj)) {
        untrack_tree(obj, 0);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"untrack_json", untrack_json, METH_O,
     "untrack_json(obj, /)\n--\n\n"
     "Untrack every dict and list of the JSON tree ``obj`` from the cyclic garbage collector."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "kubehpc.store._untrack",
    "The JSON trees the store keeps, out of the cyclic garbage collector's sight.",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__untrack(void)
{
    return PyModule_Create(&module);
}
