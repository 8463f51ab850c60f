// What the hyperparameter plots share when a user narrows them: a box dragged over an x-y plot,
// and the line that says how many trials a brush keeps and ticks them in the trials table.
import { useCallback, useRef, useState } from "react";
import { useSearchParams } from "react-router-dom";
import type { At, Box } from "../components/CanvasPlot";


/** Whether the point at positions (px, py) lies in `box`. */
export function inBox(box: Box, px: number | null | undefined, py: number | null | undefined): boolean {
  return px != null && py != null && px >= box.x[0] && px <= box.x[1] && py >= box.y[0] && py <= box.y[1];
}

/** A box dragged over a plot: `onDrag` goes to the CanvasPlot; `toPosition` turns the plot's
 * pixels into its axes' 0-1 positions. A press that barely moves is a click, not a box. */
export function useBoxBrush(toPosition: (at: At) => { x: number; y: number }) {
  const [box, setBox] = useState<Box | null>(null);
  const from = useRef<At | null>(null);
  const dragged = useRef(false);
  const onDrag = (phase: "start" | "move" | "end", at: At) => {
    if (phase === "start") {
      from.current = at;
      dragged.current = false;
      return;
    }
    const start = from.current;
    if (!start) return;
    if (Math.abs(at.x - start.x) > 3 || Math.abs(at.y - start.y) > 3) dragged.current = true;
    if (dragged.current) {
      const a = toPosition(start), b = toPosition(at);
      const clamp = (v: number) => Math.min(1, Math.max(0, v));
      setBox({
        x: [clamp(Math.min(a.x, b.x)), clamp(Math.max(a.x, b.x))],
        y: [clamp(Math.min(a.y, b.y)), clamp(Math.max(a.y, b.y))],
      });
    }
    if (phase === "end") from.current = null;
  };
  /** Whether the click now arriving ends a drag (and so picks nothing). */
  const endedDrag = () => {
    const was = dragged.current;
    dragged.current = false;
    return was;
  };
  // One function for the plot's life: an effect that clears on a change of axes can name it.
  const clear = useCallback(() => setBox(null), []);
  return { box, clear, onDrag, endedDrag };
}

/** "N of M trials in the …", with a button that ticks them in the trials table (the URL's
 * `trials`, which every plot highlights) and one that lets the brush go. */
export function BrushedTrials({ inside, total, where, onClear }: { inside: number[]; total: number; where: string; onClear: () => void }) {
  const [params, setParams] = useSearchParams();
  const tick = () => {
    const next = new URLSearchParams(params);
    if (inside.length) next.set("trials", inside.join(","));
    else next.delete("trials");
    setParams(next, { replace: true });
  };
  return (
    <p role="status" aria-label="brushed trials">
      {inside.length} of {total} trials in {where}{" "}
      <button type="button" onClick={tick} disabled={!inside.length}>
        Tick them in the trials table
      </button>{" "}
      <button type="button" onClick={onClear}>Clear</button>
    </p>
  );
}
