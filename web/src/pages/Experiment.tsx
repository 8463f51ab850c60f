// Experiment: state and actions, trials with hyperparameters, learning curves, config, checkpoints.
import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Link, useParams, useSearchParams } from "react-router-dom";
import { api, ok, type Experiment, type Metric, type Schemas, type Trial } from "../api/client";
import { ErrorLine, Linked, Message, ExperimentActions, Loading, StateBadge, TrialStateBadge, Duration } from "../components/bits";
import { CheckpointTable } from "../components/Checkpoints";
import { Curves } from "../components/Curves";
import { DeriveActions } from "../components/Derive";
import { DeleteExperiment, EditExperiment } from "../components/EditExperiment";
import { Table, type Column } from "../components/Table";
import { hparam, NO_VALUE, num, progressOf, when } from "../format";
import { useLiveEvents } from "../live";
import { mayAct, useMe } from "../me";
import { badId, idList, parseId } from "../params";
import { toYaml } from "../yaml";
import { Analysis } from "./ExperimentAnalysis";
import { useTitle } from "../title";

/** The most trials whose curves are drawn when none are selected. */
const DEFAULT_CURVES = 20;
/** The most trials whose curves one read of the API draws. */
const MAX_CURVES = 1000;
/** Rows asked first, so they show while the whole list (50,000 trials: seconds) loads. */
const FIRST_PAGE = 100;
/** Table sorts the API can do itself: only then is its first page the table's first rows. */
const SERVER_SORTS: Record<string, Schemas["TrialSort"]> = {
  id: "id", state: "state", steps: "steps", restarts: "restarts", best: "best",
};

export function ExperimentPage() {
  useTitle(`Experiment ${useParams().id ?? ""}`);
  const text = useParams().id;
  const id = parseId(text);
  // Not an id: said here, without asking the API about it.
  if (id === null) return <ErrorLine error={badId("experiment", text)} />;
  // Keyed by the experiment: another one's page (a fork's) starts with no dialog open.
  return <ExperimentView key={id} id={id} />;
}

