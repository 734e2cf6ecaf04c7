"""Markdown for statements and hints: raw HTML disabled, `$…$` math kept verbatim for KaTeX.

Math spans are cut out before Markdown can read `_` or `*` inside them as emphasis
or eat a backslash; they are written back as escaped text, and KaTeX auto-render
typesets them in the browser.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_inline import StateInline

register = template.Library()


def _math_end(src: str, start: int, delimiter: str) -> int:
    """Index just past the closing delimiter, or -1 when this `$` opens no math."""
    inner = start + len(delimiter)
    if inner >= len(src) or src[inner].isspace():
        return -1
    end = src.find(delimiter, inner)
    while end != -1 and src[end - 1] == "\\":
        end = src.find(delimiter, end + 1)
    if end == -1 or end == inner or src[end - 1].isspace():
        return -1
    after = end + len(delimiter)
    if delimiter == "$" and after < len(src) and src[after].isdigit():
        return -1  # "$5 and $6" is money, not math
    return after


def _math_rule(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "$":
        return False
    delimiter = "$$" if state.src.startswith("$$", state.pos) else "$"
    end = _math_end(state.src, state.pos, delimiter)
    if end == -1:
        return False
    if not silent:
        token = state.push("math_inline", "", 0)
        token.content = state.src[state.pos:end]
    state.pos = end
    return True


def _render_math(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return escapeHtml(tokens[idx].content)


def _same_site(src: str) -> bool:
    """A path on this site (`/static/…`); never another host (`//host`, `https:`, `data:`)."""
    return src.startswith("/") and not src.startswith("//") and "\\" not in src


def _render_image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Images only from the site itself: an off-site image would track who reads the statement."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    if not _same_site(src):
        return f'<span class="image-refused">[image not shown: {escapeHtml(alt or "off-site image")}]</span>'
    return f'<img src="{escapeHtml(src)}" alt="{escapeHtml(alt)}">'


def _markdown(*, off_site_links: bool = True) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.inline.ruler.before("escape", "math_inline", _math_rule)
    md.add_render_rule("math_inline", _render_math)
    md.add_render_rule("image", _render_image)
    if not off_site_links:
        md.validateLink = _same_site_link  # type: ignore[method-assign]
    return md


def _same_site_link(url: str) -> bool:
    return _same_site(url) or url.startswith("#")


def _feedback_markdown() -> MarkdownIt:
    """Feedback words: code, emphasis, lists and links to this site only; no HTML, headings, images
    or math."""
    md = MarkdownIt("zero", {"html": False, "linkify": False, "typographer": False})
    md.enable(["backticks", "emphasis", "escape", "newline", "link", "entity", "list", "paragraph"])
    md.validateLink = _same_site_link  # type: ignore[method-assign]
    return md


_MD = _markdown()
_HINT_MD = _markdown(off_site_links=False)
_FEEDBACK_MD = _feedback_markdown()


@register.filter
def markdown(text: str) -> SafeString:
    """A block of Markdown (statement) as HTML. Safe: raw HTML is escaped, unsafe link schemes dropped."""
    return mark_safe(_MD.render(text or ""))  # markdown-it escapes all input; html=False


@register.filter
def markdown_inline(text: str) -> SafeString:
    """One line of Markdown (hint, feedback) without a wrapping paragraph."""
    return mark_safe(_MD.renderInline(text or ""))


@register.filter
def hint_markdown(text: str) -> SafeString:
    """A hint as one line of Markdown, with links to this site only (a hint is feedback)."""
    return mark_safe(_HINT_MD.renderInline(text or ""))


CODE_OR_TEXT = re.compile(r"(`[^`\n]+`)")
FORMULA_STARS = re.compile(r"(?<=[\w)\]])\*+(?=[\w(\[])")  # 2*x, x**2: arithmetic, not emphasis


@register.filter
def feedback_markdown(text: object) -> SafeString:
    """Feedback words (a diagnosis, an option's feedback) as Markdown: `code`, *emphasis*, lists and
    links to this site. Words may quote a student's formula or code, so outside code spans a `*`
    between operands and every `_` stay literal (`2*x*y`, `__init__` are not emphasis)."""
    pieces = CODE_OR_TEXT.split("" if text is None else str(text))
    source = "".join(piece if index % 2 else _literal_marks(piece) for index, piece in enumerate(pieces))
    return mark_safe(_FEEDBACK_MD.render(source))  # markdown-it escapes all input; html=False


def _literal_marks(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("_", "\\_")
    return FORMULA_STARS.sub(lambda match: "\\*" * len(match.group(0)), text)


@register.filter
def path_arrows(names: list[str]) -> str:
    """["x", "mul", "add", "z"] → "x → mul → add → z" (autoescaped by the template)."""
    return " → ".join(str(name) for name in names)


@register.filter
def multiline(text: object) -> bool:
    """A code answer of several lines: shown as a numbered block (the feedback quotes its lines)."""
    return isinstance(text, str) and "\n" in text.strip("\n")


@register.filter
def answer_text(text: object) -> str:
    """An answer as the student gave it: a multiple choice's options by their text (`x → add → z;
    x → mul → add → z`), not the JSON list the form stores (`["x \\u2192 add \\u2192 z"]`)."""
    if not isinstance(text, str) or not text.lstrip().startswith('["'):
        return "" if text is None else str(text)
    try:
        chosen = json.loads(text)
    except ValueError:
        return text
    if isinstance(chosen, list) and chosen and all(isinstance(option, str) for option in chosen):
        return "; ".join(chosen)
    return text


def _duration(hours: float) -> str:
    """3 h, 40 min, 2 days 3 h: how late, as a person says it."""
    minutes = round(hours * 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    whole = round(hours)
    if whole < 48:
        return f"{whole} h"
    days, rest = divmod(whole, 24)
    return f"{days} days" + (f" {rest} h" if rest else "")


def _factor(value: float) -> str:
    return f"{value:g}"


@register.filter
def late_words(document: dict[str, Any]) -> str:
    """A late result's penalty in words: "submitted 3 h late: score × 0.5"."""
    factor = float(document.get("late_factor", 1.0))
    hours = document.get("hours_late")
    when = f"submitted {_duration(float(hours))} late" if isinstance(hours, (int, float)) else "submitted late"
    if factor <= 0:
        return f"{when}: no credit"
    return f"{when}: score × {_factor(factor)}"


@register.filter
def late_policy_words(steps: list[list[float]]) -> str:
    """An assignment's late penalty in words: [[0, 0.9], [24, 0.5]] → "up to 24 h late: score × 0.9;
    24 h late or more: score × 0.5"."""
    ordered = sorted((float(hours), float(factor)) for hours, factor in steps)
    clauses = []
    for index, (hours, factor) in enumerate(ordered):
        credit = "no credit" if factor <= 0 else f"score × {_factor(factor)}"
        following = ordered[index + 1][0] if index + 1 < len(ordered) else None
        start = "after the due date" if hours <= 0 else f"{_duration(hours)} late or more"
        if following is not None:
            start = f"up to {_duration(following)} late" if hours <= 0 else (
                f"from {_duration(hours)} to {_duration(following)} late")
        clauses.append(f"{start}: {credit}")
    return "; ".join(clauses)


@register.filter
def verdict(part: dict[str, Any]) -> str:
    """A part's verdict: "correct", "partly right" or "incorrect" (chainrule.result.verdict)."""
    from chainrule.result import verdict as part_verdict

    return part_verdict(part) if isinstance(part, dict) else "incorrect"


@register.filter
def expected_text(value: object) -> str:
    """An expected value as staff read it: a code part's several values as `w.grad = [1, 2]; b.grad = [1]`
    (its Python dict repr, quotes and all, was shown)."""
    if isinstance(value, dict):
        return "; ".join(f"{key} = {item}" for key, item in value.items())
    return str(value)
