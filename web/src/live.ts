// Live data: the one place the UI subscribes to changes on the master.
//
// Pages follow the master's event stream (`/api/v1/events`): a page calls
// `useLiveEvents(scope)` and each batch of changes refetches exactly the queries it touches, so
// nothing is polled. Experiments, trials and metrics come as the rows that changed; the job
// queue and the cluster as a flag saying they changed, and their pages read them again.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, useSyncExternalStore } from "react";
import { browserHeaders, onRead, signInAgain, type Schemas } from "./api/client";

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
 * A dropped stream (a network error, the master restarting, a 5xx) reconnects, resuming after
 * the last event it saw: after a second, doubling up to 4 s while it keeps failing (the page says
 * meanwhile that the master is not answering, and reads everything again once it is back). An answer
 * that another try would only repeat ends it: a 404 (the experiment or trial is not there; the
 * page says so), a 403 or another 4xx; a 401 goes to the sign-in page, as every query's does.
 *
 * The page's first reads are asked as the stream opens: one made before the stream subscribed
 * may lack a change committed between the two, which the stream will not bring. Each read says
 * the position it was made at; when one of the page's reads is older than the position the
 * stream subscribed at, the page reads everything again, once.
 */
export function useLiveEvents(scope: Scope): void {
  const client = useQueryClient();
  // The page's own reads are the ones asked from its first render on.
  const [openedAt] = useState(() => performance.now());
  const query = new URLSearchParams();
  if (scope.trialId !== undefined) query.set("trial_id", String(scope.trialId));
  if (scope.experimentId !== undefined) query.set("experiment_id", String(scope.experimentId));
  if (scope.queue) query.set("queue", "true");
  if (scope.cluster) query.set("cluster", "true");
  const path = `/api/v1/events${query.size ? `?${query}` : ""}`;
  useEffect(() => {
    const stop = new AbortController();
    let lastId: string | null = null;
    let subscribedAt: string | null = null;
    const readBefore: string[] = [];
    let readAgain = false;
    const catchUp = () => {
      if (readAgain) return;
      readAgain = true;
      void client.invalidateQueries();
    };
    const stopListening = onRead((position, askedAt) => {
      if (askedAt < openedAt || readAgain) return;
      if (subscribedAt === null) readBefore.push(position);
      else if (behind(position, subscribedAt)) catchUp();
    });
    const subscribed = (position: string) => {
      if (subscribedAt !== null || lastId !== null) return;
      subscribedAt = position;
      if (readBefore.some((read) => behind(read, position))) catchUp();
    };
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
      let delay = FIRST_RETRY_MS;
      while (!stop.signal.aborted) {
        let connected = false;
        const opened = () => {
          connected = true;
          // Back after an outage: what the page read then (or failed to read) is read again.
          if (link === "down") {
            setLink("up");
            void client.invalidateQueries();
          }
        };
        try {
          await followEvents(path, apply, stop.signal, lastId, opened, subscribed);
        } catch (error) {
          if (error instanceof StreamRefused && !retried(error.status)) {
            if (error.status === 401) signInAgain();
            return;
          }
          // A dropped connection, a master restart or a 5xx: try again, less often each time,
          // and say meanwhile that what the page shows may be out of date.
          if (!stop.signal.aborted) setLink("down");
        }
        if (stop.signal.aborted) return;
        // A stream that was open and ended starts the backoff afresh.
        if (connected) delay = FIRST_RETRY_MS;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, LAST_RETRY_MS);
      }
    })();
    return () => {
      stop.abort();
      stopListening();
    };
  }, [client, path, openedAt]);
}

/** Whether the master answers the event stream: "down" from a failed try until one connects. */
export type MasterLink = "up" | "down";

let link: MasterLink = "up";
const linkListeners = new Set<() => void>();

function setLink(next: MasterLink): void {
  if (link === next) return;
  link = next;
  for (const listener of linkListeners) listener();
}

/** The master's link as the page's event streams last found it (re-rendered on a change). */
export function useMasterLink(): MasterLink {
  return useSyncExternalStore(
    (listener) => {
      linkListeners.add(listener);
      return () => linkListeners.delete(listener);
    },
    () => link,
  );
}

/** Whether a read made at `position` may lack changes up to `at` (both event ids, "epoch-seq";
 * another epoch is another run of the master). */
function behind(position: string, at: string): boolean {
  const [epoch, seq] = position.split("-");
  const [atEpoch, atSeq] = at.split("-");
  return epoch !== atEpoch || Number(seq) < Number(atSeq);
}

const FIRST_RETRY_MS = 1000;
// A try while the master is away is one refused connection: cheap enough to make every few
// seconds, so a page is current again soon after the master is back.
const LAST_RETRY_MS = 4000;

/** Whether an answer of `status` is worth asking again: the master's trouble, not the request's. */
function retried(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** The master answered the stream's request with an error status instead of the stream. */
export class StreamRefused extends Error {
  constructor(readonly status: number, statusText: string) {
    super(`${status} ${statusText}`);
  }
}

/** One parsed server-sent event. */
export interface ServerEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * Read the server-sent events at `path` (with the headers EventSource cannot send)
 * and hand each to `onEvent` until `signal` aborts or the stream ends. Resolves when it ends;
 * rejects with a StreamRefused when the master answers with an error status. `onOpen` is
 * called once the stream is open; `onSubscribed` with the position its `: subscribed` line
 * names, when it has one.
 */
export async function followEvents(
  path: string,
  onEvent: (event: ServerEvent) => void,
  signal: AbortSignal,
  lastEventId: string | null = null,
  onOpen?: () => void,
  onSubscribed?: (position: string) => void,
): Promise<void> {
  const headers: Record<string, string> = { ...browserHeaders(), Accept: "text/event-stream" };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  // Signed in by the session cookie, which the browser sends itself.
  const response = await fetch(path, { headers, signal, credentials: "same-origin" });
  if (!response.ok || !response.body) throw new StreamRefused(response.status, response.statusText);
  onOpen?.();
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
      const subscribed = /^: subscribed (\S+)$/m.exec(block);
      if (subscribed) onSubscribed?.(subscribed[1]);
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
