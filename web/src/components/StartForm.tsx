// The start form of a notebook or a shell: its resource pool, slots (0 for none), an optional
// description and, for a notebook, an optional idle timeout. The master's refusal is said in
// one line beside the button.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, ok, postForm } from "../api/client";

export type Kind = "notebook" | "shell";

export interface StartFields {
  pool: string;
  slots: string;
  description: string;
  idleTimeout: string;
}

/**
 * The multipart body the start routes take: a Determined notebook or shell config holding the
 * description and idle timeout (JSON strings, which YAML reads as written), and overrides for
 * the pool and slots (none where the field is empty: the master's defaults).
 */
export function startBody(kind: Kind, fields: StartFields): FormData {
  const config: string[] = [];
  if (fields.description.trim()) config.push(`description: ${JSON.stringify(fields.description.trim())}`);
  if (kind === "notebook" && fields.idleTimeout.trim())
    config.push(`idle_timeout: ${JSON.stringify(fields.idleTimeout.trim())}`);
  const body = new FormData();
  body.set("config", config.map((line) => `${line}\n`).join(""));
  if (fields.slots.trim()) body.append("overrides", `resources.slots=${fields.slots.trim()}`);
  if (fields.pool) body.append("overrides", `resources.resource_pool=${fields.pool}`);
  return body;
}

export function StartForm({ kind, onStarted }: { kind: Kind; onStarted: (id: number) => void }) {
  const pools = useQuery({ queryKey: ["pools"], queryFn: () => ok(api.GET("/api/v1/resource-pools")) });
  const [fields, setFields] = useState<StartFields>({ pool: "", slots: "1", description: "", idleTimeout: "" });
  const start = useMutation<{ id: number }, Error>({
    mutationFn: () =>
      kind === "notebook"
        ? postForm("/api/v1/notebooks", startBody(kind, fields))
        : postForm("/api/v1/shells", startBody(kind, fields)),
    onSuccess: (made) => onStarted(made.id),
  });
  const set = (key: keyof StartFields) => (e: { target: { value: string } }) => {
    start.reset();
    setFields((old) => ({ ...old, [key]: e.target.value }));
  };
  return (
    <form
      className="filters start"
      aria-label={`start a ${kind}`}
      onSubmit={(e) => {
        e.preventDefault();
        start.mutate();
      }}
    >
      <label>
        Resource pool
        <select value={fields.pool} onChange={set("pool")}>
          <option value="">(the default pool)</option>
          {pools.data?.resource_pools.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name} ({p.slots} slots)
            </option>
          ))}
        </select>
      </label>
      <label>
        Slots
        <input type="number" min={0} step={1} className="slots-input" value={fields.slots} onChange={set("slots")} />
      </label>
      <label>
        Description
        <input type="text" placeholder={kind === "notebook" ? "JupyterLab" : "Shell"} value={fields.description} onChange={set("description")} />
      </label>
      {kind === "notebook" && (
        <label title="It ends by itself, freeing its slot, after this long unused (30s, 10m, 1h, 2d); empty: never">
          Idle timeout
          <input type="text" className="short" placeholder="never" value={fields.idleTimeout} onChange={set("idleTimeout")} />
        </label>
      )}
      <button type="submit" className="primary" disabled={start.isPending}>
        {start.isPending ? "Starting…" : `Start ${kind}`}
      </button>
      {start.error && (
        <span className="error" role="alert">
          {start.error.message}
        </span>
      )}
    </form>
  );
}
