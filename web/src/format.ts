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
