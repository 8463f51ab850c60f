// Live data: the one place the UI subscribes to changes on the master.
//
// Pages follow the master's event stream (`/api/v1/events`): a page calls
// `useLiveEvents(scope)` and each batch of changes refetches exactly the queries it touches, so
// nothing is polled. Experiments, trials and metrics come as the rows that changed; the job
// queue and the cluster as a flag saying they changed, and their pages read them again.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { getToken, type Schemas } from "./api/client";

/**
 * Which changes a page follows: one trial, one experiment (with its trials), or every
 * experiment (neither id); `queue` and `cluster` add the job queue's and the cluster's.
 */
export interface Scope {
  experimentId?: number;
  trialId?: number;
  queue?: boolean;
  cluster?: boolean;
}

type Batch = Schemas["EventBatch"];

/**
 * Follow the master's event stream for `scope` while the component is mounted: each batch
 * refetches the queries it changes; a resync (the stream lost its place) refetches them all.
 * A dropped stream reconnects after a second, resuming after the last event it saw.
 */
export function useLiveEvents(scope: Scope): void {
  const client = useQueryClient();
  const query = new URLSearchParams();
  if (scope.trialId !== undefined) query.set("trial_id", String(scope.trialId));
  if (scope.experimentId !== undefined) query.set("experiment_id", String(scope.experimentId));
  if (scope.queue) query.set("queue", "true");
  if (scope.cluster) query.set("cluster", "true");
  const path = `/api/v1/events${query.size ? `?${query}` : ""}`;
  useEffect(() => {
    const stop = new AbortController();
    let lastId: string | null = null;
    const apply = (event: ServerEvent) => {
      if (event.id) lastId = event.id;
      if (event.event === "resync") {
        void client.invalidateQueries();
        return;
      }
      if (event.event !== "batch") return;
      const batch = JSON.parse(event.data) as Batch;
      const touched = new Set<string>();
      const refetch = (key: unknown[]) => {
        const name = JSON.stringify(key);
        if (touched.has(name)) return;
        touched.add(name);
        void client.invalidateQueries({ queryKey: key });
      };
      for (const e of batch.experiments ?? []) {
        refetch(["experiments"]);
        refetch(["experiment", e.id]);
      }
      for (const t of batch.trials ?? []) {
        refetch(["experiments"]);
        refetch(["trials", t.experiment_id]);
        refetch(["trial", t.id]);
        refetch(["checkpoints"]);
      }
      for (const m of batch.metrics ?? []) {
        refetch(["metrics", m.trial_id]);
        refetch(["curves", m.experiment_id]);
        refetch(["trials", m.experiment_id]);
      }
      if (batch.queue) {
        refetch(["jobs"]);
        refetch(["task"]);
      }
      if (batch.cluster) {
        refetch(["pools"]);
        refetch(["agents"]);
      }
    };
    void (async () => {
      while (!stop.signal.aborted) {
        try {
          await followEvents(path, apply, stop.signal, lastId);
        } catch {
          // A dropped connection or a master restart: try again shortly.
        }
        if (stop.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    })();
    return () => stop.abort();
  }, [client, path]);
}

/** One parsed server-sent event. */
export interface ServerEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * Read the server-sent events at `path` (with the bearer token, which EventSource cannot send)
 * and hand each to `onEvent` until `signal` aborts or the stream ends. Resolves when it ends.
 */
export async function followEvents(
  path: string,
  onEvent: (event: ServerEvent) => void,
  signal: AbortSignal,
  lastEventId: string | null = null,
): Promise<void> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  const response = await fetch(path, { headers, signal });
  if (!response.ok || !response.body) throw new Error(`${response.status} ${response.statusText}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const parsed = parseEvent(block);
      if (parsed) onEvent(parsed);
    }
  }
}

function parseEvent(block: string): ServerEvent | null {
  let event = "message";
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue; // a keep-alive comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  return data.length ? { event, data: data.join("\n"), id } : null;
}
