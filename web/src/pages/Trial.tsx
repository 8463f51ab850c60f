// Trial: hyperparameters, training and validation charts, checkpoints, logs (live).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { Link, useParams, useSearchParams } from "react-router-dom";
import { api, ok, type LogEntry, type LogPage, type Metric, type TrialDetail } from "../api/client";
import { Duration, ENDED, ErrorLine, Loading, Message, TrialStateBadge } from "../components/bits";
import { LineChart } from "../components/Chart";
import { CheckpointTable } from "../components/Checkpoints";
import { DeriveDialog } from "../components/Derive";
import { LogView, useFollow } from "../components/LogView";
import { hparam, NO_VALUE, num, when } from "../format";
import { followEvents, useLiveEvents } from "../live";
import { useMayAct } from "../me";
import { badId, parseId } from "../params";
import { useTitle } from "../title";

export function TrialPage() {
  useTitle(`Trial ${useParams().id ?? ""}`);
  const text = useParams().id;
  const id = parseId(text);
  // Not an id: said here, without asking the API about it.
  if (id === null) return <ErrorLine error={badId("trial", text)} />;
  return <TrialView key={id} id={id} />;
}

/**
 * When the trial started running (its first run's start: not its creation, which counts the
 * time it queued) and until when it ran: its end, the end of its latest run while none runs
 * (paused), or now.
 */
function ranFrom(t: TrialDetail): { start: number | null; end: number | null } {
  // The same span the experiment's trials table shows: to its end, else to where its latest
  // run ended while none runs (paused, waiting), else now.
  return { start: t.started_at ?? null, end: t.ended_at ?? t.ran_until ?? null };
}

function TrialView({ id }: { id: number }) {
  useLiveEvents({ trialId: id });
  const trial = useQuery({
    queryKey: ["trial", id],
    queryFn: () => ok(api.GET("/api/v1/trials/{trial_id}", { params: { path: { trial_id: id } } })),
  });
  const metrics = useQuery({
    queryKey: ["metrics", id],
    queryFn: () => ok(api.GET("/api/v1/trials/{trial_id}/metrics", { params: { path: { trial_id: id } } })),
  });
  const checkpoints = useQuery({
    queryKey: ["checkpoints", "trial", id],
    queryFn: () => ok(api.GET("/api/v1/trials/{trial_id}/checkpoints", { params: { path: { trial_id: id } } })),
  });
  if (trial.isPending) return <Loading />;
  if (trial.error) return <ErrorLine error={trial.error} />;
  const t = trial.data;
  const ran = ranFrom(t);
  return (
    <section>
      <h1>
        Trial {t.id} <TrialStateBadge state={t.state} earlyStopped={t.early_stopped} waitingAt={t.waiting_at} />
      </h1>
      <div className="summary">
        <span>
          experiment <Link to={`/experiments/${t.experiment_id}`}>{t.experiment_id}</Link>
        </span>
        <span>steps {t.steps_completed}</span>
        <span>best validation {num(t.best_validation)}</span>
        <span>restarts {t.restarts}</span>
        {/* Runs lost with their agent: the cluster's, never counted toward max_restarts. */}
        {t.infra_restarts > 0 && <span>lost with its agent {t.infra_restarts}</span>}
        <span>started {ran.start !== null ? when(ran.start) : t.ended_at ? "never" : "not yet"}</span>
        <span>duration {ran.start !== null ? <Duration start={ran.start} end={ran.end} /> : NO_VALUE}</span>
      </div>
      <TrialActions trial={t} />
      {t.message && <Message text={t.message} />}
      {t.waiting && <p className="muted">Waiting: {t.waiting}</p>}
      <nav className="jump" aria-label="sections">
        <a href="#hyperparameters">Hyperparameters</a> <a href="#metrics">Metrics</a>{" "}
        <a href="#checkpoints">Checkpoints</a> <a href="#logs">Logs</a>
      </nav>
      <h2 id="hyperparameters">Hyperparameters</h2>
      <table className="kv" aria-label="hyperparameters">
        <tbody>
          {Object.entries(t.hparams ?? {}).map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td>{hparam(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2 id="metrics">Metrics</h2>
      <ErrorLine error={metrics.error} />
      <MetricCharts metrics={metrics.data?.metrics ?? []} />
      <h2 id="checkpoints">Checkpoints</h2>
      <CheckpointTable checkpoints={checkpoints.data?.checkpoints ?? []} />
      <h2 id="logs">Logs</h2>
      <Logs trialId={id} />
    </section>
  );
}


/** Kill (while it runs or waits; the experiment's owner and admins) and Continue (once its
 * experiment has ended; anyone, into an experiment of their own). */
function TrialActions({ trial }: { trial: TrialDetail }) {
  const client = useQueryClient();
  const [continuing, setContinuing] = useState(false);
  const experiment = useQuery({
    queryKey: ["experiment", trial.experiment_id],
    queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}", { params: { path: { experiment_id: trial.experiment_id } } })),
  });
  const mayAct = useMayAct(experiment.data?.owner ?? "");
  const kill = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/trials/{trial_id}/kill", { params: { path: { trial_id: trial.id } } })),
    onSettled: () => client.invalidateQueries(),
  });
  if (!experiment.data) return null;
  // Continuing makes the user's own experiment: anyone may. Killing is the owner's.
  const canKill = mayAct && !ENDED.includes(trial.state);
  const canContinue = ENDED.includes(experiment.data.state);
  if (!canKill && !canContinue) return null;
  return (
    <div className="actions">
      {canKill && (
        <button
          type="button"
          className="danger"
          disabled={kill.isPending}
          onClick={() => {
            if (confirm(`Kill trial ${trial.id}? Its experiment goes on with its other trials.`)) kill.mutate();
          }}
        >
          Kill trial
        </button>
      )}
      {canContinue && <button type="button" onClick={() => setContinuing(true)}>Continue trial</button>}
      <ErrorLine error={kill.error} />
      {continuing && (
        <DeriveDialog kind="continue" experimentId={trial.experiment_id} trialId={trial.id} onClose={() => setContinuing(false)} />
      )}
    </div>
  );
}

