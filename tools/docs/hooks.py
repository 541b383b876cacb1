"""MkDocs hooks of the docs site (mkdocs.yml): docs/api/lua.md's reference is generated from the
rock's Lua sources (tools/docs/lua_api.py) where the page has its marker."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lua_api  # noqa: E402

MARKER = "<!-- lua-api: generated here by tools/docs/lua_api.py -->"


def on_page_markdown(markdown, page, **kwargs):
    if page.file.src_uri != "api/lua.md":
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/api/lua.md lost its marker {MARKER!r}")
    return markdown.replace(MARKER, lua_api.markdown(lua_api.reference()))
