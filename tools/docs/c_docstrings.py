"""The docstrings of redlease._core, read from its C sources (csrc/python): the method and
attribute tables (PyMethodDef, PyGetSetDef) and each type's tp_doc, as help() shows them. The
docs site's griffe extension (core_docstrings.py) puts them into the API reference;
tests/docs/test_site.py checks them against the compiled module."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = os.path.join(ROOT, "csrc", "python")

STRINGS = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
TABLE = re.compile(
    r"static\s+(?:const\s+)?Py(?:MethodDef|GetSetDef)\s+(\w+)\[\]\s*=\s*\{(.*?)\n\};", re.S)
ENTRY = re.compile(r'\{\s*"(\w+)",(.*?)\}\s*,?\s*(?=\{|$)', re.S)
TYPE = re.compile(r"PyTypeObject\s+\w+\s*=\s*\{(.*?)\n\};", re.S)
FIELD = re.compile(
    r"\.(tp_name|tp_doc|tp_methods|tp_getset|m_methods)\s*=\s*(.*?)(?=,\s*\n\s*\.|,?\s*$)", re.S)
MODULE = re.compile(r"PyModuleDef\s+\w+\s*=\s*\{(.*?)\n\};", re.S)
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def c_string(text):
    """The value of the C string literals in text, concatenated; None when there are none."""
    parts = STRINGS.findall(text)
    if not parts:
        return None
    joined = "".join(parts)
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), joined)


def without_signature(doc):
    """A docstring less the `name(args) -> result\\n--\\n\\n` text signature CPython strips."""
    head, sep, rest = doc.partition("\n--\n\n")
    return rest if sep and "(" in head else doc


def defaults(doc):
    """{parameter: default} of a docstring's text signature: "acquire(blocking=True, ...)"."""
    head, sep, _ = doc.partition("\n--\n\n")
    m = re.match(r"^\w+\(([^)]*)\)", head) if sep else None
    if not m:
        return {}
    pairs = (p.split("=", 1) for p in m.group(1).split(",") if "=" in p)
    return {k.strip(): v.strip() for k, v in pairs if v.strip() != "..."}


def tables(text):
    """{table name: {member: docstring}} of the PyMethodDef and PyGetSetDef tables in text."""
    out = {}
    for name, body in TABLE.findall(text):
        members = {}
        for member, rest in ENTRY.findall(body):
            doc = c_string(rest)
            if doc:
                members[member] = doc
        out[name] = members
    return out


def read_sources(folder=SOURCES):
    """{class name or "": {"": class docstring, member: docstring}} from the C sources; ""
    holds the module's own functions."""
    texts = []
    for f in sorted(os.listdir(folder)):
        if f.endswith(".c"):
            with open(os.path.join(folder, f)) as fh:
                texts.append(fh.read())
    all_tables = {}
    for text in texts:
        all_tables.update(tables(text))
    docs = {}
    for text in texts:
        for body in TYPE.findall(text):
            fields = dict(FIELD.findall(body))
            name = c_string(fields.get("tp_name", ""))
            if not name:
                continue
            entry = docs.setdefault(name.rsplit(".", 1)[-1], {})
            doc = c_string(fields.get("tp_doc", ""))
            if doc:
                entry[""] = doc
            for table in ("tp_methods", "tp_getset"):
                entry.update(all_tables.get(fields.get(table, "").strip(), {}))
        for body in MODULE.findall(text):
            fields = dict(FIELD.findall(body))
            docs.setdefault("", {}).update(all_tables.get(fields.get("m_methods", "").strip(), {}))
    return docs