/** One chart per group (training, validation) with every numeric metric of it. */
function MetricCharts({ metrics }: { metrics: Metric[] }) {
  const groups = useMemo(() => {
    const out = new Map<string, Map<string, [number, number][]>>();
    for (const m of metrics) {
      const series = out.get(m.group) ?? new Map<string, [number, number][]>();
      out.set(m.group, series);
      for (const [name, value] of Object.entries(m.metrics ?? {})) {
        if (typeof value !== "number") continue;
        if (!series.has(name)) series.set(name, []);
        series.get(name)!.push([m.steps_completed, value]);
      }
    }
    return [...out.entries()].sort();
  }, [metrics]);
  if (!groups.length) return <p className="muted">No metrics reported yet.</p>;
  return (
    <div className="charts">
      {groups.map(([group, series]) => (
        <LineChart
          key={group}
          title={group}
          series={[...series.entries()].map(([label, points]) => ({ label, points }))}
        />
      ))}
    </div>
  );
}

/** The trial's log lines: the history, then new lines as the master streams them. */
function Logs({ trialId }: { trialId: number }) {
  const follow = useFollow();
  const [lines, setLines] = useState<LogEntry[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [ended, setEnded] = useState(false);
  const last = useRef(0);
  const history = useRef<Promise<void>>(Promise.resolve());

  useEffect(() => {
    let cancelled = false;
    last.current = 0;
    setLines([]);
    history.current = ok(api.GET("/api/v1/trials/{trial_id}/logs", { params: { path: { trial_id: trialId }, query: { limit: 100000 } } }))
      .then((answer) => {
        // Without follow=true the answer is JSON; the event-stream variant is for followEvents.
        const page = answer as LogPage;
        if (cancelled) return;
        setLines(page.logs);
        last.current = page.logs.at(-1)?.id ?? 0;
      })
      .catch(setError);
    return () => {
      cancelled = true;
    };
  }, [trialId]);

  useEffect(() => {
    if (!follow) return;
    const abort = new AbortController();
    // The stream starts after the history's last line.
    history.current.then(() => {
      if (abort.signal.aborted) return;
      return followEvents(
        `/api/v1/trials/${trialId}/logs?follow=true&after=${last.current}`,
        (event) => {
          if (event.event === "end") setEnded(true);
          if (event.event !== "log") return;
          const entry = JSON.parse(event.data) as LogEntry;
          if (entry.id <= last.current) return;
          last.current = entry.id;
          setLines((old) => [...old, entry]);
        },
        abort.signal,
      );
    }).catch((e) => {
      if (!abort.signal.aborted) setError(e);
    });
    return () => {
      abort.abort();
    };
  }, [trialId, follow]);

  const [params, setParams] = useSearchParams();
  const stamps = params.get("time") === "1";
  const stream = params.get("stream") ?? "";
  const setParam = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };
  const shown = useMemo(() => showLines(lines, { stamps, stream }), [lines, stamps, stream]);
  return (
    <LogView
      lines={shown}
      fileName={`trial-${trialId}.log`}
      status={ended ? "trial ended" : ""}
      error={error}
      followable
      controls={
        <>
          <label>
            Stream{" "}
            <select value={stream} onChange={(e) => setParam("stream", e.target.value || null)}>
              <option value="">both</option>
              <option value="stdout">stdout</option>
              <option value="stderr">stderr</option>
            </select>
          </label>
          <label className="check">
            <input type="checkbox" checked={stamps} onChange={(e) => setParam("time", e.target.checked ? "1" : null)} />
            Timestamps
          </label>
        </>
      }
    />
  );
}

/** The lines as shown: of one stream or both, with their time when asked, and a line naming
 * each run (a restart or a resumption is a run of its own) where one begins. */
function showLines(entries: LogEntry[], { stamps, stream }: { stamps: boolean; stream: string }): string[] {
  const out: string[] = [];
  const runs = new Map<string, number>();
  for (const e of entries) {
    if (!runs.has(e.allocation_id)) {
      runs.set(e.allocation_id, runs.size + 1);
      out.push(`──── run ${runs.size} (allocation ${e.allocation_id.slice(0, 8)}) ${"─".repeat(20)}`);
    }
    if (stream && e.stream !== stream) continue;
    const time = stamps ? `${new Date(e.time * 1000).toISOString().replace("T", " ").slice(0, 23)} ` : "";
    const rank = e.rank ? `[rank ${e.rank}] ` : "";
    out.push(`${time}${rank}${e.line}`);
  }
  return out;
}
