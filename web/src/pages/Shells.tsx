// Shells: sshd started on a slot (or none) from the form, listed (those running or waiting;
// ended ones too with the box) with the command that opens a terminal in one (SSH from the
// user's own terminal, through the master: a page cannot open one), killed, and its output on
// its task's page.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ok, type Shell } from "../api/client";
import { ErrorLine, Loading, StateBadge } from "../components/bits";
import { CopyCommand, hasEnded, KillButton, listKey, LogsLink, STARTING_POLL_MS, useShowEnded } from "../components/Interactive";
import { StartForm } from "../components/StartForm";
import { Table, type Column } from "../components/Table";
import { NO_VALUE, when } from "../format";
import { useLiveEvents } from "../live";
import "./interactive.css";
import { useTitle } from "../title";

const columns: Column<Shell>[] = [
  { key: "id", header: "ID", value: (s) => s.id, cell: (s) => s.id },
  { key: "name", header: "Name", value: (s) => s.name, cell: (s) => s.name },
  {
    key: "state", header: "State", value: (s) => s.state,
    cell: (s) => (
      <span title={s.message || undefined}>
        <StateBadge state={s.state} />
        {s.ready && <span className="tag ready">ready</span>}
        {!s.ready && s.state === "RUNNING" && <span className="tag">starting</span>}
      </span>
    ),
  },
  { key: "user", header: "User", value: (s) => s.user, cell: (s) => s.user },
  { key: "slots", header: "Slots", className: "num", value: (s) => s.slots, cell: (s) => s.slots },
  { key: "pool", header: "Pool", value: (s) => s.resource_pool, cell: (s) => s.resource_pool },
  { key: "started", header: "Started", value: (s) => s.created_at, cell: (s) => when(s.created_at) },
  { key: "ended", header: "Ended", value: (s) => s.ended_at, cell: (s) => (s.ended_at ? when(s.ended_at) : NO_VALUE) },
  {
    key: "command", header: "Open it from a terminal",
    cell: (s) => (hasEnded(s.state) ? NO_VALUE : <CopyCommand text={`assay shell open ${s.id}`} />),
  },
  {
    key: "actions", header: "Actions",
    cell: (s) => (
      <span className="actions compact">
        {!hasEnded(s.state) && <KillButton kind="shell" id={s.id} />}
        <LogsLink kind="shell" id={s.id} />
      </span>
    ),
  },
];

export function ShellsPage() {
  useTitle("Shells");
  const client = useQueryClient();
  const [showEnded, endedBox] = useShowEnded();
  // A shell starting, running or ending changes the job queue: each change reads it again.
  useLiveEvents({ queue: true });
  const list = useQuery({
    queryKey: listKey("shell", showEnded),
    queryFn: () => ok(api.GET("/api/v1/shells", { params: { query: { all: showEnded } } })),
    // sshd starting is not a change of the queue: read again until it runs.
    refetchInterval: (q) =>
      q.state.data?.shells.some((s) => s.state === "RUNNING" && !s.ready) ? STARTING_POLL_MS : false,
  });
  return (
    <section className="interactive">
      <h1>Shells</h1>
      <p className="muted">
        An SSH server on a slot of a resource pool (0 slots: none), reached through the master by
        its owner and admins. Open a terminal in one with the command shown (it waits until the
        shell runs); for VS Code's Remote-SSH or an <code>~/.ssh/config</code>,{" "}
        <code>assay shell show-ssh-command ID</code> prints the ssh command line. Each is a job: its
        output is on its Logs page.
      </p>
      <StartForm kind="shell" onStarted={() => client.invalidateQueries({ queryKey: ["task"] })} />
      <div className="filters">{endedBox}</div>
      <ErrorLine error={list.error} />
      {list.isPending ? (
        <Loading />
      ) : (
        <Table
          label="shells"
          rows={list.data?.shells ?? []}
          columns={columns}
          rowKey={(s) => s.id}
          defaultSort="-id"
          height={480}
          empty={showEnded ? "No shells." : "No shell is running or waiting."}
        />
      )}
    </section>
  );
}
