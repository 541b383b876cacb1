"""A small template language for bench/report_template.md (a subset of Mustache):

    {{name}}                  the value of `name` (a missing name is an error)
    {{#name}} ... {{/name}}   the lines between, when `name` is true (each tag on a line of its own)
    {{^name}} ... {{/name}}   the lines between, when `name` is false
    {{! note }}               a line for the template's readers, left out of the page
"""

import re

COMMENT = re.compile(r"^\{\{!.*?\}\}\n", re.M | re.S)
SECTION = re.compile(r"^\{\{([#^])(\w+)\}\}\n(.*?)^\{\{/\2\}\}\n", re.M | re.S)
FIELD = re.compile(r"\{\{(\w+)\}\}")


def _sections(text, values):
    def one(m):
        kind, name, body = m.groups()
        return _sections(body, values) if bool(values[name]) == (kind == "#") else ""
    return SECTION.sub(one, text)


def fill(text, values):
    """The template `text` with its sections and fields filled from `values`."""
    text = _sections(COMMENT.sub("", text), values)
    return FIELD.sub(lambda m: str(values[m.group(1)]), text)
