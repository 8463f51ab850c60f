// The Experiment page's analyses: searcher progress (an ASHA search's rungs), hyperparameter
// importance, parallel coordinates, metric-vs-hyperparameter scatter and two hyperparameters
// against each other.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import { api, ok, type Experiment, type Schemas, type Trial } from "../api/client";
import { makeAxis, rankColour, type Axis } from "../analysis";
import { ErrorLine, Loading } from "../components/bits";
import { CanvasPlot, nearestPoint, XYOverlay, type At } from "../components/CanvasPlot";
import { idList } from "../params";
import { hparam, num, percent } from "../format";
import { History } from "./ExperimentHistory";
import { PairPlot } from "./PairPlot";
import { usePrepared, PAD } from "./prepared";
import { BrushedTrials, inBox, useBoxBrush } from "./brushing";
import "./analysis.css";

type Evaluator = Schemas["ImportanceEvaluator"];
const EVALUATORS: { value: Evaluator; label: string }[] = [
  { value: "ped_anova", label: "PED-ANOVA (Optuna's default)" },
  { value: "fanova", label: "fANOVA" },
  { value: "mean_decrease_impurity", label: "Mean decrease impurity" },
];

export function Analysis({ experiment, trials }: { experiment: Experiment; trials: Trial[] }) {
  // The trials ticked in the trials table ("Plot"), drawn over the others in the plots below.
  const [params] = useSearchParams();
  const ticked = params.get("trials");
  const selected = useMemo(() => new Set(idList(ticked)), [ticked]);
  // The analyses follow the trials query (live already): they are asked again when its trials
  // change (a new one, a state, steps trained: a trial reaching a rung), never on a timer of
  // their own. Short signatures, as query keys are hashed on every render.
  let steps = 0, completed = 0, lastCompleted = 0;
  const byState = new Map<string, number>();
  for (const t of trials) {
    steps += t.steps_completed;
    byState.set(t.state, (byState.get(t.state) ?? 0) + 1);
    if (t.state === "COMPLETED") { completed += 1; lastCompleted = Math.max(lastCompleted, t.id); }
  }
  const states = `${trials.length}|${steps}|${[...byState].sort().join(",")}`;
  const finished = `${completed}|${lastCompleted}`;
  return (
    <>
      <h2>Searcher progress</h2>
      <SearcherProgress experimentId={experiment.id} version={`${experiment.state}|${experiment.progress}|${states}`} />
      <h2>Optimization history</h2>
      <History experiment={experiment} trials={trials} />
      <h2>Hyperparameter importance</h2>
      <Importance experimentId={experiment.id} version={finished} />
      <h2>Parallel coordinates</h2>
      <p className="legend muted">
        Each line a trial, coloured by the rank of its {experiment.searcher.metric ?? "metric"}:{" "}
        <span className="swatch" style={{ background: rankColour(0) }} /> best to{" "}
        <span className="swatch" style={{ background: rankColour(1) }} /> worst; the best are drawn on top, and
        the trials ticked in the trials table ("Plot") dark, over all.
      </p>
      <ParallelCoordinates experiment={experiment} trials={trials} selected={selected} />
      <h2>Metric vs hyperparameter</h2>
      <Scatter experiment={experiment} trials={trials} selected={selected} />
      <h2>Two hyperparameters</h2>
      <PairPlot experiment={experiment} trials={trials} selected={selected} />
    </>
  );
}

