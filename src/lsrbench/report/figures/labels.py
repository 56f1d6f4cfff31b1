"""Point labels that do not overlap: each label goes to the first of a ring of positions around its point where it
collides with no label placed before it and no marker, with a thin leader line when it sits away from the point.
Written here because matplotlib has no label placement of its own and a greedy ring search is enough for the few
dozen points of a tradeoff plot (no extra dependency)."""

from __future__ import annotations

import math

__all__ = ["place_labels", "overlapping_pairs"]

# Candidate offsets (points): right, left, above, below, then the diagonals, at growing distance.
_DIRECTIONS = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
_RADII = (6, 13, 22, 32, 44)


def _overlaps(a, b, pad: float = 1.0) -> bool:
    return not (a.x1 + pad <= b.x0 or b.x1 + pad <= a.x0 or a.y1 + pad <= b.y0 or b.y1 + pad <= a.y0)


def place_labels(ax, points: list[dict], marker_radius: float = 5.0, lines=()) -> list:
    """Annotate ``points`` (dicts with ``x``, ``y``, ``text``, ``color``) on ``ax`` without overlaps."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    px = fig.dpi / 72.0
    from matplotlib.transforms import Bbox

    obstacles = []
    for p in points:
        cx, cy = ax.transData.transform((p["x"], p["y"]))
        r = marker_radius * px
        obstacles.append(Bbox([[cx - r, cy - r], [cx + r, cy + r]]))
    for line in lines:
        obstacles += _line_boxes(line, 1.5 * px)
    axes_box = ax.get_window_extent(renderer)
    placed = []
    for p in points:
        best = None
        for radius in _RADII:
            for dx, dy in _DIRECTIONS:
                norm = math.hypot(dx, dy)
                off = (radius * dx / norm, radius * dy / norm)
                ann = _annotation(ax, p, off, radius > _RADII[0])
                box = ann.get_window_extent(renderer)
                inside = (box.x0 >= axes_box.x0 and box.x1 <= axes_box.x1 and box.y0 >= axes_box.y0
                          and box.y1 <= axes_box.y1)
                if inside and not any(_overlaps(box, o) for o in obstacles):
                    best = (ann, box)
                    break
                ann.remove()
            if best:
                break
        if best is None:  # nowhere free: the nearest spot to the right, as before
            ann = _annotation(ax, p, (_RADII[0], 0), False)
            best = (ann, ann.get_window_extent(renderer))
        placed.append(best[0])
        obstacles.append(best[1])
    return placed


def _line_boxes(line, half: float) -> list:
    import numpy as np
    from matplotlib.transforms import Bbox

    path = line.get_transform().transform_path(line.get_path())
    xy = path.vertices
    boxes = []
    for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:]):
        n = max(1, int(np.hypot(x1 - x0, y1 - y0) // (2 * half)))
        for t in np.linspace(0, 1, n + 1):
            x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
            boxes.append(Bbox([[x - half, y - half], [x + half, y + half]]))
    return boxes


def _annotation(ax, p: dict, offset: tuple[float, float], leader: bool):
    dx, dy = offset
    ha = "left" if dx > 0 else "right" if dx < 0 else "center"
    va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
    arrow = {"arrowstyle": "-", "color": p["color"], "lw": 0.6, "shrinkA": 0, "shrinkB": 3} if leader else None
    return ax.annotate(p["text"], (p["x"], p["y"]), xytext=offset, textcoords="offset points", ha=ha, va=va,
                       fontsize=7.5, color=p["color"], arrowprops=arrow, annotation_clip=False)


def overlapping_pairs(artists, renderer=None) -> list[tuple[str, str]]:
    """The pairs of ``artists`` (texts) whose drawn boxes overlap: a check for tests and figures."""
    if not artists:
        return []
    renderer = renderer or artists[0].figure.canvas.get_renderer()
    boxes = [(a.get_text(), a.get_window_extent(renderer)) for a in artists]
    return [(ta, tb) for i, (ta, a) in enumerate(boxes) for tb, b in boxes[i + 1:] if _overlaps(a, b, pad=0.0)]
