// Two hyperparameters against each other, each trial a point coloured by the rank of its metric
// (Optuna's contour plot, without the interpolation between trials that a search's few points
// cannot support): which region of the pair the good trials lie in.
import { useMemo, useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import type { Experiment, Trial } from "../api/client";
import { CanvasPlot, nearestPoint, XYOverlay, type At } from "../components/CanvasPlot";
import { hparam, num } from "../format";
import { usePrepared } from "./prepared";

const HEIGHT = 320;
const BOX = { left: 70, right: 20, top: 20, bottom: 40 };

export function PairPlot({ experiment, trials, selected }: { experiment: Experiment; trials: Trial[]; selected: Set<number> }) {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const [hover, setHover] = useState<{ row: number; x: number; y: number } | null>(null);
  const { axes, rows, colours, worstFirst } = usePrepared(experiment, trials);
  const names = axes.slice(0, -1).map((a) => a.name);
  const pick = (key: string, fallback: string | undefined) => {
    const asked = params.get(key) ?? "";
    return names.includes(asked) ? asked : fallback;
  };
  const xName = pick("px", names[0]);
  const yName = pick("py", names.find((n) => n !== xName));
  const xi = xName === undefined ? -1 : names.indexOf(xName);
  const yi = yName === undefined ? -1 : names.indexOf(yName);
  const metric = axes[axes.length - 1];
  const xOf = (p: number, width: number) => BOX.left + p * (width - BOX.left - BOX.right);
  const yOf = (p: number) => BOX.top + (1 - p) * (HEIGHT - BOX.top - BOX.bottom);
  const place = (row: number, width: number): { x: number; y: number } | null => {
    const px = axes[xi]?.position(rows[row].values[xi]);
    const py = axes[yi]?.position(rows[row].values[yi]);
    return px == null || py == null ? null : { x: xOf(px, width), y: yOf(py) };
  };
  const draw = useMemo(
    () => (ctx: CanvasRenderingContext2D, width: number) => {
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
        ctx.fillStyle = colours[r];
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
    [axes, rows, colours, worstFirst, selected, xi, yi],
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
          {names.map((n) => <option key={n}>{n}</option>)}
        </select>
      </label>
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
          />
        )}
        onPoint={(at) => setHover(at && nearest(at))}
        onPick={(at) => {
          const hit = nearest(at);
          if (hit) navigate(`/trials/${rows[hit.row].id}`);
        }}
      />
    </div>
  );
}