function ExperimentView({ id }: { id: number }) {
  const [params, setParams] = useSearchParams();
  const [editing, setEditing] = useState(false);
  const me = useMe().data;
  useLiveEvents({ experimentId: id });
  const experiment = useQuery({
    queryKey: ["experiment", id],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}", { params: { path: { experiment_id: id } } })),
  });
  const tableSort = params.get("tsort") ?? "";
  const serverSort = SERVER_SORTS[tableSort.replace(/^-/, "") || "id"];
  const firstPage = useQuery({
    queryKey: ["trials", id, "first", tableSort],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/trials", {
      params: {
        path: { experiment_id: id },
        query: { limit: FIRST_PAGE, sort: serverSort, order: tableSort.startsWith("-") ? "desc" : "asc" },
      },
    })),
    enabled: serverSort !== undefined,
  });
  // The whole list after the first page: asked together, its read (seconds for 50,000 trials)
  // would hold the master up answering the first page and the curves.
  const trials = useQuery({
    queryKey: ["trials", id],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/trials", { params: { path: { experiment_id: id } } })),
    enabled: serverSort === undefined || firstPage.isFetched,
  });
  const checkpoints = useQuery({
    queryKey: ["checkpoints", "experiment", id],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/checkpoints", { params: { path: { experiment_id: id } } })),
  });

  const rows = trials.data?.trials ?? firstPage.data?.trials ?? [];
  const partial = !trials.data && firstPage.data ? (firstPage.data.pagination?.total ?? rows.length) : null;
  // What is not a trial id in `?trials=` is left out, not sent to the API.
  const selected = useMemo(() => new Set(idList(params.get("trials"))), [params]);
  const toggle = (trialId: number) => {
    const next = new Set(selected);
    if (next.has(trialId)) next.delete(trialId);
    else next.add(trialId);
    const out = new URLSearchParams(params);
    if (next.size) out.set("trials", [...next].sort((a, b) => a - b).join(","));
    else out.delete("trials");
    setParams(out, { replace: true });
  };

  const hparamNames = useMemo(
    () => Array.from(new Set(rows.flatMap((t) => Object.keys(t.hparams ?? {})))).sort(),
    [rows],
  );
  const metricName = experiment.data?.searcher.metric ?? "";
  const columns = useMemo<Column<Trial>[]>(() => [
    {
      key: "select", header: "Plot",
      cell: (t) => (
        <input type="checkbox" aria-label={`plot trial ${t.id}`} checked={selected.has(t.id)} onChange={() => toggle(t.id)} />
      ),
    },
    { key: "id", header: "Trial", value: (t) => t.id, cell: (t) => <Link to={`/trials/${t.id}`}>{t.id}</Link> },
    {
      key: "state", header: "State", value: (t) => t.state,
      cell: (t) => <TrialStateBadge state={t.state} earlyStopped={t.early_stopped} waitingAt={t.waiting_at} />,
    },
    ...hparamNames.map((h) => ({
      key: `hp.${h}`, header: h,
      value: (t: Trial) => { const v = t.hparams?.[h]; return typeof v === "number" ? v : hparam(v); },
      cell: (t: Trial) => hparam(t.hparams?.[h]), className: "num",
    })),
    { key: "best", header: `Best ${metricName}`, value: (t) => t.best_validation, cell: (t) => num(t.best_validation), className: "num" },
    {
      key: "latest", header: `Latest ${metricName}`,
      value: (t) => (metricName ? latestValue(t.latest_validation, metricName) : null),
      cell: (t) => num(metricName ? latestValue(t.latest_validation, metricName) : null), className: "num",
    },
    { key: "steps", header: "Steps", value: (t) => t.steps_completed, cell: (t) => t.steps_completed, className: "num" },
    { key: "restarts", header: "Restarts", value: (t) => t.restarts, cell: (t) => t.restarts, className: "num" },
    // Runs lost with their agent: the cluster's, never counted toward max_restarts.
    {
      key: "infra_restarts", header: "Agent losses",
      value: (t) => t.infra_restarts, cell: (t) => t.infra_restarts, className: "num",
    },
    // From its first run's start, not its creation (which would count the time it queued).
    {
      key: "duration", header: "Duration",
      value: (t) => (t.started_at != null ? (t.ended_at ?? t.ran_until ?? Date.now() / 1000) - t.started_at : null),
      // A paused or waiting trial's time stops where its last run ended (ran_until).
      cell: (t) => (t.started_at != null ? <Duration start={t.started_at} end={t.ended_at ?? t.ran_until} /> : NO_VALUE),
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
  ], [hparamNames, metricName, selected, params]);

  // Columns hidden with the picker (`hide=key,key` in the URL); the trial's id always shows.
  const hidden = new Set((params.get("hide") ?? "").split(",").filter(Boolean));
  const shownColumns = columns.filter((c) => c.key === "id" || !hidden.has(c.key));
  if (experiment.isPending) return <Loading />;
  if (experiment.error) return <ErrorLine error={experiment.error} />;
  const e = experiment.data;
  const plotted = selected.size
    ? [...selected].sort((a, b) => a - b).slice(0, MAX_CURVES)
    : rows.slice(0, DEFAULT_CURVES).map((t) => t.id);

  return (
    <section>
      <h1>
        Experiment {e.id}: {e.name} <StateBadge state={e.state} />
        {e.archived && <span className="tag">archived</span>}
      </h1>
      <div className="summary">
        <ExperimentActions id={e.id} state={e.state} archived={e.archived} owner={e.owner} />
        <DeriveActions experimentId={e.id} state={e.state} trials={trials.data?.trials.length ?? firstPage.data?.pagination?.total ?? 0} />
        {mayAct(me, e.owner) && <button type="button" onClick={() => setEditing(true)}>Edit</button>}
        {mayAct(me, e.owner) && <DeleteExperiment experiment={e} />}
        <span>progress {progressOf(e).text}</span>
        <span>searcher {e.searcher.name} on {e.searcher.metric} ({e.searcher.smaller_is_better ? "smaller" : "larger"} is better)</span>
        <span>user {e.owner}</span>
        {e.resource_pool && <span>pool {e.resource_pool}</span>}
        <span>submitted {when(e.created_at)}</span>
        {/* From its first trial's start: one none of whose trials ever ran has no duration. */}
        <span>duration {e.started_at != null ? <Duration start={e.started_at} end={e.ended_at} /> : NO_VALUE}</span>
        {e.labels.length > 0 && <span>labels {e.labels.join(", ")}</span>}
      </div>
      {editing && <EditExperiment experiment={e} onClose={() => setEditing(false)} />}
      {e.description && <p className="description">{e.description}</p>}
      {e.message && <Message text={e.message} />}
      {e.waiting && <p className="muted">Waiting: {e.waiting}</p>}
      <Notes experimentId={e.id} state={e.state} />

      <h2>Trials</h2>
      <ErrorLine error={trials.error ?? firstPage.error} />
      {partial !== null && <p className="muted">the first {rows.length} of {partial} trials; loading the rest…</p>}
      <ColumnPicker columns={columns} />
      <Table label="trials" defaultSort="id" rows={rows} columns={shownColumns} rowKey={(t) => t.id} sortParam="tsort" height={420} empty="No trials yet." />

      <h2>Learning curves</h2>
      <p className="muted">
        {selected.size
          ? `${selected.size} selected trial(s)${selected.size > MAX_CURVES ? `; the first ${MAX_CURVES} drawn` : ""}`
          : `the first ${plotted.length} trials; tick "Plot" to choose`}
      </p>
      <Curves experimentId={e.id} trialIds={plotted} />

      {trials.data ? <Analysis experiment={e} trials={rows} /> : <Loading />}

      <h2>Checkpoints</h2>
      <ErrorLine error={checkpoints.error} />
      <CheckpointTable checkpoints={checkpoints.data?.checkpoints ?? []} />

      <h2>Config</h2>
      <ConfigView experiment={e} />
    </section>
  );
}

