// Pure helpers of the hyperparameter views: which hyperparameters were searched, and axes that
// place any of their values (numbers on a linear or log scale, anything else as categories).
import { hparam, num } from "./format";

/** A searched hyperparameter: its dotted name and its type in the config. */
export interface Searched {
  name: string;
  type: string;
  /** A categorical's values in the config's order (so axes keep it). */
  order?: unknown[];
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The searched hyperparameters of a config's `hyperparameters` (constants left out), dotted
 * when nested, in definition order. */
export function searchedHparams(space: unknown, prefix = ""): Searched[] {
  if (!isMap(space)) return [];
  const out: Searched[] = [];
  for (const [key, def] of Object.entries(space)) {
    const name = `${prefix}${key}`;
    if (!isMap(def)) continue; // a bare value is a constant
    const type = def.type;
    if (typeof type !== "string") {
      out.push(...searchedHparams(def, `${name}.`));
    } else if (type !== "const") {
      out.push({ name, type, order: type === "categorical" && Array.isArray(def.vals) ? def.vals : undefined });
    }
  }
  return out;
}

/** The value at a dotted name of a trial's (nested) hyperparameters. */
export function valueAt(hparams: unknown, name: string): unknown {
  let node: unknown = hparams;
  for (const part of name.split(".")) {
    if (!isMap(node) || !(part in node)) return undefined;
    node = node[part];
  }
  return node;
}

/** Where a value sits on an axis (0 at the bottom, 1 at the top), and what its ticks say. */
export interface Axis {
  name: string;
  kind: "linear" | "log" | "category";
  position: (value: unknown) => number | null;
  ticks: { at: number; label: string }[];
}

const key = (v: unknown) => JSON.stringify(v) ?? "null";

/** An axis for `values`: numeric when every one is a finite number (log-scaled when asked and
 * all are above zero), else one evenly spaced category per distinct value. */
export function makeAxis(name: string, values: unknown[], opts: { log?: boolean; order?: unknown[] } = {}): Axis {
  const present = values.filter((v) => v !== undefined);
  const numeric = present.length > 0 && present.every((v) => typeof v === "number" && Number.isFinite(v));
  if (numeric) {
    const numbers = present as number[];
    const log = !!opts.log && numbers.every((v) => v > 0);
    const f = log ? Math.log10 : (v: number) => v;
    // A loop, not Math.min(...): spreading 50,000 trials' values overflows the call stack.
    let lo = Infinity, hi = -Infinity;
    for (const v of numbers) { const x = f(v); if (x < lo) lo = x; if (x > hi) hi = x; }
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    const position = (v: unknown) =>
      typeof v === "number" && Number.isFinite(v) && (!log || v > 0) ? (f(v) - lo) / (hi - lo) : null;
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((at) => {
      const raw = lo + at * (hi - lo);
      return { at, label: num(log ? 10 ** raw : raw) };
    });
    return { name, kind: log ? "log" : "linear", position, ticks };
  }
  const seen = new Map<string, unknown>();
  for (const v of opts.order ?? []) seen.set(key(v), v);
  const found = new Map<string, unknown>();
  for (const v of present) found.set(key(v), v);
  // The config's order first (for those trials drew), then any others sorted by their text.
  const ordered = [...seen.keys()].filter((k) => found.has(k));
  ordered.push(...[...found.keys()].filter((k) => !seen.has(k)).sort());
  const index = new Map(ordered.map((k, i) => [k, i]));
  // Each category in the middle of its own band, so none sits on the plot's edge.
  const at = (i: number) => (i + 0.5) / ordered.length;
  return {
    name,
    kind: "category",
    position: (v) => (v === undefined || !index.has(key(v)) ? null : at(index.get(key(v))!)),
    ticks: ordered.map((k, i) => ({ at: at(i), label: hparam(found.get(k)) })),
  };
}

/** Red, green and blue of a goodness: 0 (best) dark blue to 1 (worst) orange. */
export function rankRgb(fraction: number): [number, number, number] {
  const t = Math.min(Math.max(fraction, 0), 1);
  return [Math.round(31 + t * (255 - 31)), Math.round(119 + t * (127 - 119)), Math.round(180 + t * (14 - 180))];
}

/** Colour of a trial by how good its metric is: 0 (best) dark blue to 1 (worst) orange. */
export function rankColour(fraction: number, alpha = 0.75): string {
  const [r, g, b] = rankRgb(fraction);
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** Each metric's goodness from 0 (best) to 1 (worst), by rank, so a few outliers do not
 * wash the colours out. */
export function goodness(metrics: number[], smallerIsBetter: boolean): number[] {
  const order = metrics.map((m, i) => [m, i] as const).sort((a, b) => (smallerIsBetter ? a[0] - b[0] : b[0] - a[0]));
  const out = new Array<number>(metrics.length).fill(0);
  const span = Math.max(metrics.length - 1, 1);
  order.forEach(([, i], rank) => { out[i] = rank / span; });
  return out;
}

/** A point of an x-y plot, in its axes' 0-1 positions, with its trial's goodness (0 best). */
export interface Scored {
  x: number;
  y: number;
  g: number;
}

/** A cell of a goodness grid: the estimate (0 best, 1 worst), and how near trials are (1: one
 * at its centre, falling to 0 three bandwidths away), for the shading's opacity. */
export interface Estimate {
  g: number;
  near: number;
}

/** Goodness estimated over a `cols` x `rows` grid of the unit square (row 0 at the bottom),
 * as Optuna's contour plot interpolates between trials: each cell is the Gaussian-weighted mean
 * of the trials' goodness, null where no trial lies within three bandwidths. The bandwidth (in
 * axis units) widens for few trials (0.5 / sqrt(n), at least 0.1). Trials are binned into the
 * grid's cells first, so the cost is the grid's, not the number of trials'. */
export function goodnessGrid(points: Scored[], cols: number, rows: number): (Estimate | null)[] {
  const bandwidth = Math.max(0.1, 0.5 / Math.sqrt(Math.max(points.length, 1)));
  const sum = new Float64Array(cols * rows);
  const count = new Float64Array(cols * rows);
  for (const p of points) {
    const c = Math.min(cols - 1, Math.max(0, Math.floor(p.x * cols)));
    const r = Math.min(rows - 1, Math.max(0, Math.floor(p.y * rows)));
    sum[r * cols + c] += p.g;
    count[r * cols + c] += 1;
  }
  const filled: number[] = [];
  for (let k = 0; k < count.length; k++) if (count[k] > 0) filled.push(k);
  const centre = (k: number) => [((k % cols) + 0.5) / cols, (Math.floor(k / cols) + 0.5) / rows];
  const centres = filled.map(centre);
  const reach = (3 * bandwidth) ** 2;
  const floor = Math.exp(-4.5); // the kernel three bandwidths away
  const out: (Estimate | null)[] = new Array(cols * rows).fill(null);
  for (let k = 0; k < out.length; k++) {
    const [x, y] = centre(k);
    let weight = 0, total = 0, nearest = 0;
    filled.forEach((f, i) => {
      const d = (centres[i][0] - x) ** 2 + (centres[i][1] - y) ** 2;
      if (d > reach) return;
      const kernel = Math.exp(-d / (2 * bandwidth * bandwidth));
      nearest = Math.max(nearest, kernel);
      weight += count[f] * kernel;
      total += count[f] * kernel * (sum[f] / count[f]);
    });
    if (weight > 0) out[k] = { g: total / weight, near: Math.max(0, (nearest - floor) / (1 - floor)) };
  }
  return out;
}
