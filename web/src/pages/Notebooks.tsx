// Notebooks: JupyterLab started on a slot (or none) from the form, listed (those running or
// waiting; ended ones too with the box), opened in a new tab once it runs, killed, and its
// output on its task's page.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ok, type Notebook } from "../api/client";
import { ErrorLine, Loading, StateBadge } from "../components/bits";
import { hasEnded, KillButton, listKey, LogsLink, STARTING_POLL_MS, useShowEnded } from "../components/Interactive";
import { OpenNotebook } from "../components/OpenNotebook";
import { StartForm } from "../components/StartForm";
import { Table, type Column } from "../components/Table";
import { NO_VALUE, when } from "../format";
import { useLiveEvents } from "../live";
import "./interactive.css";
import { useTitle } from "../title";

const columns: Column<Notebook>[] = [
  { key: "id", header: "ID", value: (b) => b.id, cell: (b) => b.id },
  { key: "name", header: "Name", value: (b) => b.name, cell: (b) => b.name },
  { key: "state", header: "State", value: (b) => b.state, cell: (b) => <NotebookState book={b} /> },
  { key: "user", header: "User", value: (b) => b.user, cell: (b) => b.user },
  { key: "slots", header: "Slots", className: "num", value: (b) => b.slots, cell: (b) => b.slots },
  { key: "pool", header: "Pool", value: (b) => b.resource_pool, cell: (b) => b.resource_pool },
  {
    key: "idle", header: "Idle timeout", value: (b) => b.idle_timeout,
    cell: (b) => (b.idle_timeout === null ? <span className="muted">never</span> : seconds(b.idle_timeout)),
  },
  { key: "started", header: "Started", value: (b) => b.created_at, cell: (b) => when(b.created_at) },
  { key: "ended", header: "Ended", value: (b) => b.ended_at, cell: (b) => (b.ended_at ? when(b.ended_at) : NO_VALUE) },
  {
    key: "actions", header: "Actions",
    cell: (b) => (
      <span className="actions compact">
        {!hasEnded(b.state) && <OpenNotebook book={b} />}
        {!hasEnded(b.state) && <KillButton kind="notebook" id={b.id} />}
        <LogsLink kind="notebook" id={b.id} />
      </span>
    ),
  },
];

function NotebookState({ book }: { book: Notebook }) {
  return (
    <span title={book.message || undefined}>
      <StateBadge state={book.state} />
      {book.ready && <span className="tag ready">ready</span>}
      {!book.ready && book.state === "RUNNING" && <span className="tag">starting</span>}
    </span>
  );
}

export function NotebooksPage() {
  useTitle("Notebooks");
  const client = useQueryClient();
  const [showEnded, endedBox] = useShowEnded();
  // A notebook starting, running or ending changes the job queue: each change reads it again.
  useLiveEvents({ queue: true });
  const list = useQuery({
    queryKey: listKey("notebook", showEnded),
    queryFn: () => ok(api.GET("/api/v1/notebooks", { params: { query: { all: showEnded } } })),
    // Its process starting is not a change of the queue: read again until it runs.
    refetchInterval: (q) =>
      q.state.data?.notebooks.some((b) => b.state === "RUNNING" && !b.ready) ? STARTING_POLL_MS : false,
  });
  return (
    <section className="interactive">
      <h1>Notebooks</h1>
      <p className="muted">
        JupyterLab on a slot of a resource pool (0 slots: none, on an agent's CPU), served by the
        master to its owner and admins. Each is a job: its output is on its Logs page. From a
        terminal: <code>assay notebook start</code>, <code>assay notebook open ID</code>.
      </p>
      <StartForm kind="notebook" onStarted={() => client.invalidateQueries({ queryKey: ["task"] })} />
      <div className="filters">{endedBox}</div>
      <ErrorLine error={list.error} />
      {list.isPending ? (
        <Loading />
      ) : (
        <Table
          label="notebooks"
          rows={list.data?.notebooks ?? []}
          columns={columns}
          rowKey={(b) => b.id}
          defaultSort="-id"
          height={480}
          empty={showEnded ? "No notebooks." : "No notebook is running or waiting."}
        />
      )}
    </section>
  );
}

/** Seconds as the config writes them: 1800 -> "30m". */
function seconds(total: number): string {
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]] as const)
    if (total >= size && Number.isInteger(total / size)) return `${total / size}${unit}`;
  return `${total}s`;
}
