"""`{{ kind|kind_words }}`: a diagnosis kind by its plain name on the staff pages ("leaving out a path")."""

from __future__ import annotations

from django import template

from courseops.misconceptions import kind_words as _kind_words

register = template.Library()


@register.filter
def kind_words(kind: str) -> str:
    return _kind_words(str(kind))
