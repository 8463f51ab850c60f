// How values are shown.
export function when(seconds: number | null | undefined): string {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleString();
}

/** What a cell shows for a value there is none of (a duration of something that never ran). */
export const NO_VALUE = "—";

export function duration(start: number, end: number | null | undefined): string {
  const total = Math.max(0, Math.round((end ?? Date.now() / 1000) - start));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

export function num(value: number | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 1e4 || Math.abs(value) < 1e-3 ? value.toExponential(3) : value.toPrecision(4);
}

export function percent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}

export function hparam(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return num(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/**
 * What an experiment's progress truly says. While it runs, or once it completed: the share of
 * its search done. Once it ended otherwise (ERROR, CANCELED), how many of its trials completed:
 * a search whose trials all failed has nothing left to do, but it did none of it.
 */
export function progressOf(e: { state: string; progress: number; trials: Record<string, number> }): {
  value: number;
  text: string;
} {
  if (e.state !== "ERROR" && e.state !== "CANCELED") return { value: e.progress, text: percent(e.progress) };
  const total = Object.values(e.trials).reduce((a, b) => a + b, 0);
  const completed = e.trials.COMPLETED ?? 0;
  return {
    value: total ? completed / total : 0,
    text: `${completed} of ${total} trial${total === 1 ? "" : "s"} completed`,
  };
}
