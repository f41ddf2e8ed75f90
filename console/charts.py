"""Geometry of the dashboard's inline SVG charts, computed server-side (no JavaScript, no CDN).

Functions return numbers and strings only; the templates escape every label. A gap in a series
(no sample in a bucket) is None; a long gap breaks the line instead of drawing a false zero.
"""
from dataclasses import dataclass, field
from datetime import datetime

PALETTE = ["#417690", "#d9822b", "#3c8d40", "#b03a48", "#7b5ea7", "#8a8a8a"]


@dataclass
class Series:
    name: str
    color: str
    segments: list[str] = field(default_factory=list)  # "x,y x,y ..." polylines (split at gaps)
    dots: list[tuple[float, float, str]] = field(default_factory=list)  # single points between gaps
    last: float | None = None


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1) if value >= 1 else 1
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def line_chart(series: list[tuple[str, list[float | None]]], *, times: list[datetime], unit: str = "",
               width: int = 560, height: int = 140, max_gap: int = 5) -> dict:
    """One line per (name, values); values are aligned with `times` (bucket starts). More than
    `max_gap` empty buckets in a row (nothing sampled then) break the line."""
    pad_left, pad_bottom = 44, 18
    plot_w, plot_h = width - pad_left - 6, height - pad_bottom - 6
    top = _nice_max(max((v for _, values in series for v in values if v is not None), default=0))
    n = max(1, len(times) - 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return round(pad_left + i / n * plot_w, 1), round(6 + plot_h - v / top * plot_h, 1)

    out = []
    for k, (name, values) in enumerate(series):
        line = Series(name=name, color=PALETTE[k % len(PALETTE)])
        run: list[tuple[float, float]] = []
        missing = 0
        for i, v in enumerate(values + [None] * (max_gap + 1)):
            if v is not None:
                run.append(xy(i, v))
                missing = 0
                continue
            missing += 1
            if missing <= max_gap:  # samples sparser than buckets still draw one line
                continue
            if len(run) > 1:
                line.segments.append(" ".join(f"{x},{y}" for x, y in run))
            elif run:
                line.dots.append((run[0][0], run[0][1], ""))
            run = []
        line.last = next((v for v in reversed(values) if v is not None), None)
        out.append(line)
    grid = [{"y": round(6 + plot_h - f * plot_h, 1), "label": _fmt(top * f)} for f in (0, 0.5, 1)]
    return {"width": width, "height": height, "series": out, "grid": grid, "unit": unit, "x0": pad_left,
            "x1": pad_left + plot_w, "axis_y": 6 + plot_h, "label_y": height - 4,
            "first": times[0] if times else None, "last": times[-1] if times else None,
            "has_data": any(v is not None for _, values in series for v in values)}


def status_strip(rows: list[tuple[str, list[int | None]]], *, width: int = 560, row_height: int = 16) -> dict:
    """One row of cells per dependency: 1 up, 0 down, None not sampled."""
    pad_left = 90
    cells = max((len(values) for _, values in rows), default=0) or 1
    cell_w = (width - pad_left - 6) / cells
    colors = {1: "#3c8d40", 0: "#b03a48", None: "#ddd"}
    out = []
    for r, (name, values) in enumerate(rows):
        out.append({"name": name, "y": r * (row_height + 4), "cells": [
            {"x": round(pad_left + i * cell_w, 1), "w": round(max(1.0, cell_w - 1), 1), "color": colors[v],
             "state": {1: "up", 0: "down", None: "no sample"}[v]} for i, v in enumerate(values)]})
    return {"width": width, "height": len(rows) * (row_height + 4), "rows": out, "row_height": row_height,
            "label_x": pad_left - 6}


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.2g}"