/** Which of the trials table's columns show: a box per column, kept in the URL. */
function ColumnPicker({ columns }: { columns: Column<Trial>[] }) {
  const [params, setParams] = useSearchParams();
  const hidden = new Set((params.get("hide") ?? "").split(",").filter(Boolean));
  const toggle = (key: string, show: boolean) => {
    if (show) hidden.delete(key);
    else hidden.add(key);
    const next = new URLSearchParams(params);
    if (hidden.size) next.set("hide", [...hidden].join(","));
    else next.delete("hide");
    setParams(next, { replace: true });
  };
  return (
    <details className="columns">
      <summary>Columns</summary>
      <fieldset>
        <legend>Columns shown</legend>
        {columns.filter((c) => c.key !== "id").map((c) => (
          <label key={c.key} className="check">
            <input type="checkbox" checked={!hidden.has(c.key)} onChange={(e) => toggle(c.key, e.target.checked)} />
            {c.header}
          </label>
        ))}
      </fieldset>
    </details>
  );
}

/** The config the experiment runs with (overrides applied, defaults filled in), or as it was
 * written. */
function ConfigView({ experiment }: { experiment: Experiment }) {
  const [written, setWritten] = useState(false);
  const effective = useMemo(() => toYaml(experiment.config), [experiment.config]);
  return (
    <>
      <div className="tabs" role="tablist" aria-label="config views">
        <button type="button" role="tab" aria-selected={!written} onClick={() => setWritten(false)}>Effective</button>
        <button type="button" role="tab" aria-selected={written} disabled={!experiment.original_config} onClick={() => setWritten(true)}>As submitted</button>
      </div>
      <pre className="config" aria-label={written ? "config as submitted" : "effective config"} tabIndex={0}>
        {written ? experiment.original_config : effective}
      </pre>
    </>
  );
}

function latestValue(metric: Metric | null | undefined, name: string): number | null {
  const value = metric?.metrics?.[name];
  return typeof value === "number" ? value : null;
}

/** What the master noted about the experiment when it took it (forked from, continues a trial
 * of, keys accepted with a caveat), each experiment and trial it names a link. */
function Notes({ experimentId, state }: { experimentId: number; state: string }) {
  const notes = useQuery({
    queryKey: ["notes", experimentId, state],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/notes", { params: { path: { experiment_id: experimentId } } })),
  });
  const shown = notes.data?.notes ?? [];
  if (!shown.length) return null;
  return (
    <ul className="notes muted" aria-label="notes">
      {shown.map((n) => <li key={n.id}><Linked text={n.text} /></li>)}
    </ul>
  );
}