function SearcherProgress({ experimentId, version }: { experimentId: number; version: string }) {
  const progress = useQuery({
    queryKey: ["searcher-progress", experimentId, version],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/searcher-progress", { params: { path: { experiment_id: experimentId } } })),
    placeholderData: (previous) => previous,
  });
  if (progress.isPending) return <Loading />;
  if (progress.error) return <ErrorLine error={progress.error} />;
  const p = progress.data;
  return (
    <div aria-label="searcher progress">
      <p className="summary">
        <span>trials created {p.trials_created}{p.max_trials !== null ? ` of ${p.max_trials}` : ""}</span>
        <span>completed {p.trials_completed}</span>
        <span>ended {p.trials_ended}</span>
        <span>progress {percent(p.progress)}</span>
      </p>
      {p.brackets.map((b, i) => (
        <div key={i} className="bracket">
          {p.brackets.length > 1 && (
            <h3>Bracket {i + 1}: {b.rungs.length} rung{b.rungs.length === 1 ? "" : "s"}, {b.trials}{b.max_trials !== null ? ` of ${b.max_trials}` : ""} trials</h3>
          )}
          <table aria-label={`rungs of bracket ${i + 1}`} className="rungs">
            <thead>
              <tr>
                <th>Rung</th><th className="num">Length ({p.unit})</th><th className="num">Reached</th>
                <th className="num">Training</th><th className="num">Promoted</th><th className="num">Best</th><th>Reached of trials</th>
              </tr>
            </thead>
            <tbody>
              {b.rungs.map((r, j) => (
                <tr key={j}>
                  <td>{j + 1}</td>
                  <td className="num">{r.length}</td>
                  <td className="num">{r.reached}</td>
                  <td className="num">{r.training}</td>
                  <td className="num">{r.promoted}</td>
                  <td className="num">{num(r.best)}</td>
                  <td>
                    <span className="bar" aria-hidden="true">
                      <span style={{ width: `${(100 * r.reached) / Math.max(b.max_trials ?? b.trials, 1)}%` }} />
                    </span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  );
}

function Importance({ experimentId, version }: { experimentId: number; version: string }) {
  const [params, setParams] = useSearchParams();
  const wanted = params.get("evaluator");
  const evaluator = EVALUATORS.find((e) => e.value === wanted)?.value ?? "ped_anova";
  const importance = useQuery({
    queryKey: ["hparam-importance", experimentId, evaluator, version],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/hparam-importance", {
      params: { path: { experiment_id: experimentId }, query: { evaluator } },
    })),
    placeholderData: (previous) => previous,
  });
  const data = importance.data;
  const top = (data?.importances ?? []).reduce((m, i) => Math.max(m, i.importance), 1e-12);
  return (
    <div>
      <label>
        Evaluator{" "}
        <select
          aria-label="importance evaluator"
          value={evaluator}
          onChange={(ev) => {
            const next = new URLSearchParams(params);
            next.set("evaluator", ev.target.value);
            setParams(next, { replace: true });
          }}
        >
          {EVALUATORS.map((e) => <option key={e.value} value={e.value}>{e.label}</option>)}
        </select>
      </label>
      <ErrorLine error={importance.error} />
      {importance.isPending && <Loading />}
      {data && data.message && <p className="muted" role="status">{data.message}</p>}
      {data && data.importances.length > 0 && (
        <>
          <p className="muted">{data.metric} over {data.trials} finished trials</p>
          <svg className="importance" role="img" aria-label="hyperparameter importance" width="100%" height={data.importances.length * 24 + 4}>
            {data.importances.map((item, i) => (
              <g key={item.name} transform={`translate(0, ${i * 24 + 2})`} aria-label={`${item.name} ${percent(item.importance)}`}>
                <title>{`${item.name}: ${item.importance.toFixed(4)}`}</title>
                <text x="0" y="15" className="importance-name">{item.name}</text>
                <rect x="30%" y="2" height="18" width={`${(60 * item.importance) / top}%`} fill="#1f77b4" />
                <text x={`${31 + (60 * item.importance) / top}%`} y="15" className="importance-value">{percent(item.importance)}</text>
              </g>
            ))}
          </svg>
        </>
      )}
    </div>
  );
}

/** Ranges brushed on the parallel coordinates' axes: axis index to [low, high], in the axis's
 * own 0-1 positions. */
type Brushes = Record<number, [number, number]>;

/** Whether a row's value on every brushed axis lies in that axis's range. */
function inBrushes(axes: Axis[], values: unknown[], brushes: Brushes): boolean {
  return Object.entries(brushes).every(([i, [lo, hi]]) => {
    const p = axes[Number(i)].position(values[Number(i)]);
    return p !== null && p >= lo - 1e-9 && p <= hi + 1e-9;
  });
}

function ParallelCoordinates({ experiment, trials, selected }: { experiment: Experiment; trials: Trial[]; selected: Set<number> }) {
  const { axes, rows, colours, worstFirst } = usePrepared(experiment, trials);
  const [brushes, setBrushes] = useState<Brushes>({});
  const drag = useRef<{ axis: number; from: number } | null>(null);
  const height = 320;
  const xOf = (i: number, width: number) =>
    axes.length === 1 ? width / 2 : PAD.side + (i * (width - 2 * PAD.side)) / (axes.length - 1);
  const yOf = (p: number) => PAD.top + (1 - p) * (height - PAD.top - PAD.bottom);
  const positionAt = (y: number) => Math.min(1, Math.max(0, 1 - (y - PAD.top) / (height - PAD.top - PAD.bottom)));
  const brushed = Object.keys(brushes).length > 0;
  const inside = useMemo(
    () => rows.filter((r) => inBrushes(axes, r.values, brushes)).map((r) => r.id),
    [axes, rows, brushes],
  );
  // Dragging along an axis brushes a range of it; a click on an axis (no range) clears its own.
  const onDrag = (phase: "start" | "move" | "end", at: At) => {
    if (phase === "start") {
      const axis = axes.findIndex((_, i) => Math.abs(at.x - xOf(i, at.width)) <= 14);
      drag.current = axis < 0 ? null : { axis, from: positionAt(at.y) };
      return;
    }
    const now = drag.current;
    if (!now) return;
    const to = positionAt(at.y);
    const range: [number, number] = [Math.min(now.from, to), Math.max(now.from, to)];
    setBrushes((old) => {
      const next = { ...old };
      if (phase === "end" && range[1] - range[0] < 0.01) delete next[now.axis];
      else next[now.axis] = range;
      return next;
    });
    if (phase === "end") drag.current = null;
  };
  const draw = useMemo(
    () => (ctx: CanvasRenderingContext2D, width: number) => {
      ctx.strokeStyle = "#9ca3af";
      ctx.lineWidth = 1;
      axes.forEach((_, i) => {
        ctx.beginPath();
        ctx.moveTo(xOf(i, width), yOf(0));
        ctx.lineTo(xOf(i, width), yOf(1));
        ctx.stroke();
      });
      ctx.lineWidth = 1.2;
      // Outside the brushed ranges: light grey, under the rest.
      const out = worstFirst.filter((r) => !inBrushes(axes, rows[r].values, brushes));
      const kept = worstFirst.filter((r) => inBrushes(axes, rows[r].values, brushes));
      const ticked = kept.filter((r) => selected.has(rows[r].id));
      for (const r of [...out, ...kept, ...ticked]) {
        const mark = selected.has(rows[r].id);
        const faded = brushed && !inBrushes(axes, rows[r].values, brushes);
        ctx.strokeStyle = faded ? "#e5e7eb" : mark ? "#111827" : colours[r];
        ctx.lineWidth = mark && !faded ? 2.5 : 1.2;
        ctx.beginPath();
        let drawing = false;
        rows[r].values.forEach((v, i) => {
          const p = axes[i].position(v);
          if (p === null) { drawing = false; return; }
          const x = xOf(i, width), y = yOf(p);
          if (drawing) ctx.lineTo(x, y); else ctx.moveTo(x, y);
          drawing = true;
        });
        ctx.stroke();
      }
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [axes, rows, colours, worstFirst, selected, brushes, brushed],
  );
  if (rows.length === 0) return <p className="muted">No trial has reported the searcher metric yet.</p>;
  return (
    <div>
      <p className="muted">Drag along an axis to keep the trials in that range; click the axis to let it go.</p>
      <CanvasPlot
        height={height}
        label={`parallel coordinates of ${rows.length} trials over ${axes.map((a) => a.name).join(", ")}`}
        draw={draw}
        onDrag={onDrag}
        overlay={(width) => axes.map((a, i) => (
          <div key={a.name} className="pc-axis" style={{ left: xOf(i, width) }}>
            <span className="pc-axis-name" style={{ top: 4 }}>{a.name}</span>
            {a.ticks.map((t, k) => (
              <span key={k} className="pc-tick" style={{ top: yOf(t.at) - 7 }}>{t.label}</span>
            ))}
            {brushes[i] && (
              <span
                className="pc-brush"
                role="img"
                aria-label={`${a.name} brushed`}
                style={{ top: yOf(brushes[i][1]), height: yOf(brushes[i][0]) - yOf(brushes[i][1]) }}
              />
            )}
          </div>
        ))}
      />
      {brushed && (
        <BrushedTrials inside={inside} total={rows.length} where="the brushed ranges" onClear={() => setBrushes({})} />
      )}
    </div>
  );
}

function Scatter({ experiment, trials, selected }: { experiment: Experiment; trials: Trial[]; selected: Set<number> }) {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const [hover, setHover] = useState<{ row: number; x: number; y: number } | null>(null);
  const { axes, rows, colours } = usePrepared(experiment, trials);
  const names = axes.slice(0, -1).map((a) => a.name);
  const chosen = names.includes(params.get("hp") ?? "") ? params.get("hp")! : names[0];
  const index = names.indexOf(chosen);
  const xAxis = axes[index];
  // The metric on a log scale when asked (`slog=1`) and every value is above zero.
  const logMetric = params.get("slog") === "1";
  const linearY = axes[axes.length - 1];
  const yAxis = useMemo(
    () => (logMetric ? makeAxis(linearY.name, rows.map((r) => r.metric), { log: true }) : linearY),
    [logMetric, linearY, rows],
  );
  const height = 300;
  const left = 70, right = 20, top = 34, bottom = 40;
  const xOf = (p: number, width: number) => left + p * (width - left - right);
  const yOf = (p: number) => top + (1 - p) * (height - top - bottom);
  const brush = useBoxBrush((at) => ({
    x: (at.x - left) / (at.width - left - right),
    y: 1 - (at.y - top) / (height - top - bottom),
  }));
  // A box belongs to the axes it was drawn over: another hyperparameter or scale lets it go.
  const clearBox = brush.clear;
  useEffect(() => clearBox(), [chosen, logMetric, clearBox]);
  const box = brush.box;
  const inside = useMemo(
    () => (box ? rows.filter((r) => inBox(box, xAxis?.position(r.values[index]), yAxis.position(r.metric))).map((r) => r.id) : []),
    [box, rows, xAxis, yAxis, index],
  );
  const draw = useMemo(
    () => (ctx: CanvasRenderingContext2D, width: number) => {
      if (!xAxis) return;
      ctx.strokeStyle = "#9ca3af";
      ctx.beginPath();
      ctx.moveTo(xOf(0, width), yOf(1));
      ctx.lineTo(xOf(0, width), yOf(0));
      ctx.lineTo(xOf(1, width), yOf(0));
      ctx.stroke();
      rows.forEach((r, i) => {
        const px = xAxis.position(r.values[index]);
        const py = yAxis.position(r.metric);
        if (px === null || py === null) return;
        // Outside a dragged box: light grey.
        ctx.fillStyle = box && !inBox(box, px, py) ? "#e5e7eb" : colours[i];
        ctx.beginPath();
        ctx.arc(xOf(px, width), yOf(py), 3.5, 0, 2 * Math.PI);
        ctx.fill();
        if (selected.has(r.id)) {
          ctx.strokeStyle = "#111827";
          ctx.lineWidth = 2;
          ctx.beginPath();
          ctx.arc(xOf(px, width), yOf(py), 6, 0, 2 * Math.PI);
          ctx.stroke();
        }
      });
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [xAxis, yAxis, rows, colours, index, selected, box],
  );
  /** The trial whose point is nearest (x, y), within 8 pixels. */
  const nearest = (at: At) =>
    nearestPoint(
      rows.map((r) => {
        const px = xAxis?.position(r.values[index]);
        const py = yAxis.position(r.metric);
        return px == null || py == null ? null : { x: xOf(px, at.width), y: yOf(py) };
      }),
      at,
      8,
    );
  if (!names.length) return <p className="muted">No hyperparameter is searched.</p>;
  if (rows.length === 0) return <p className="muted">No trial has reported the searcher metric yet.</p>;
  const shown = hover ? rows[hover.row] : null;
  return (
    <div>
      <label>
        Hyperparameter{" "}
        <select
          aria-label="hyperparameter to plot"
          value={chosen}
          onChange={(ev) => {
            const next = new URLSearchParams(params);
            next.set("hp", ev.target.value);
            setParams(next, { replace: true });
          }}
        >
          {names.map((n) => <option key={n}>{n}</option>)}
        </select>
      </label>{" "}
      <label className="check">
        <input
          type="checkbox"
          checked={logMetric}
          onChange={(ev) => {
            const next = new URLSearchParams(params);
            if (ev.target.checked) next.set("slog", "1");
            else next.delete("slog");
            setParams(next, { replace: true });
          }}
        />
        {yAxis.name} on a log scale
      </label>
      {logMetric && yAxis.kind !== "log" && <span className="muted"> (not every value is above zero: shown linear)</span>}
      <CanvasPlot
        height={height}
        label={`${yAxis.name} against ${chosen} for ${rows.length} trials`}
        draw={draw}
        overlay={(width) => (
          <XYOverlay
            width={width} height={height} left={left} x={xAxis} y={yAxis} xOf={xOf} yOf={yOf}
            tip={hover && shown && {
              at: hover,
              text: `trial ${shown.id}: ${chosen} ${hparam(shown.values[index])}, ${yAxis.name} ${num(shown.metric)}`,
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
