// A log as a page shows it: its lines with a search that lives in the URL (`q`), a download of
// every line, and (where the page follows the log) the Follow box, also in the URL.
import { useEffect, useMemo, useRef, type ReactNode } from "react";
import { useSearchParams } from "react-router-dom";
import { ErrorLine } from "./bits";

export function LogView({
  lines,
  fileName,
  status,
  error,
  followable = false,
  controls = null,
}: {
  /** Each line as shown (with its rank or role prefix). */
  lines: string[];
  /** The download's name. */
  fileName: string;
  /** What is said after the count ("trial ended", "following"...). */
  status: string;
  error: unknown;
  /** Offer the Follow box (`follow=0` in the URL turns following off); see {@link useFollow}. */
  followable?: boolean;
  /** More filters of the page's own, shown beside the search. */
  controls?: ReactNode;
}) {
  const [params, setParams] = useSearchParams();
  const search = params.get("q") ?? "";
  const follow = useFollow();
  const box = useRef<HTMLPreElement>(null);

  const shown = useMemo(() => {
    const needle = search.toLowerCase();
    return needle ? lines.filter((l) => l.toLowerCase().includes(needle)) : lines;
  }, [lines, search]);

  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [shown, follow]);

  const set = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value === null) next.delete(key);
    else next.set(key, value);
    setParams(next, { replace: true });
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = fileName;
    a.click();
    URL.revokeObjectURL(url);
  };

  return (
    <div className="logs">
      <div className="filters">
        <label>
          Search <input type="search" value={search} onChange={(e) => set("q", e.target.value || null)} />
        </label>
        {controls}
        {followable && (
          <label className="check">
            <input type="checkbox" checked={follow} onChange={(e) => set("follow", e.target.checked ? null : "0")} />
            Follow
          </label>
        )}
        <button type="button" onClick={download}>
          Download
        </button>
        <span className="muted">
          {shown.length} of {lines.length} lines{status ? ` · ${status}` : ""}
        </span>
      </div>
      <ErrorLine error={error} />
      <pre className="log" ref={box} aria-label="logs" tabIndex={0}>
        {shown.join("\n")}
      </pre>
    </div>
  );
}

/** Whether the page follows its log: on unless the URL says `follow=0`. */
export function useFollow(): boolean {
  const [params] = useSearchParams();
  return params.get("follow") !== "0";
}
