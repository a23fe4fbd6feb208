"""Charts drawn on the server as SVG (pure: numbers in, markup out)."""

from __future__ import annotations

from typing import Sequence

from markupsafe import Markup

WIDTH, HEIGHT, MARGIN = 640, 180, 40


def show_number(value: float) -> str:
    """A whole number as itself, anything else to one decimal."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def line_chart(element_id: str, points: Sequence[tuple[float, float]],
               width: int = WIDTH, height: int = HEIGHT) -> Markup:
    """A line chart of (time s, value) points, newest on the right; the element carries
    ``data-points`` (how many), ``data-last`` (the newest value) and ``data-max``."""
    if not points:
        return Markup('<p class="muted" id="{0}">no samples yet</p>').format(element_id)
    t0, t1 = points[0][0], points[-1][0]
    top = max(max(v for _, v in points), 1)
    span = max(t1 - t0, 1e-9)
    plot_w, plot_h = width - 2 * MARGIN, height - 2 * MARGIN

    def xy(t: float, v: float) -> str:
        x = MARGIN + (plot_w * (t - t0) / span if len(points) > 1 else plot_w)
        y = MARGIN + plot_h * (1 - v / top)
        return f"{x:.1f},{y:.1f}"

    line = " ".join(xy(t, v) for t, v in points)
    last_x, last_y = xy(*points[-1]).split(",")
    return Markup(
        '<svg id="{id}" data-points="{n}" data-last="{last}" data-max="{top_value}" '
        'width="{w}" height="{h}" '
        'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg" role="img">'
        '<rect x="{m}" y="{m}" width="{pw}" height="{ph}" fill="#f7f9fc" stroke="#ccc"/>'
        '<text x="{m}" y="{ty}" font-size="12">{top}</text>'
        '<text x="{m}" y="{by}" font-size="12">0</text>'
        '<text x="{rx}" y="{by}" font-size="12" text-anchor="end">last {secs:.0f} s</text>'
        '<polyline points="{line}" fill="none" stroke="#1d3557" stroke-width="2"/>'
        '<circle cx="{lx}" cy="{ly}" r="3" fill="#e63946"/>'
        '</svg>').format(id=element_id, n=len(points), last=show_number(points[-1][1]),
                         w=width, h=height, m=MARGIN, pw=plot_w, ph=plot_h, ty=MARGIN - 6,
                         by=height - MARGIN + 16, rx=width - MARGIN, top=show_number(top),
                         top_value=show_number(max(v for _, v in points)),
                         secs=t1 - t0, line=line, lx=last_x, ly=last_y)
