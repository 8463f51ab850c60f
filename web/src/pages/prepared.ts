// What the hyperparameter plots share: the searched hyperparameters and the metric as axes, and
// each trial that reported the metric, coloured by its rank.
import { useMemo } from "react";
import type { Experiment, Trial } from "../api/client";
import { goodness, makeAxis, rankColour, searchedHparams, valueAt, type Axis } from "../analysis";

/** Trials whose metric the views plot: those with a searcher metric. */
export function withMetric(trials: Trial[]): (Trial & { best_validation: number })[] {
  return trials.filter((t): t is Trial & { best_validation: number } => typeof t.best_validation === "number" && Number.isFinite(t.best_validation));
}

/** The parallel coordinates' padding, in CSS pixels. */
export const PAD = { top: 34, bottom: 22, side: 70 };

export interface Prepared {
  axes: Axis[];
  rows: { id: number; values: unknown[]; metric: number }[];
  colours: string[];
  /** Each row's goodness by the rank of its metric: 0 (best) to 1 (worst). */
  good: number[];
  /** Rows' indices, worst metric first: drawn in this order, the best end up on top. */
  worstFirst: number[];
}

/** The axes (searched hyperparameters, then the metric) and each plotted trial's values. */
export function usePrepared(experiment: Experiment, trials: Trial[]): Prepared {
  return useMemo(() => {
    const space = (experiment.config as Record<string, unknown>)?.hyperparameters;
    const searched = searchedHparams(space);
    const plotted = withMetric(trials);
    const axes = searched.map((s) =>
      makeAxis(s.name, plotted.map((t) => valueAt(t.hparams, s.name)), {
        log: s.type === "log" || s.type === "lognormal",
        order: s.order,
      }),
    );
    const metrics = plotted.map((t) => t.best_validation);
    axes.push(makeAxis(experiment.searcher.metric ?? "metric", metrics));
    const good = goodness(metrics, experiment.searcher.smaller_is_better);
    return {
      axes,
      rows: plotted.map((t) => ({ id: t.id, values: [...searched.map((s) => valueAt(t.hparams, s.name)), t.best_validation], metric: t.best_validation })),
      colours: good.map((g) => rankColour(g, plotted.length > 500 ? 0.35 : 0.75)),
      good,
      worstFirst: good.map((_, i) => i).sort((a, b) => good[b] - good[a]),
    };
  }, [experiment, trials]);
}

