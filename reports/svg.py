"""A server-rendered bar chart (inline SVG): no JavaScript, no CDN."""

from datetime import date

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 12, 28


def _nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 x 10^n at or above ``value`` (1 for an empty chart)."""
    if value <= 0:
        return 1.0
    scale = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    while scale > value:
        scale /= 10
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return step * scale
    return 10 * scale


def gpu_hours_chart(days: list[tuple[date, float]], *, title: str = "GPU-hours per day") -> SafeString:
    """One bar per day; each bar's tooltip gives the day and its GPU-hours."""
    top = _nice_max(max((hours for _, hours in days), default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(days), 1)
    bar_w = max(step * 0.8, 1)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" stroke="#d9dee7"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#d9dee7"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end" font-size="11" fill="#5b6576">{top:g}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end" font-size="11" fill="#5b6576">0</text>',
    ]
    for index, (day, hours) in enumerate(days):
        height = plot_h * hours / top
        x = LEFT + index * step + (step - bar_w) / 2
        parts.append(
            f'<rect x="{x:.1f}" y="{TOP + plot_h - height:.1f}" width="{bar_w:.1f}" height="{height:.1f}" '
            f'fill="#1f5fbf"><title>{day.isoformat()}: {hours:.3f} GPU-hours</title></rect>'
        )
    if days:
        baseline = TOP + plot_h + 16
        parts.append(f'<text x="{LEFT}" y="{baseline}" font-size="11" fill="#5b6576">{days[0][0].isoformat()}</text>')
        parts.append(
            f'<text x="{WIDTH - RIGHT}" y="{baseline}" text-anchor="end" font-size="11" fill="#5b6576">'
            f"{days[-1][0].isoformat()}</text>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every interpolated text is escaped or a number
