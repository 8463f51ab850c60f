// Job queue: each pool's jobs in scheduling order, and the "Manage Job" dialog.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { cloneElement, useEffect, useId, useRef, useState, type ReactElement } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { api, ok, type Job, type JobChange, type JobQueue } from "../api/client";
import { ErrorLine, Loading, StateBadge } from "../components/bits";
import { when } from "../format";
import { useLiveEvents } from "../live";
import { useTitle } from "../title";

export function JobQueuePage() {
  useTitle("Job queue");
  const [params, setParams] = useSearchParams();
  useLiveEvents({ queue: true, cluster: true });
  const pools = useQuery({
    queryKey: ["pools"],
    queryFn: () => ok(api.GET("/api/v1/resource-pools")),
  });
  const names = pools.data?.resource_pools.map((p) => p.name) ?? [];
  const pool = params.get("pool") ?? names[0] ?? "";
  const queue = useQuery({
    queryKey: ["jobs", pool],
    queryFn: () => ok(api.GET("/api/v1/jobs", { params: { query: { resource_pool: pool } } })),
    enabled: Boolean(pool),
  });
  const managing = params.get("manage");
  const job = queue.data?.jobs.find((j) => j.id === managing);
  const setParam = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };

  return (
    <section>
      <h1>Job queue</h1>
      <ErrorLine error={pools.error ?? queue.error} />
      <div className="tabs" role="tablist" aria-label="resource pools">
        {names.map((name) => (
          <button key={name} type="button" role="tab" aria-selected={name === pool} onClick={() => setParam("pool", name)}>
            {name}
          </button>
        ))}
      </div>
      {queue.data && <p className="muted">scheduler: {queue.data.scheduler}</p>}
      {queue.isPending && pool ? <Loading /> : (
        <div className="table-scroll">
          <table aria-label="job queue">
            <thead>
              <tr>
                <th className="num">#</th><th>ID</th><th>Type</th><th>Name</th>
                <th className="num">{queue.data?.scheduler === "fair_share" ? "Weight" : "Priority"}</th>
                <th>Submitted</th><th className="num">Slots (acquired/needed)</th><th>Status</th><th>Why it waits</th><th>User</th><th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {(queue.data?.jobs ?? []).map((j) => (
                <tr key={j.id}>
                  <td className="num">{j.position}</td>
                  <td><code>{j.id.slice(0, 8)}</code></td>
                  <td>{j.type}</td>
                  <td>
                    {j.experiment_id != null ? <Link to={`/experiments/${j.experiment_id}`}>{j.name}</Link>
                      : j.task_id != null ? <Link to={`/tasks/${j.task_id}`}>{j.name}</Link> : j.name}
                  </td>
                  <td className="num">{queue.data?.scheduler === "fair_share" ? j.weight : j.priority}</td>
                  <td>{when(j.submitted_at)}</td>
                  <td className="num">{j.slots_acquired}/{j.slots_needed}</td>
                  <td><StateBadge state={j.status} /></td>
                  <td className="why-waits">{j.waiting ?? ""}</td>
                  <td>{j.user}</td>
                  <td>
                    <button type="button" aria-label={`manage job ${j.name}`} onClick={() => setParam("manage", j.id)}>
                      Manage Job
                    </button>
                  </td>
                </tr>
              ))}
              {queue.data?.jobs.length === 0 && (
                <tr><td colSpan={11} className="empty">No queued or scheduled jobs in this pool.</td></tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {job && queue.data && (
        <ManageJob job={job} queue={queue.data} pools={names} onClose={() => setParam("manage", null)} />
      )}
    </section>
  );
}

/** The seed's constraints: priority or weight by scheduler, order only under priority, pool only
 * for experiments. What does not apply is shown disabled with the reason. */
function ManageJob({ job, queue, pools, onClose }: { job: Job; queue: JobQueue; pools: string[]; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const client = useQueryClient();
  const fair = queue.scheduler === "fair_share";
  const [priority, setPriority] = useState(String(job.priority));
  const [weight, setWeight] = useState(String(job.weight));
  const [pool, setPool] = useState(job.resource_pool);
  const [place, setPlace] = useState<"" | "ahead_of" | "behind_of">("");
  const [other, setOther] = useState("");
  const others = queue.jobs.filter((j) => j.id !== job.id);
  const first = queue.jobs[0];
  const isExperiment = job.type === "EXPERIMENT";

  useEffect(() => {
    dialog.current?.showModal();
  }, []);

  const update = useMutation({
    mutationFn: (change: JobChange) =>
      ok(api.PATCH("/api/v1/jobs/{job_id}", { params: { path: { job_id: job.id } }, body: change })),
    onSuccess: () => {
      client.invalidateQueries({ queryKey: ["jobs"] });
      onClose();
    },
  });

  const submit = () => {
    const change: JobChange = {};
    if (!fair && Number(priority) !== job.priority) change.priority = Number(priority);
    if (fair && Number(weight) !== job.weight) change.weight = Number(weight);
    if (isExperiment && pool !== job.resource_pool) change.resource_pool = pool;
    if (!fair && place && other) change[place] = other;
    update.mutate(change);
  };

  return (
    <dialog ref={dialog} onClose={onClose} aria-label="Manage Job" className="dialog">
      <form method="dialog" onSubmit={(e) => { e.preventDefault(); submit(); }}>
        <h2>Manage Job: {job.name}</h2>
        <Field label="Priority" why={fair ? "Only under the priority scheduler; this pool uses fair share." : null}>
          <input type="number" min={1} max={99} value={priority} disabled={fair} onChange={(e) => setPriority(e.target.value)} />
        </Field>
        <Field label="Weight" why={fair ? null : "Only under the fair share scheduler; this pool uses priority."}>
          <input type="number" min={0} step="any" value={weight} disabled={!fair} onChange={(e) => setWeight(e.target.value)} />
        </Field>
        <Field label="Resource pool" why={isExperiment ? null : "Only experiments change pools; cancel this job and resubmit it instead."}>
          <select value={pool} disabled={!isExperiment} onChange={(e) => setPool(e.target.value)}>
            {pools.map((p) => <option key={p}>{p}</option>)}
          </select>
        </Field>
        <fieldset disabled={fair || others.length === 0}>
          <legend>Position</legend>
          <select aria-label="place" value={place} onChange={(e) => setPlace(e.target.value as typeof place)}>
            <option value="">unchanged</option>
            <option value="ahead_of">ahead of</option>
            <option value="behind_of">behind</option>
          </select>
          <select aria-label="other job" value={other} onChange={(e) => setOther(e.target.value)}>
            <option value="">choose a job</option>
            {others.map((j) => <option key={j.id} value={j.id}>{j.position}. {j.name} ({j.id.slice(0, 8)})</option>)}
          </select>
          {fair && <small className="why">Moving ahead or behind needs the priority scheduler.</small>}
        </fieldset>
        <ErrorLine error={update.error} />
        <div className="actions">
          <button
            type="button"
            disabled={fair || !first || first.id === job.id || update.isPending}
            title={fair ? "Needs the priority scheduler" : first?.id === job.id ? "Already first" : undefined}
            onClick={() => first && update.mutate({ ahead_of: first.id })}
          >
            Move to Top
          </button>
          <span className="spacer" />
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" className="primary" disabled={update.isPending}>OK</button>
        </div>
      </form>
    </dialog>
  );
}

/** A labelled control and, when it is disabled, the reason, read out with it. */
function Field({ label, why, children }: { label: string; why: string | null; children: ReactElement<{ id?: string; "aria-describedby"?: string }> }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={`${id}-control`}>{label}</label>
      {cloneElement(children, { id: `${id}-control`, "aria-describedby": why ? `${id}-why` : undefined })}
      {why && <small className="why" id={`${id}-why`}>{why}</small>}
    </div>
  );
}
