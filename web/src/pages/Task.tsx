// Job (an OpenPAI job, a command or a generic task): its state, roles, instances and their logs,
// followed live as the master streams them.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router-dom";
import { ApiError, api, ok, type TaskLogEntry, type TaskLogPage } from "../api/client";
import { ErrorLine, Message, Loading, StateBadge, Duration } from "../components/bits";
import { LogView } from "../components/LogView";
import { when } from "../format";
import { followEvents, useLiveEvents } from "../live";
import { badId, parseId } from "../params";
import { mayAct, useMe } from "../me";
import { useTitle } from "../title";

const ENDED = ["SUCCEEDED", "FAILED", "STOPPED"];

export function TaskPage() {
  useTitle(`Job ${useParams().id ?? ""}`);
  const text = useParams().id;
  const id = parseId(text);
  // Not an id: said here, without asking the API about it.
  if (id === null) return <ErrorLine error={badId("job", text)} />;
  // Keyed by the job: another job's page (a resubmission's) starts with no dialog open.
  return <TaskView key={id} id={id} />;
}

function TaskView({ id }: { id: number }) {
  const client = useQueryClient();
  // A job's state, instances and retries change with the queue: each change reads it again.
  useLiveEvents({ queue: true });
  const task = useQuery({
    queryKey: ["task", id],
    queryFn: () => ok(api.GET("/api/v1/tasks/{task_id}", { params: { path: { task_id: id } } })),
  });
  const stop = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/tasks/{task_id}/stop", { params: { path: { task_id: id } } })),
    onSettled: () => client.invalidateQueries({ queryKey: ["task", id] }),
  });
  // Why a job waits is the queue's to say: its entry in its pool's queue, while it has one.
  const queued = useQuery({
    queryKey: ["jobs", task.data?.resource_pool ?? ""],
    queryFn: () => ok(api.GET("/api/v1/jobs", { params: { query: { resource_pool: task.data?.resource_pool } } })),
    enabled: task.data !== undefined && !ENDED.includes(task.data.state),
  });
  const waiting = queued.data?.jobs.find((j) => j.task_id === id)?.waiting;
  const me = useMe().data;
  const [resubmitting, setResubmitting] = useState(false);
  if (task.isPending) return <Loading />;
  if (task.error instanceof ApiError && task.error.status === 404)
    return (
      <p className="error" role="alert">
        Job {id} not found: the <Link to="/tasks">Jobs</Link> page lists every job, ended ones too.
      </p>
    );
  if (task.error) return <ErrorLine error={task.error} />;
  const t = task.data;
  const ended = ENDED.includes(t.state);
  // Notebooks, shells and TensorBoards are started anew (their start makes secrets of its own).
  const mayResubmit = ["job", "command", "generic"].includes(t.kind) && mayAct(me, t.user);
  return (
    <section>
      <h1>
        Job {t.id}: {t.name} <StateBadge state={t.state} />
        {!ended && (
          <button type="button" className="danger" aria-label={`stop job ${t.id}`} disabled={stop.isPending} onClick={() => { if (confirm(`Stop job ${t.id}? Its running instances are ended.`)) stop.mutate(); }}>
            Stop
          </button>
        )}
      </h1>
      <ErrorLine error={stop.error} />
      {mayResubmit && (
        <button type="button" aria-label={`resubmit job ${t.id}`} onClick={() => setResubmitting(true)}>
          Resubmit
        </button>
      )}
      {resubmitting && <ResubmitDialog task={t} onClose={() => setResubmitting(false)} />}
      <div className="summary">
        <span>{t.kind} ({t.source_format})</span>
        <span>user {t.user}</span>
        <span>pool {t.resource_pool}</span>
        <span>priority {t.priority}</span>
        <span>submitted {when(t.created_at)}</span>
        {t.started_at ? <span>ran <Duration start={t.started_at} end={t.ended_at} /></span> : <span>{ended ? "never started" : "not started yet"}</span>}
        {t.exit_code !== null && <span>exit code {t.exit_code}</span>}
      </div>
      {t.message && <Message text={t.message} ok={t.state === "SUCCEEDED"} />}
      {!ended && waiting && <p className="muted">Waiting: {waiting}</p>}
      {t.notes.length > 0 && (
        <ul className="notes">
          {t.notes.map((n, i) => (
            <li key={i} className="muted">
              {n}
            </li>
          ))}
        </ul>
      )}
      <h2>Instances</h2>
      <div className="table-scroll">
        <table aria-label="instances">
          <thead>
            <tr>
              <th>Role</th>
              <th className="num">Index</th>
              <th>State</th>
              <th>Agent</th>
              <th>Slots</th>
              <th className="num">Exit code</th>
              <th className="num">Retries</th>
              <th>Message</th>
            </tr>
          </thead>
          <tbody>
            {t.instances.map((i) => (
              <tr key={`${i.role}-${i.index}`}>
                <td>{i.role}</td>
                <td className="num">{i.index}</td>
                <td>
                  <StateBadge state={i.state} />
                </td>
                <td>{i.agent_id ?? ""}</td>
                <td>{i.slots.join(", ")}</td>
                <td className="num">{i.exit_code ?? ""}</td>
                <td className="num">{i.retries}</td>
                <td>{i.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {t.kind === "job" && (
        <>
          <h2>Config</h2>
          <JobConfig frame={`${t.user}~${t.name}`} />
        </>
      )}
      <h2>Logs</h2>
      <TaskLogs
        taskId={id}
        instances={t.instances.map((i) => `${i.role}/${i.index}`)}
        onEnd={() => client.invalidateQueries({ queryKey: ["task", id] })}
      />
    </section>
  );
}

/**
 * Every instance's lines: the history, then new ones as the master streams them; those of one
 * role, or one instance (`inst=worker` or `inst=worker/1` in the URL), and of one stream.
 */
function TaskLogs({ taskId, instances, onEnd }: { taskId: number; instances: string[]; onEnd: () => void }) {
  const [lines, setLines] = useState<TaskLogEntry[]>([]);
  const [ended, setEnded] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const endRef = useRef(onEnd);
  endRef.current = onEnd;

  useEffect(() => {
    const abort = new AbortController();
    let last = 0;
    setLines([]);
    setEnded(false);
    ok(api.GET("/api/v1/tasks/{task_id}/logs", { params: { path: { task_id: taskId }, query: { limit: 100000 } } }))
      .then((answer) => {
        // Without follow=true the answer is JSON; the event stream is read by followEvents.
        const page = answer as TaskLogPage;
        if (abort.signal.aborted) return;
        setLines(page.logs);
        last = page.logs.at(-1)?.id ?? 0;
        return followEvents(
          `/api/v1/tasks/${taskId}/logs?follow=true&after=${last}`,
          (event) => {
            if (event.event === "end") {
              setEnded(true);
              endRef.current();
            }
            if (event.event !== "log") return;
            const entry = JSON.parse(event.data) as TaskLogEntry;
            if (entry.id <= last) return;
            last = entry.id;
            setLines((old) => [...old, entry]);
          },
          abort.signal,
        );
      })
      .catch((e) => {
        if (!abort.signal.aborted) setError(e);
      });
    return () => abort.abort();
  }, [taskId]);

  const [params, setParams] = useSearchParams();
  const inst = params.get("inst") ?? "";
  const stream = params.get("stream") ?? "";
  const setParam = (key: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };
  const roles = useMemo(() => [...new Set(instances.map((i) => i.split("/")[0]))], [instances]);
  const shown = useMemo(
    () =>
      lines
        .filter((l) => !inst || (inst.includes("/") ? `${l.role}/${l.index}` === inst : l.role === inst))
        .filter((l) => !stream || l.stream === stream)
        .map((l) => `[${l.role}/${l.index}] ${l.line}`),
    [lines, inst, stream],
  );
  return (
    <LogView
      lines={shown}
      fileName={`job-${taskId}${inst ? `-${inst.replace("/", "-")}` : ""}.log`}
      status={ended ? "job ended" : "following"}
      error={error}
      controls={
        <>
          <label>
            Instance{" "}
            <select aria-label="log instance" value={inst} onChange={(e) => setParam("inst", e.target.value)}>
              <option value="">all</option>
              {/* A role with several instances: all of them, then each. */}
              {roles.map((role) => {
                const own = instances.filter((i) => i.startsWith(`${role}/`));
                return (
                  <optgroup key={role} label={role}>
                    {own.length > 1 && <option value={role}>{role}: every instance</option>}
                    {own.map((i) => (
                      <option key={i} value={i}>
                        {i}
                      </option>
                    ))}
                  </optgroup>
                );
              })}
            </select>
          </label>
          <label>
            Stream{" "}
            <select aria-label="log stream" value={stream} onChange={(e) => setParam("stream", e.target.value)}>
              <option value="">both</option>
              <option value="stdout">stdout</option>
              <option value="stderr">stderr</option>
            </select>
          </label>
        </>
      }
    />
  );
}

/** The job submitted again as it was (its config, secrets and code), as OpenPAI's Clone: under a
 * name of the user's, else the next free `NAME-2`, `NAME-3`... */
function ResubmitDialog({ task, onClose }: { task: { id: number; name: string; kind: string }; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const navigate = useNavigate();
  const [name, setName] = useState("");
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const resubmit = useMutation({
    mutationFn: () =>
      ok(api.POST("/api/v1/tasks/{task_id}/resubmit", {
        params: { path: { task_id: task.id } },
        body: name.trim() ? { name: name.trim() } : {},
      })),
    onSuccess: (made) => navigate(`/tasks/${made.id}`),
  });
  const title = `Resubmit job ${task.id}`;
  return (
    <dialog ref={dialog} onClose={onClose} aria-label={title} className="dialog">
      <form onSubmit={(e) => { e.preventDefault(); resubmit.mutate(); }}>
        <h2>{title}</h2>
        <p className="why">A new job with this one's config, secrets and code, queued now.</p>
        <label className="field">
          Name of the new job
          <input
            value={name}
            placeholder={task.kind === "job" ? `${task.name.replace(/-\d+$/, "")}-2 (the next free one)` : task.name}
            onChange={(e) => setName(e.target.value)}
          />
        </label>
        <ErrorLine error={resubmit.error} />
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()}>Cancel</button>
          <button type="submit" className="primary" disabled={resubmit.isPending}>
            Resubmit
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** An OpenPAI job's config as protocol v2 YAML, as assay runs it (secrets masked). */
function JobConfig({ frame }: { frame: string }) {
  const config = useQuery({
    queryKey: ["job-config", frame],
    queryFn: () => ok(api.GET("/api/v2/jobs/{frame}/config", { params: { path: { frame } }, parseAs: "text" })),
  });
  if (config.isPending) return <Loading />;
  if (config.error) return <ErrorLine error={config.error} />;
  return <pre className="config" aria-label="job config" tabIndex={0}>{String(config.data)}</pre>;
}
