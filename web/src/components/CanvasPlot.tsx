// A canvas plot sized to its box (and the screen's pixel density), with HTML laid over it, and
// the pointer's moves, clicks and drags in its own pixels.
import { useEffect, useRef, useState, type MouseEvent, type ReactNode } from "react";
import type { Axis } from "../analysis";

export type At = { x: number; y: number; width: number };

/** A box over an x-y plot, in its axes' own 0-1 positions (it stays put when the plot is
 * resized). */
export interface Box {
  x: [number, number];
  y: [number, number];
}

/** A canvas sized to its box (and the screen's pixel density), redrawn when either changes,
 * with HTML labels laid over it (text stays selectable and visible to tests and readers). */
export function CanvasPlot({
  height, label, draw, overlay, onPoint, onPick, onDrag,
}: {
  height: number;
  label: string;
  draw: (ctx: CanvasRenderingContext2D, width: number, height: number) => void;
  overlay: (width: number) => ReactNode;
  /** The pointer moved to (x, y) in the plot's pixels (null: it left). */
  onPoint?: (at: At | null) => void;
  /** A click at (x, y). */
  onPick?: (at: At) => void;
  /** A drag with the mouse's button held: where it started, moved, and let go. */
  onDrag?: (phase: "start" | "move" | "end", at: At) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    setWidth(element.clientWidth);
    const resize = new ResizeObserver(() => setWidth(element.clientWidth));
    resize.observe(element);
    return () => resize.disconnect();
  }, []);
  useEffect(() => {
    const c = canvas.current;
    if (!c || width <= 0) return;
    const ratio = window.devicePixelRatio || 1;
    c.width = Math.round(width * ratio);
    c.height = Math.round(height * ratio);
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    draw(ctx, width, height);
  }, [width, height, draw]);
  return (
    <div
      className="plot"
      ref={box}
      style={{ height }}
      onMouseMove={(e) => {
        onPoint?.(pointer(e, width));
        if (onDrag && e.buttons === 1) onDrag("move", pointer(e, width));
      }}
      onMouseLeave={onPoint && (() => onPoint(null))}
      onClick={onPick && ((e) => onPick(pointer(e, width)))}
      onMouseDown={onDrag && ((e) => { if (e.button === 0) { e.preventDefault(); onDrag("start", pointer(e, width)); } })}
      onMouseUp={onDrag && ((e) => onDrag("end", pointer(e, width)))}
    >
      <canvas ref={canvas} role="img" aria-label={label} style={{ width: "100%", height }} />
      {width > 0 && overlay(width)}
    </div>
  );
}

/** Where a mouse event is in the plot's own pixels. */
function pointer(e: MouseEvent<HTMLDivElement>, width: number): At {
  const box = e.currentTarget.getBoundingClientRect();
  return { x: e.clientX - box.left, y: e.clientY - box.top, width };
}


/** A point drawn at (x, y) for row `row` of a plot. */
export type Hit = { row: number; x: number; y: number };

/** The row whose point (`places[row]`, null: not drawn) is nearest `at`, within `radius` pixels. */
export function nearestPoint(places: ({ x: number; y: number } | null)[], at: At, radius: number): Hit | null {
  let best: Hit | null = null;
  let bestDistance = radius * radius;
  places.forEach((p, row) => {
    if (!p) return;
    const d = (p.x - at.x) ** 2 + (p.y - at.y) ** 2;
    if (d < bestDistance) {
      bestDistance = d;
      best = { row, x: p.x, y: p.y };
    }
  });
  return best;
}

/** An x-y plot's axis names and ticks, laid over its canvas, and a tooltip by the hovered point. */
export function XYOverlay({
  width, height, left, x, y, xOf, yOf, tip, box,
}: {
  width: number;
  height: number;
  /** Where the y axis stands, in pixels from the left. */
  left: number;
  x: Axis;
  y: Axis;
  xOf: (p: number, width: number) => number;
  yOf: (p: number) => number;
  tip: { at: Hit; text: string } | null;
  /** A box dragged over the plot, in the axes' 0-1 positions. */
  box?: Box | null;
}) {
  return (
    <>
      {box && (
        <span
          className="sc-box"
          role="img"
          aria-label="dragged box"
          style={{ left: xOf(box.x[0], width), top: yOf(box.y[1]), width: xOf(box.x[1], width) - xOf(box.x[0], width), height: yOf(box.y[0]) - yOf(box.y[1]) }}
        />
      )}
      <span className="sc-axis-name" style={{ left: xOf(0.5, width), top: height - 16 }}>{x.name}{x.kind === "log" ? " (log)" : ""}</span>
      <span className="sc-axis-name y" style={{ left: 4, top: 4 }}>{y.name}{y.kind === "log" ? " (log)" : ""}</span>
      {x.ticks.map((t, k) => (
        <span key={`x${k}`} className="sc-tick x" style={{ left: xOf(t.at, width), top: yOf(0) + 2 }}>{t.label}</span>
      ))}
      {y.ticks.map((t, k) => (
        <span key={`y${k}`} className="sc-tick y" style={{ left: left - 6, top: yOf(t.at) - 7 }}>{t.label}</span>
      ))}
      {tip && (
        <span className="sc-tip" role="tooltip" style={{ left: tip.at.x + 8, top: tip.at.y - 30 }}>
          {tip.text}
        </span>
      )}
    </>
  );
}
