"""Griffe extension for the API pages (issue 33): a class variable annotated with a bare
``ClassVar`` (``constraints: ClassVar = {...}`` in the methods) is not a dataclass field.

Griffe (2.4) labels such an attribute both class- and instance-attribute, so its dataclass support
listed ``constraints``, ``example``, ... among the parameters of every method's signature. Dropping
the instance label makes it a class variable again.
"""

from __future__ import annotations

from typing import Any

import griffe


class BareClassVar(griffe.Extension):
    def on_attribute_instance(self, *, attr: Any, **kwargs: Any) -> None:
        if str(attr.annotation) == "ClassVar":
            attr.labels.discard("instance-attribute")
