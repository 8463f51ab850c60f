// Experiments: the list with its filters, paging and row actions; all of it in the URL.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { api, ok, type ExperimentState, type ExperimentSummary, type Schemas } from "../api/client";
import { Duration, ErrorLine, ExperimentActions, Loading, StateBadge, StateChecks } from "../components/bits";
import { Table, type Column } from "../components/Table";
import { NO_VALUE, num, progressOf, when } from "../format";
import { useLiveEvents } from "../live";
import { parseOffset, pickEnum } from "../params";
import { useTitle } from "../title";

const STATES: ExperimentState[] = [
  "ACTIVE", "PAUSED", "STOPPING_COMPLETED", "STOPPING_CANCELED", "STOPPING_KILLED",
  "STOPPING_ERROR", "COMPLETED", "CANCELED", "ERROR",
];
const PAGE = 100;

type SortKey = Schemas["ExperimentSort"];
/** The columns the API sorts the whole list by (column key = the API's sort key). */
const SORT_KEYS: SortKey[] = ["id", "name", "state", "start", "end", "best", "user", "progress", "trials", "duration"];

function trialCount(e: ExperimentSummary): number {
  return Object.values(e.trials ?? {}).reduce((a: number, b) => a + Number(b), 0);
}

const columns: Column<ExperimentSummary>[] = [
  { key: "id", header: "ID", value: (e) => e.id, cell: (e) => <Link to={`/experiments/${e.id}`}>{e.id}</Link> },
  { key: "name", header: "Name", value: (e) => e.name, cell: (e) => <Link to={`/experiments/${e.id}`}>{e.name}</Link> },
  {
    key: "state", header: "State", value: (e) => e.state,
    cell: (e) => (<>
      <StateBadge state={e.state} />
      {e.archived && <span className="tag">archived</span>}
    </>),
  },
  // Beside the state, so a narrow window shows them without scrolling sideways.
  {
    key: "actions", header: "Actions",
    cell: (e) => <ExperimentActions id={e.id} state={e.state} archived={e.archived} owner={e.owner} compact />,
  },
  {
    key: "progress", header: "Progress", value: (e) => progressOf(e).value,
    cell: (e) => {
      const shown = progressOf(e);
      return (
        <span className="progress-cell">
          <progress max={1} value={shown.value} title={shown.text} aria-label={`progress: ${shown.text}`} />
          <span className="muted num">{shown.text}</span>
        </span>
      );
    },
  },
  {
    key: "best", header: "Best metric", value: (e) => e.best_trial?.best_validation,
    cell: (e) => e.best_trial?.best_validation != null
      ? `${num(e.best_trial.best_validation)}${e.searcher.metric ? ` (${e.searcher.metric})` : ""}` : "",
  },
  { key: "trials", header: "Trials", value: (e) => trialCount(e), cell: (e) => trialCount(e), className: "num" },
  { key: "user", header: "User", value: (e) => e.owner, cell: (e) => e.owner },
  { key: "start", header: "Submitted", value: (e) => e.created_at, cell: (e) => when(e.created_at) },
  {
    // From its first trial's start: one whose trials never ran (none yet, or all still
    // queued) has no duration yet.
    key: "duration", header: "Duration",
    value: (e) => (e.started_at != null ? (e.ended_at ?? Date.now() / 1000) - e.started_at : null),
    cell: (e) => (e.started_at != null ? <Duration start={e.started_at} end={e.ended_at} /> : NO_VALUE),
  },
];

export function ExperimentsPage() {
  useTitle("Experiments");
  const [params, setParams] = useSearchParams();
  // States in any case (`active`); what is not a state is left out, not sent to the API.
  const states = pickEnum(params.getAll("state"), STATES);
  const user = params.get("user") ?? "";
  const name = params.get("name") ?? "";
  const label = params.get("label") ?? "";
  const archived = params.get("archived") === "1";
  const offset = parseOffset(params.get("offset"));

  // The column sorted by (`sort=key`, `-key` descending) is the API's sort of the whole list.
  const sortParam = params.get("sort") ?? "";
  const descending = sortParam.startsWith("-");
  const sortKey = (descending ? sortParam.slice(1) : sortParam) as SortKey;
  const sort = SORT_KEYS.includes(sortKey) ? sortKey : undefined;
  // Newest first unless a column is chosen.
  const order = sort ? (descending ? "desc" : "asc") : "desc";

  useLiveEvents({});
  const query = useQuery({
    queryKey: ["experiments", states, user, name, label, archived, sort, order, offset],
    queryFn: () =>
      ok(api.GET("/api/v1/experiments", {
        params: {
          query: {
            state: states, user: user || undefined, name: name || undefined,
            label: label || undefined, archived, sort, order, limit: PAGE, offset,
          },
        },
      })),
    placeholderData: keepPreviousData,
  });
  const rows = query.data?.experiments ?? [];

  const set = (key: string, value: string | string[] | null) => {
    const next = new URLSearchParams(params);
    next.delete(key);
    if (Array.isArray(value)) value.forEach((v) => next.append(key, v));
    else if (value) next.set(key, value);
    if (key !== "offset") next.delete("offset");
    setParams(next, { replace: true });
  };
  const total = query.data?.pagination.total ?? 0;
  // An offset past the end (an old link, a list that shrank) shows the last page instead.
  const lastPage = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);
  const beyond = query.data !== undefined && !query.isPlaceholderData && offset > 0 && offset >= total;
  useEffect(() => {
    if (beyond) set("offset", lastPage ? String(lastPage) : null);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [beyond, lastPage]);

  // Experiments ticked for a comparison (kept across pages and filters until compared).
  const [picked, setPicked] = useState<number[]>([]);
  const withPicks = useMemo<Column<ExperimentSummary>[]>(() => [
    {
      key: "pick", header: "Compare",
      cell: (e) => (
        <input
          type="checkbox"
          aria-label={`compare experiment ${e.id}`}
          checked={picked.includes(e.id)}
          onChange={(ev) => setPicked((old) => (ev.target.checked ? [...old, e.id] : old.filter((x) => x !== e.id)))}
        />
      ),
    },
    ...columns,
  ], [picked]);

  return (
    <section>
      <h1>
        Experiments
        {picked.length > 0 && (
          <Link className="button" to={`/compare?ids=${[...picked].sort((a, b) => a - b).join(",")}`}>
            Compare {picked.length}
          </Link>
        )}
      </h1>
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name <input value={name} onChange={(e) => set("name", e.target.value)} placeholder="contains" />
        </label>
        <label>
          User <input value={user} onChange={(e) => set("user", e.target.value)} placeholder="whole name" />
        </label>
        <label>
          Label <input value={label} onChange={(e) => set("label", e.target.value)} />
        </label>
        <StateChecks states={STATES} chosen={states} onChange={(next) => set("state", next)} />
        <label className="check">
          <input type="checkbox" checked={archived} onChange={(e) => set("archived", e.target.checked ? "1" : null)} />
          Show archived
        </label>
      </form>
      <ErrorLine error={query.error} />
      {query.isPending ? <Loading /> : (
        <Table label="experiments" presorted defaultSort="-id" rows={rows} columns={withPicks} rowKey={(e) => e.id} empty="No experiments match." />
      )}
      <div className="pager">
        <button type="button" disabled={offset === 0} onClick={() => set("offset", String(Math.max(0, offset - PAGE)))}>
          Previous
        </button>
        <span>
          {total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total}` : "0"}
        </span>
        <button type="button" disabled={offset + PAGE >= total} onClick={() => set("offset", String(offset + PAGE))}>
          Next
        </button>
      </div>
    </section>
  );
}
