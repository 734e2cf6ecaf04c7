"""Submitted code, readable: Python highlighting and line numbers (Pygments, class-based CSS)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

register = template.Library()
MAX_SHOWN = 50_000
_FORMATTER = HtmlFormatter(linenos="table", cssclass="source", wrapcode=True)


@register.filter
def code_lines(source: str) -> SafeString:
    """Pygments escapes the source itself, so the markup is safe to mark as such."""
    text = str(source)[:MAX_SHOWN]
    return mark_safe(highlight(text, PythonLexer(), _FORMATTER))
