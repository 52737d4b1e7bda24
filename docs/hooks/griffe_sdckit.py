"""Griffe extensions for the API pages (issue 33), named in mkdocs.yml.

* :class:`BareClassVar`: a class variable annotated with a bare ``ClassVar`` (``constraints:
  ClassVar = {...}`` in the methods) is not a dataclass field. Griffe (2.4) labels such an
  attribute both class- and instance-attribute, so its dataclass support listed ``constraints``,
  ``example``, ... among the parameters of every method's signature.
* :class:`SphinxRoles`: the docstrings cite other objects with Sphinx roles
  (``:func:`~sdckit.permutation.verify_linkage```), which Markdown would show as written; they
  become code spans (the last component with ``~``, as Sphinx shows them).
"""

from __future__ import annotations

import re
from typing import Any

try:
    import griffe
except ImportError:  # the tests check plain_roles without the docs extra
    griffe = None

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`([~!]?)([^`]+)`")


def plain_roles(text: str) -> str:
    """``:func:`~a.b.c``` -> ```c```; ``:class:`a.B``` -> ```a.B```."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) == '~' else m.group(2)}`", text)


if griffe is not None:
    class BareClassVar(griffe.Extension):
        def on_attribute_instance(self, *, attr: Any, **kwargs: Any) -> None:
            if str(attr.annotation) == "ClassVar":
                attr.labels.discard("instance-attribute")


    class SphinxRoles(griffe.Extension):
        def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
            if obj.docstring is not None:
                obj.docstring.value = plain_roles(obj.docstring.value)
