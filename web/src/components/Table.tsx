// A virtualised table: only the rows in view are in the DOM, so 50,000 rows scroll smoothly.
// Sorting is by column header buttons; the sort lives in the URL (`sort=key` / `sort=-key`).
import { useVirtualizer } from "@tanstack/react-virtual";
import { useMemo, useRef, type ReactNode } from "react";
import { useSearchParams } from "react-router-dom";

export interface Column<T> {
  key: string;
  header: string;
  cell: (row: T) => ReactNode;
  /** What the column sorts by; without it the column does not sort. */
  value?: (row: T) => string | number | null | undefined;
  className?: string;
}

interface Props<T> {
  rows: T[];
  columns: Column<T>[];
  rowKey: (row: T) => string | number;
  /** The URL search parameter holding the sort (one table per page may use the default). */
  sortParam?: string;
  label: string;
  height?: number;
  empty?: ReactNode;
  /** The rows come sorted by the server as the URL says: the table only shows the sort. */
  presorted?: boolean;
  /** The order rows come in when the URL names none (`key` or `-key`): its marker is shown. */
  defaultSort?: string;
}

const ROW_HEIGHT = 34;

export function Table<T>({
  rows,
  columns,
  rowKey,
  sortParam = "sort",
  label,
  height = 560,
  empty = "Nothing here.",
  presorted = false,
  defaultSort = "",
}: Props<T>) {
  const [params, setParams] = useSearchParams();
  const sort = params.get(sortParam) || defaultSort;
  const descending = sort.startsWith("-");
  const sortKey = descending ? sort.slice(1) : sort;
  const sorted = useMemo(() => {
    const column = columns.find((c) => c.key === sortKey);
    if (presorted || !column?.value) return rows;
    const value = column.value;
    const out = [...rows];
    out.sort((a, b) => compare(value(a), value(b)) * (descending ? -1 : 1));
    return out;
  }, [rows, columns, sortKey, descending, presorted]);

  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: sorted.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const top = items.length ? items[0].start : 0;
  const bottom = items.length ? virtualizer.getTotalSize() - items[items.length - 1].end : 0;

  const toggle = (key: string) => {
    const next = new URLSearchParams(params);
    next.set(sortParam, sortKey === key && !descending ? `-${key}` : key);
    setParams(next, { replace: true });
  };

  return (
    <div className="table-scroll" ref={scroller} style={{ maxHeight: height }}>
      <table aria-label={label} aria-rowcount={sorted.length}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th
                key={c.key}
                className={[c.className, c.value ? "sortable" : ""].filter(Boolean).join(" ") || undefined}
                aria-sort={
                  sortKey === c.key ? (descending ? "descending" : "ascending") : undefined
                }
              >
                {c.value ? (
                  <button type="button" className="sort" onClick={() => toggle(c.key)}>
                    {c.header}
                    {sortKey === c.key ? (descending ? " ▼" : " ▲") : ""}
                  </button>
                ) : (
                  c.header
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sorted.length === 0 && (
            <tr>
              <td colSpan={columns.length} className="empty">
                {empty}
              </td>
            </tr>
          )}
          {top > 0 && <tr style={{ height: top }} aria-hidden="true" />}
          {items.map((item) => {
            const row = sorted[item.index];
            return (
              <tr key={rowKey(row)} style={{ height: ROW_HEIGHT }} data-index={item.index}>
                {columns.map((c) => (
                  <td key={c.key} className={c.className}>
                    {c.cell(row)}
                  </td>
                ))}
              </tr>
            );
          })}
          {bottom > 0 && <tr style={{ height: bottom }} aria-hidden="true" />}
        </tbody>
      </table>
    </div>
  );
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}
