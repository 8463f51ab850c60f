// An experiment's learning curves: one chart per metric asked (`metric=GROUP/NAME`, repeated in
// the URL; none: the searcher's), each a line per trial, with a log scale (`log=1`), smoothing
// (`smooth=0.6`) and the x-axis (`x=time`: when each point was reported; else batches) shared by
// all of them.
import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { useSearchParams } from "react-router-dom";
import { api, ok } from "../api/client";
import { ErrorLine } from "./bits";
import { LineChart, smooth, type Series } from "./Chart";

/** The most metrics charted at once. */
const MAX_CHARTS = 4;

export function Curves({ experimentId, trialIds }: { experimentId: number; trialIds: number[] }) {
  const [params, setParams] = useSearchParams();
  const asked = params.getAll("metric");
  // The first chart is the searcher's metric until one is chosen ("" asks for the default).
  const charts = asked.length ? asked.slice(0, MAX_CHARTS) : [""];
  const logY = params.get("log") === "1";
  const byTime = params.get("x") === "time";
  const smoothing = Math.min(0.99, Math.max(0, Number(params.get("smooth") ?? 0) || 0));
  const setParam = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };
  const setCharts = (metrics: string[]) => {
    const next = new URLSearchParams(params);
    next.delete("metric");
    for (const m of metrics) next.append("metric", m);
    setParams(next, { replace: true });
  };
  return (
    <div>
      <label>
        X-axis{" "}
        <select value={byTime ? "time" : "batches"} onChange={(e) => setParam("x", e.target.value === "time" ? "time" : null)}>
          <option value="batches">batches</option>
          <option value="time">time reported</option>
        </select>
      </label>{" "}
      <label className="check">
        <input type="checkbox" checked={logY} onChange={(e) => setParam("log", e.target.checked ? "1" : null)} />
        Log scale
      </label>{" "}
      <label>
        Smoothing{" "}
        <input
          type="range"
          min={0}
          max={0.99}
          step={0.01}
          value={smoothing}
          aria-valuetext={smoothing.toFixed(2)}
          onChange={(e) => setParam("smooth", Number(e.target.value) > 0 ? e.target.value : null)}
        />{" "}
        {smoothing.toFixed(2)}
      </label>
      {charts.map((metric, i) => (
        <MetricCurves
          key={`${i}:${metric}`}
          experimentId={experimentId}
          trialIds={trialIds}
          asked={metric}
          place={i}
          logY={logY}
          byTime={byTime}
          smoothing={smoothing}
          onChoose={(chosen, others) => {
            const now = charts.map((c, k) => (k === i ? chosen : c));
            // Adding a chart: the first metric not charted yet.
            setCharts(others === undefined ? now : [...now, others]);
          }}
          onRemove={i > 0 ? () => setCharts(charts.filter((_, k) => k !== i)) : undefined}
          canAdd={i === charts.length - 1 && charts.length < MAX_CHARTS}
        />
      ))}
    </div>
  );
}

/** One metric's chart: its own choice of metric, every trial's line. */
function MetricCurves({
  experimentId, trialIds, asked, place, logY, byTime, smoothing, onChoose, onRemove, canAdd,
}: {
  experimentId: number;
  trialIds: number[];
  asked: string;
  place: number;
  logY: boolean;
  byTime: boolean;
  smoothing: number;
  /** Chart `chosen` here; with `added`, also chart `added` after the last. */
  onChoose: (chosen: string, added?: string) => void;
  onRemove?: () => void;
  canAdd: boolean;
}) {
  const [group, metric] = asked ? splitChoice(asked) : [undefined, undefined];
  const ids = trialIds.join(",");
  const curves = useQuery({
    queryKey: ["curves", experimentId, ids, asked, byTime],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/metrics", {
      params: {
        path: { experiment_id: experimentId },
        query: { trial_ids: ids, group, metric, times: byTime || undefined },
      },
    })),
    enabled: trialIds.length > 0,
    placeholderData: (previous) => previous,
  });
  const data = curves.data;
  const chosen = data ? `${data.group}/${data.metric}` : asked;
  const choices = data ? (data.names.includes(chosen) || !asked ? data.names : [...data.names, chosen]) : [];
  const next = choices.find((c) => c !== chosen);
  const series: Series[] = useMemo(
    () => (data?.series ?? []).map((s) => {
      const xs = byTime && s.times ? s.times : s.steps;
      return {
        label: `trial ${s.trial_id}`,
        points: smooth(xs.map((x, i) => [x, s.values[i]] as [number, number]), smoothing),
      };
    }),
    [data, smoothing, byTime],
  );
  const name = place === 0 ? "Metric" : `Metric ${place + 1}`;
  return (
    <div className="curves" aria-busy={curves.isFetching}>
      <ErrorLine error={curves.error} />
      <label>
        {name}{" "}
        <select value={chosen} aria-label={name} onChange={(ev) => onChoose(ev.target.value)}>
          {choices.map((c) => <option key={c}>{c}</option>)}
        </select>
      </label>{" "}
      {canAdd && next !== undefined && (
        <button type="button" onClick={() => onChoose(chosen, next)}>Add a metric</button>
      )}{" "}
      {onRemove && <button type="button" aria-label={`remove ${chosen}`} onClick={onRemove}>Remove</button>}
      {data && asked && data.names.length > 0 && !data.names.includes(chosen) && (
        <p className="muted">These trials reported no metric “{asked}”: choose one above.</p>
      )}
      {data && data.names.length > 0
        ? <LineChart title={chosen} series={series} logY={logY} xTime={byTime} xLabel={byTime ? "time reported" : "batches"} />
        : data ? <p className="muted">No metrics reported yet.</p> : null}
    </div>
  );
}

function splitChoice(choice: string): [string, string] {
  const slash = choice.indexOf("/");
  return slash < 0 ? ["", choice] : [choice.slice(0, slash), choice.slice(slash + 1)];
}
