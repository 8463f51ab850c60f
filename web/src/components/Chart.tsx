// Line charts with uPlot: one series per trial, x = steps completed.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Series {
  label: string;
  points: [number, number][];
  /** Markers alone, no line between them (one value per trial, say). */
  dots?: boolean;
}

const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

/** Align series on the union of their x values (uPlot's data layout), gaps as null. */
function align(series: Series[]): uPlot.AlignedData {
  const xs = Array.from(new Set(series.flatMap((s) => s.points.map((p) => p[0])))).sort(
    (a, b) => a - b,
  );
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const column: (number | null)[] = new Array(xs.length).fill(null);
    for (const [x, y] of s.points) column[index.get(x)!] = y;
    return column;
  });
  return [xs, ...ys] as uPlot.AlignedData;
}

/** The aligned data, without the values a log scale cannot show. */
function shown(series: Series[], logY: boolean): uPlot.AlignedData {
  if (!logY) return align(series);
  return align(series.map((s) => ({ ...s, points: s.points.filter(([, y]) => y > 0) })));
}

/** Markers are drawn when points are at least this far apart on average (CSS pixels). */
const SPARSE_PX = 8;

/**
 * Whether series `index` gets a marker at each point in view: always when it has one point
 * (a lone point draws no line, so without a marker it would not show at all: a validation
 * reported once), and whenever its points are sparse enough for markers not to smear the line.
 */
function markPoints(u: uPlot, index: number, first: number, last: number): boolean {
  const ys = u.data[index];
  let count = 0;
  for (let i = first; i <= last; i++) if (ys[i] != null) count++;
  return count <= 1 || count * SPARSE_PX <= u.bbox.width / uPlot.pxRatio;
}

/** Exponential moving average with weight `weight` (0: none), TensorBoard's smoothing, with
 * its debiasing so the first points are not pulled toward zero. */
export function smooth(points: [number, number][], weight: number): [number, number][] {
  if (weight <= 0) return points;
  let last = 0;
  return points.map(([x, y], i) => {
    last = last * weight + (1 - weight) * y;
    return [x, last / (1 - weight ** (i + 1))];
  });
}

export function LineChart({
  title,
  series,
  height = 260,
  logY = false,
  xLabel = "steps",
  xTime = false,
}: {
  title: string;
  series: Series[];
  height?: number;
  /** What the x axis counts. */
  xLabel?: string;
  /** The x values are times (seconds since the epoch), shown as dates and times. */
  xTime?: boolean;
  /** A logarithmic y axis (values at or below 0 are left out). */
  logY?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => `${s.label}${s.dots ? "\u0001" : ""}`).join("\u0000");

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const options: uPlot.Options = {
      title,
      width: Math.max(element.clientWidth, 300),
      height,
      scales: { x: { time: xTime }, ...(logY ? { y: { distr: 3 } } : {}) },
      axes: [{ label: xLabel }, {}],
      series: [
        { label: xLabel },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          width: s.dots ? 0 : 1.5,
          spanGaps: true,
          points: { show: s.dots ? true : markPoints, size: 6, fill: PALETTE[i % PALETTE.length] },
        })),
      ],
    };
    plot.current = new uPlot(options, shown(series, logY), element);
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: Math.max(element.clientWidth, 300), height }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the set of series changes; new points go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, title, height, logY, xLabel, xTime]);

  useEffect(() => {
    plot.current?.setData(shown(series, logY));
  }, [series, logY]);

  return <div className="chart" ref={box} aria-label={`chart: ${title}`} />;
}
