// Two hyperparameters against each other (Optuna's contour plot): each trial a point coloured by
// the rank of its metric, over a shading of the metric estimated between the trials, so the
// region of the pair where the good trials lie shows at a glance. A box dragged over it keeps
// the trials inside, to tick in the trials table.
import { useEffect, useMemo, useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import type { Experiment, Trial } from "../api/client";
import { goodnessGrid, rankRgb, type Estimate } from "../analysis";
import { CanvasPlot, nearestPoint, XYOverlay, type At } from "../components/CanvasPlot";
import { hparam, num } from "../format";
import { BrushedTrials, inBox, useBoxBrush } from "./brushing";
import { usePrepared } from "./prepared";

const HEIGHT = 320;
const BOX = { left: 70, right: 20, top: 20, bottom: 40 };
/** The shading's grid, smoothed when drawn at the plot's size. */
const GRID = { cols: 48, rows: 24 };

export function PairPlot({ experiment, trials, selected }: { experiment: Experiment; trials: Trial[]; selected: Set<number> }) {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const [hover, setHover] = useState<{ row: number; x: number; y: number } | null>(null);
  const { axes, rows, colours, good, worstFirst } = usePrepared(experiment, trials);
  const names = axes.slice(0, -1).map((a) => a.name);
  const pick = (key: string, fallback: string | undefined) => {
    const asked = params.get(key) ?? "";
    return names.includes(asked) ? asked : fallback;
  };
  const xName = pick("px", names[0]);
  // Up is never the same as Across (a diagonal, and a shading of nothing).
  const askedY = pick("py", undefined);
  const yName = askedY !== undefined && askedY !== xName ? askedY : names.find((n) => n !== xName);
  const xi = xName === undefined ? -1 : names.indexOf(xName);
  const yi = yName === undefined ? -1 : names.indexOf(yName);
  const metric = axes[axes.length - 1];
  const xOf = (p: number, width: number) => BOX.left + p * (width - BOX.left - BOX.right);
  const yOf = (p: number) => BOX.top + (1 - p) * (HEIGHT - BOX.top - BOX.bottom);
  const shaded = params.get("pshade") !== "0";
  const positions = useMemo(
    () => rows.map((r) => {
      const px = axes[xi]?.position(r.values[xi]);
      const py = axes[yi]?.position(r.values[yi]);
      return px == null || py == null ? null : { x: px, y: py };
    }),
    [axes, rows, xi, yi],
  );
  const place = (row: number, width: number): { x: number; y: number } | null => {
    const p = positions[row];
    return p ? { x: xOf(p.x, width), y: yOf(p.y) } : null;
  };
  // Made once for the trials and axes shown, not on every redraw (a dragged box redraws).
  const shading = useMemo(
    () => shaded
      ? shadingImage(goodnessGrid(positions.flatMap((p, r) => (p ? [{ ...p, g: good[r] }] : [])), GRID.cols, GRID.rows))
      : null,
    [shaded, positions, good],
  );
  const brush = useBoxBrush((at) => ({
    x: (at.x - BOX.left) / (at.width - BOX.left - BOX.right),
    y: 1 - (at.y - BOX.top) / (HEIGHT - BOX.top - BOX.bottom),
  }));
  // A box belongs to the axes it was drawn over: another pair lets it go.
  const clearBox = brush.clear;
  useEffect(() => clearBox(), [xName, yName, clearBox]);
  const box = brush.box;
  const inside = useMemo(
    () => (box ? rows.filter((_, r) => inBox(box, positions[r]?.x, positions[r]?.y)).map((r) => r.id) : []),
    [box, rows, positions],
  );
  const draw = useMemo(
    () => (ctx: CanvasRenderingContext2D, width: number) => {
      if (shading) {
        ctx.imageSmoothingEnabled = true;
        ctx.drawImage(shading, xOf(0, width), yOf(1), xOf(1, width) - xOf(0, width), yOf(0) - yOf(1));
      }
      ctx.strokeStyle = "#9ca3af";
      ctx.beginPath();
      ctx.moveTo(xOf(0, width), yOf(1));
      ctx.lineTo(xOf(0, width), yOf(0));
      ctx.lineTo(xOf(1, width), yOf(0));
      ctx.stroke();
      // Worst first: the best trials are drawn last, on top.
      for (const r of worstFirst) {
        const at = place(r, width);
        if (!at) continue;
        ctx.fillStyle = box && !inBox(box, positions[r]?.x, positions[r]?.y) ? "#d1d5db" : colours[r];
        ctx.beginPath();
        ctx.arc(at.x, at.y, 5, 0, 2 * Math.PI);
        ctx.fill();
        if (selected.has(rows[r].id)) {
          ctx.strokeStyle = "#111827";
          ctx.lineWidth = 2;
          ctx.beginPath();
          ctx.arc(at.x, at.y, 8, 0, 2 * Math.PI);
          ctx.stroke();
        }
      }
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [axes, rows, colours, worstFirst, selected, xi, yi, shading, box, positions],
  );
  if (names.length < 2) return <p className="muted">Two searched hyperparameters are needed for this plot.</p>;
  if (rows.length === 0) return <p className="muted">No trial has reported the searcher metric yet.</p>;
  const nearest = (at: At) => nearestPoint(rows.map((_, r) => place(r, at.width)), at, 9);
  const choose = (key: string, value: string) => {
    const next = new URLSearchParams(params);
    next.set(key, value);
    setParams(next, { replace: true });
  };
  const shown = hover ? rows[hover.row] : null;
  return (
    <div>
      <label>
        Across{" "}
        <select aria-label="hyperparameter across" value={xName} onChange={(e) => choose("px", e.target.value)}>
          {names.map((n) => <option key={n}>{n}</option>)}
        </select>
      </label>{" "}
      <label>
        Up{" "}
        <select aria-label="hyperparameter up" value={yName} onChange={(e) => choose("py", e.target.value)}>
          {names.filter((n) => n !== xName).map((n) => <option key={n}>{n}</option>)}
        </select>
      </label>{" "}
      <label className="check">
        <input type="checkbox" checked={shaded} onChange={(e) => choose("pshade", e.target.checked ? "1" : "0")} />
        Shade between trials
      </label>
      {shaded && (
        <p className="legend muted">
          The shading estimates {metric.name} between the trials, from those near each spot (a Gaussian-weighted mean of their
          ranks); blank where no trial is near.
        </p>
      )}
      <CanvasPlot
        height={HEIGHT}
        label={`${yName} against ${xName} for ${rows.length} trials, coloured by ${metric.name}`}
        draw={draw}
        overlay={(width) => (
          <XYOverlay
            width={width} height={HEIGHT} left={BOX.left} x={axes[xi]} y={axes[yi]} xOf={xOf} yOf={yOf}
            tip={hover && shown && {
              at: hover,
              text: `trial ${shown.id}: ${xName} ${hparam(shown.values[xi])}, ${yName} ${hparam(shown.values[yi])}, ${metric.name} ${num(shown.metric)}`,
            }}
            box={box}
          />
        )}
        onPoint={(at) => setHover(at && nearest(at))}
        onDrag={brush.onDrag}
        onPick={(at) => {
          if (brush.endedDrag()) return;
          const hit = nearest(at);
          if (hit) navigate(`/trials/${rows[hit.row].id}`);
        }}
      />
      {box && <BrushedTrials inside={inside} total={rows.length} where="the box" onClear={brush.clear} />}
    </div>
  );
}

/** The shading as a small image, one pixel a cell (row 0 at the bottom), for drawing scaled up
 * and smoothed: no seams, no steps. Where trials are far, it fades out. */
function shadingImage(grid: (Estimate | null)[]): HTMLCanvasElement | null {
  const cells = document.createElement("canvas");
  cells.width = GRID.cols;
  cells.height = GRID.rows;
  const small = cells.getContext("2d");
  if (!small) return null;
  const image = small.createImageData(GRID.cols, GRID.rows);
  grid.forEach((cell, k) => {
    if (cell === null) return;
    const [r, g, b] = rankRgb(cell.g);
    // The image's first row is the top.
    const at = 4 * ((GRID.rows - 1 - Math.floor(k / GRID.cols)) * GRID.cols + (k % GRID.cols));
    image.data.set([r, g, b, Math.round(255 * 0.4 * Math.min(1, cell.near * 1.5))], at);
  });
  small.putImageData(image, 0, 0);
  return cells;
}
