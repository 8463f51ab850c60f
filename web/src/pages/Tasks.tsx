// Jobs: every OpenPAI job, command and generic task, ended ones too (the job queue shows only
// those waiting or running), each linking to its page; the filters live in the URL.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "react-router-dom";
import { api, ok, type Schemas } from "../api/client";
import { Duration, ErrorLine, Loading, StateBadge, StateChecks } from "../components/bits";
import { Table, type Column } from "../components/Table";
import { when } from "../format";
import { useLiveEvents } from "../live";
import { useTitle } from "../title";

type TaskSummary = Schemas["TaskSummary"];
type TaskState = Schemas["TaskState"];

const STATES: TaskState[] = ["WAITING", "RUNNING", "STOPPING", "SUCCEEDED", "FAILED", "STOPPED"];
const ENDED: TaskState[] = ["SUCCEEDED", "FAILED", "STOPPED"];

const columns: Column<TaskSummary>[] = [
  { key: "id", header: "ID", value: (t) => t.id, cell: (t) => <Link to={`/tasks/${t.id}`}>{t.id}</Link> },
  { key: "name", header: "Name", value: (t) => t.name, cell: (t) => <Link to={`/tasks/${t.id}`}>{t.name}</Link> },
  { key: "kind", header: "Kind", value: (t) => t.kind, cell: (t) => t.kind },
  { key: "state", header: "State", value: (t) => t.state, cell: (t) => <StateBadge state={t.state} /> },
  { key: "user", header: "User", value: (t) => t.user, cell: (t) => t.user },
  {
    key: "instances", header: "Instances", className: "num", value: (t) => t.instances,
    cell: (t) => (t.running ? `${t.running} running of ${t.instances}` : t.instances),
  },
  {
    key: "started", header: "Started", value: (t) => t.started_at,
    cell: (t) => (t.started_at ? when(t.started_at) : <span className="muted">{t.ended_at ? "never" : "not yet"}</span>),
  },
  {
    key: "duration", header: "Duration",
    value: (t) => (t.started_at ? (t.ended_at ?? Date.now() / 1000) - t.started_at : null),
    cell: (t) => (t.started_at ? <Duration start={t.started_at} end={t.ended_at} /> : ""),
  },
];

export function TasksPage() {
  useTitle("Jobs");
  const [params, setParams] = useSearchParams();
  const chosen = params.getAll("state").filter((s): s is TaskState => STATES.includes(s as TaskState));
  // Ended jobs are shown unless `ended=0`: this page is where they are found once they leave
  // the queue.
  const showEnded = params.get("ended") !== "0";
  const user = params.get("user") ?? "";
  const states = showEnded ? chosen : chosen.filter((s) => !ENDED.includes(s));
  // Only ended states chosen, with ended jobs hidden: nothing can match.
  const none = chosen.length > 0 && states.length === 0;

  // A job starting, ending or being stopped changes the queue: each change reads the list again.
  useLiveEvents({ queue: true });
  const query = useQuery({
    queryKey: ["task", "list", states, showEnded, user],
    queryFn: () =>
      ok(api.GET("/api/v1/tasks", {
        params: { query: { state: states, active: !showEnded, user: user || undefined } },
      })),
    placeholderData: keepPreviousData,
    enabled: !none,
  });

  const set = (key: string, value: string | string[] | null) => {
    const next = new URLSearchParams(params);
    next.delete(key);
    if (Array.isArray(value)) value.forEach((v) => next.append(key, v));
    else if (value) next.set(key, value);
    setParams(next, { replace: true });
  };

  return (
    <section>
      <h1>Jobs</h1>
      <p className="muted">
        OpenPAI jobs, commands and generic tasks, newest first. Experiments are on the{" "}
        <Link to="/experiments">Experiments</Link> page; the <Link to="/jobs">Job queue</Link> shows what waits or runs.
      </p>
      <form className="filters" role="search" aria-label="job filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          User <input value={user} onChange={(e) => set("user", e.target.value)} />
        </label>
        <StateChecks
          states={STATES}
          chosen={chosen}
          disabled={(s) => !showEnded && ENDED.includes(s)}
          onChange={(next) => set("state", next)}
        />
        <label className="check">
          <input type="checkbox" checked={showEnded} onChange={(e) => set("ended", e.target.checked ? null : "0")} />
          Show ended
        </label>
      </form>
      <ErrorLine error={query.error} />
      {query.isPending && !none ? <Loading /> : (
        <Table
          label="jobs"
          rows={none ? [] : (query.data?.tasks ?? [])}
          columns={columns}
          rowKey={(t) => t.id}
          empty={showEnded ? "No jobs match." : "No waiting or running jobs match (ended ones are hidden)."}
        />
      )}
    </section>
  );
}
