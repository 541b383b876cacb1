"""A griffe extension for the docs site (mkdocs.yml): the docstrings of redlease._core.

redlease._core is C (csrc/python). Its type stubs (python/redlease/_core.pyi) give the API
reference its signatures; its docstrings live in the C sources, read by c_docstrings.py, so that
the reference shows what help() shows, without a compiled module and without a second copy.
A docstring written in the stub wins; a default the stub writes as `...` is taken from the text
signature ("acquire(blocking=True, ...)")."""

import os
import sys

import griffe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from c_docstrings import defaults, read_sources, without_signature  # noqa: E402


def fill(obj, doc):
    """The docstring where the stub has none; the defaults the stub writes as `...`."""
    if not doc:
        return
    if not (obj.docstring and obj.docstring.value.strip()):
        obj.docstring = griffe.Docstring(without_signature(doc), parent=obj)
    if obj.is_function:
        for name, value in defaults(doc).items():
            param = obj.parameters[name] if name in obj.parameters else None
            if param is not None and str(param.default) == "...":
                param.default = value


class CoreDocstrings(griffe.Extension):
    """Fills the docstrings that redlease._core's stub leaves out from the C sources."""

    def on_package(self, *, pkg, **kwargs):
        if pkg.name != "redlease" or "_core" not in pkg.members:
            return
        core = pkg.members["_core"]
        for cls, members in read_sources().items():
            target = core if cls == "" else core.members.get(cls)
            if target is None or target.is_alias:
                continue
            fill(target, members.get(""))
            for name, doc in members.items():
                member = target.members.get(name) if name else None
                if member is not None and not member.is_alias:
                    fill(member, doc)
