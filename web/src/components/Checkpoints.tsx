// Checkpoints as a table, each with its files to download and a way to register it as a model
// version (what `assay checkpoint download` and `assay model register` do from the CLI).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { Link } from "react-router-dom";
import { api, ok, type Checkpoint } from "../api/client";
import { when } from "../format";
import { ErrorLine, StateBadge } from "./bits";
import { Table, type Column } from "./Table";

/** Where the browser downloads a checkpoint's files: a tar of them, sent with the session
 * cookie as any same-origin GET is. */
export function downloadHref(uuid: string): string {
  return `/api/v1/checkpoints/${encodeURIComponent(uuid)}/files`;
}

/** Checkpoints, without the deleted ones (garbage-collected: their files are gone) unless asked,
 * as `assay e list-checkpoints` shows them without `--deleted`. */
export function CheckpointTable({ checkpoints }: { checkpoints: Checkpoint[] }) {
  const [showDeleted, setShowDeleted] = useState(false);
  const [registering, setRegistering] = useState<Checkpoint | null>(null);
  const deleted = checkpoints.filter((c) => c.state === "DELETED").length;
  const shown = showDeleted ? checkpoints : checkpoints.filter((c) => c.state !== "DELETED");
  const columns: Column<Checkpoint>[] = [
    { key: "uuid", header: "UUID", value: (c) => c.uuid, cell: (c) => <code>{c.uuid}</code> },
    { key: "trial", header: "Trial", value: (c) => c.trial_id, cell: (c) => <Link to={`/trials/${c.trial_id}`}>{c.trial_id}</Link> },
    { key: "steps", header: "Steps", value: (c) => c.steps_completed, cell: (c) => c.steps_completed, className: "num" },
    { key: "state", header: "State", value: (c) => c.state, cell: (c) => <StateBadge state={c.state} /> },
    { key: "size", header: "Size", value: (c) => c.size, cell: (c) => `${(c.size / 1024).toFixed(1)} KiB`, className: "num" },
    { key: "time", header: "Reported", value: (c) => c.reported_at, cell: (c) => when(c.reported_at) },
    {
      key: "versions", header: "Model versions",
      cell: (c) => (c.model_versions ?? []).map((v) => (
        <Link key={`${v.model}/${v.version}`} className="tag" to={`/models/${encodeURIComponent(v.model)}`}>{v.model} v{v.version}</Link>
      )),
    },
    {
      key: "actions", header: "Actions",
      cell: (c) => c.state === "ACTIVE" ? (
        <span className="actions compact">
          <a href={downloadHref(c.uuid)} download aria-label={`download checkpoint ${c.uuid}`}>Download</a>
          <button type="button" aria-label={`register checkpoint ${c.uuid}`} onClick={() => setRegistering(c)}>Register</button>
        </span>
      ) : null,
    },
    { key: "metadata", header: "Metadata", cell: (c) => <code className="small">{JSON.stringify(c.metadata)}</code> },
  ];
  return (
    <>
      <label className="check">
        <input type="checkbox" checked={showDeleted} onChange={(e) => setShowDeleted(e.target.checked)} />
        Show deleted ({deleted})
      </label>
      <Table label="checkpoints" rows={shown} columns={columns} rowKey={(c) => c.uuid} sortParam="csort" height={300} empty={deleted && !showDeleted ? "No checkpoints but deleted ones." : "No checkpoints."} />
      {registering && <RegisterDialog checkpoint={registering} onClose={() => setRegistering(null)} />}
    </>
  );
}

/** Register a checkpoint as the next version of a model: an existing one, or one made here. */
function RegisterDialog({ checkpoint, onClose }: { checkpoint: Checkpoint; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const client = useQueryClient();
  const models = useQuery({
    queryKey: ["models", ""],
    queryFn: () => ok(api.GET("/api/v1/models", { params: { query: { limit: 1000 } } })),
  });
  const [model, setModel] = useState("");
  const [comment, setComment] = useState("");
  const [done, setDone] = useState<string | null>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const known = models.data?.models.some((m) => m.name === model) ?? false;
  const register = useMutation({
    mutationFn: async () => {
      if (!known) await ok(api.POST("/api/v1/models", { body: { name: model, description: "" } }));
      return ok(api.POST("/api/v1/models/{name}/versions", {
        params: { path: { name: model } },
        body: { checkpoint_uuid: checkpoint.uuid, comment, name: "" },
      }));
    },
    onSuccess: (version) => {
      client.invalidateQueries();
      setDone(`${version.model} version ${version.version}`);
    },
  });
  return (
    <dialog ref={dialog} onClose={onClose} aria-label="Register checkpoint" className="dialog">
      <form onSubmit={(e) => { e.preventDefault(); register.mutate(); }}>
        <h2>Register checkpoint</h2>
        <code className="small">{checkpoint.uuid}</code>
        <label className="field">
          Model (an existing one, or a new name)
          <input list="model-names" value={model} onChange={(e) => setModel(e.target.value)} required />
          <datalist id="model-names">
            {models.data?.models.map((m) => <option key={m.id} value={m.name} />)}
          </datalist>
        </label>
        <label className="field">
          Comment
          <input value={comment} onChange={(e) => setComment(e.target.value)} />
        </label>
        {model && !known && models.data && <small className="why">A new model “{model}” is created first.</small>}
        <ErrorLine error={register.error} />
        {done && (
          <p role="status">
            Registered as <Link to={`/models/${encodeURIComponent(model)}`}>{done}</Link>.
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()}>{done ? "Close" : "Cancel"}</button>
          {!done && <button type="submit" className="primary" disabled={!model || register.isPending}>Register</button>}
        </div>
      </form>
    </dialog>
  );
}
