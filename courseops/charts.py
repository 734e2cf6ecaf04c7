"""Server-rendered SVG charts of the analytics (pure, no Django): no script, no inline style.

Every chart carries a <title> and <desc> and the numbers as text, so it reads without colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 640
BAR_HEIGHT = 22
LABEL_WIDTH = 260


def _svg(height: int, title: str, body: list[str], *, width: int = WIDTH) -> str:
    label = escape(title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{label}"><title>{label}</title>'
            + "".join(body) + "</svg>")


def bar_chart(*, title: str, bars: Sequence[tuple[str, int, float]]) -> str:
    """Horizontal bars: (label, count, share 0–1), each labelled "count (share %)"."""
    if not bars:
        return _svg(BAR_HEIGHT + 8, title, ['<text x="4" y="18" class="chart-empty">No wrong answers yet.</text>'])
    room = WIDTH - LABEL_WIDTH - 110
    body = []
    for i, (label, count, share) in enumerate(bars):
        y = 4 + i * (BAR_HEIGHT + 6)
        length = max(round(room * min(max(share, 0.0), 1.0)), 1)
        short = label if len(label) <= 40 else label[:39] + "…"
        body.append(f'<g class="bar"><text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end" '
                    f'class="chart-label">{escape(short)}</text>'
                    f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length}" height="{BAR_HEIGHT}" class="chart-bar" '
                    f'fill="#c0392b"><title>{escape(label)}: {count}</title></rect>'
                    f'<text x="{LABEL_WIDTH + length + 6}" y="{y + 15}" class="chart-value">'
                    f'{count} ({share * 100:.0f} %)</text></g>')
    return _svg(8 + len(bars) * (BAR_HEIGHT + 6), title, body)


def trend_chart(*, title: str, days: Sequence[tuple[str, int, int]]) -> str:
    """Attempts per day (grey) with the wrong ones in front (red): (ISO day, attempts, wrong)."""
    height, base, top = 200, 170, 20
    if not days:
        return _svg(40, title, ['<text x="4" y="24" class="chart-empty">No attempts yet.</text>'])
    peak = max(attempts for _, attempts, _ in days) or 1
    step = (WIDTH - 60) / len(days)
    width = max(min(step * 0.7, 40), 2)
    body = [f'<line x1="40" y1="{base}" x2="{WIDTH - 10}" y2="{base}" stroke="#555"/>',
            f'<text x="4" y="{top + 4}" class="chart-axis">{peak}</text>',
            f'<text x="4" y="{base}" class="chart-axis">0</text>']
    for i, (day, attempts, wrong) in enumerate(days):
        x = 44 + i * step
        all_h = (base - top) * attempts / peak
        wrong_h = (base - top) * wrong / peak
        body.append(f'<g class="day"><rect x="{x:.1f}" y="{base - all_h:.1f}" width="{width:.1f}" '
                    f'height="{all_h:.1f}" fill="#bbb"><title>{escape(day)}: {attempts} attempts</title></rect>'
                    f'<rect x="{x:.1f}" y="{base - wrong_h:.1f}" width="{width:.1f}" height="{wrong_h:.1f}" '
                    f'fill="#c0392b"><title>{escape(day)}: {wrong} wrong</title></rect>'
                    f'<text x="{x:.1f}" y="{base + 16}" class="chart-axis">{escape(day[5:])}</text></g>')
    return _svg(height, title, body)
