// How a search went, as optuna-dashboard shows it: each trial's result in the order trials were
// made with the best so far (optimization history), and the share of trials at or better than
// each result (the empirical distribution function).
import { useMemo } from "react";
import type { Experiment, Trial } from "../api/client";
import { LineChart, type Series } from "../components/Chart";

/** Trials with a searcher metric, by id (the order the searcher made them). */
function results(trials: Trial[]): [number, number][] {
  return trials
    .filter((t) => typeof t.best_validation === "number" && Number.isFinite(t.best_validation))
    .map((t) => [t.id, t.best_validation as number] as [number, number])
    .sort((a, b) => a[0] - b[0]);
}

export function History({ experiment, trials }: { experiment: Experiment; trials: Trial[] }) {
  const smaller = experiment.searcher.smaller_is_better;
  const metric = experiment.searcher.metric ?? "metric";
  const { history, edf } = useMemo(() => {
    const points = results(trials);
    let best: number | null = null;
    const bestSoFar = points.map(([id, v]) => {
      best = best === null || (smaller ? v < best : v > best) ? v : best;
      return [id, best] as [number, number];
    });
    const values = points.map(([, v]) => v).sort((a, b) => (smaller ? a - b : b - a));
    const share = values.map((v, i) => [v, (i + 1) / values.length] as [number, number]);
    // uPlot wants increasing x: a larger-is-better metric's EDF is read from the right.
    share.sort((a, b) => a[0] - b[0]);
    const hist: Series[] = [
      { label: `${metric} of each trial`, points, dots: true },
      { label: "best so far", points: bestSoFar },
    ];
    const cdf: Series[] = [{ label: `share of trials at ${metric} or better`, points: share }];
    return { history: hist, edf: cdf };
  }, [trials, smaller, metric]);
  if (history[0].points.length === 0) return <p className="muted">No trial has reported {metric} yet.</p>;
  return (
    <div className="charts">
      <LineChart title="Optimization history" series={history} xLabel="trial" />
      <LineChart title="Distribution of results (EDF)" series={edf} xLabel={metric} />
    </div>
  );
}
