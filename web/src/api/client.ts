// The one typed client of the master's REST API. Paths, parameters and bodies are checked
// against `schema.d.ts`, which is generated from the master's OpenAPI document.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Experiment = Schemas["Experiment"];
export type ExperimentSummary = Schemas["ExperimentSummary"];
export type ExperimentState = Schemas["ExperimentState"];
export type Trial = Schemas["Trial"];
export type TrialDetail = Schemas["TrialDetail"];
export type Metric = Schemas["Metric"];
export type Checkpoint = Schemas["Checkpoint"];
export type Job = Schemas["Job"];
export type JobQueue = Schemas["JobQueue"];
export type JobChange = Schemas["JobChange"];
export type LogEntry = Schemas["LogEntry"];
export type LogPage = Schemas["LogPage"];
export type ResourcePool = Schemas["ResourcePool"];
export type Agent = Schemas["Agent"];
export type ErrorDetail = Schemas["ErrorDetail"];
export type ExperimentValidation = Schemas["ExperimentValidation"];
export type Task = Schemas["Task"];
export type TaskValidation = Schemas["TaskValidation"];
export type TaskLogEntry = Schemas["TaskLogEntry"];
export type TaskLogPage = Schemas["TaskLogPage"];
export type Notebook = Schemas["Notebook"];
export type Shell = Schemas["Shell"];
export type User = Schemas["User"];
export type Model = Schemas["Model"];
export type ModelVersion = Schemas["ModelVersion"];

/**
 * The browser's session is the master's `assay_session` cookie: HttpOnly (no script, this
 * page's or a proxied app's, can read it), SameSite=Strict and sent to `/api/` only. The page
 * keeps no token anywhere. A request that changes state signed in by the cookie must carry
 * this header, which a page of another site cannot add.
 */
export const CSRF_HEADER = "X-Assay-CSRF";

/** The headers every request of the page carries. */
export function browserHeaders(): Record<string, string> {
  return { [CSRF_HEADER]: "1" };
}

/**
 * The session is missing or no longer valid (a 401): go to the sign-in page, which comes back
 * here after signing in.
 */
export function signInAgain(): void {
  if (location.pathname === "/sign-in") return;
  location.assign(`/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`);
}

/** An answer other than 2xx: the API's error shape, flattened to one line a person can read. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Each problem with the path of the field it names, when the API gave them. */
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}

const browser: Middleware = {
  onRequest({ request }) {
    for (const [name, value] of Object.entries(browserHeaders())) request.headers.set(name, value);
    return request;
  },
};

/**
 * Told of each read that comes back: the live-change position it was made at (the master's
 * `X-Assay-Event-Id`) and when it was asked (`performance.now()`).
 */
export type ReadListener = (position: string, askedAt: number) => void;

const readListeners = new Set<ReadListener>();
const askedAt = new Map<string, number>();

/** Be told of every read that comes back from now on; returns what stops it. */
export function onRead(listener: ReadListener): () => void {
  readListeners.add(listener);
  return () => readListeners.delete(listener);
}

const positions: Middleware = {
  onRequest({ id }) {
    askedAt.set(id, performance.now());
  },
  onResponse({ id, response }) {
    const asked = askedAt.get(id);
    askedAt.delete(id);
    const position = response.headers.get("X-Assay-Event-Id");
    if (position && asked !== undefined) for (const listener of readListeners) listener(position, asked);
  },
  onError({ id }) {
    askedAt.delete(id);
  },
};

// Same-origin requests carry the session cookie (the API's path only).
export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: "same-origin" });
api.use(browser, positions);

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The data of an answer, or an ApiError saying what the master said was wrong. */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  throw new ApiError(response.status, describe(error, response), detailsOf(error));
}

function detailsOf(error: unknown): ErrorDetail[] {
  return (error as { error?: { details?: ErrorDetail[] } } | undefined)?.error?.details ?? [];
}

/** The multipart uploads (config plus context archive), keyed by their route. */
type FormRoute =
  | "/api/v1/experiments"
  | "/api/v1/experiments/validate"
  | "/api/v1/jobs"
  | "/api/v1/jobs/validate"
  | "/api/v1/notebooks"
  | "/api/v1/shells";
type FormAnswer<P extends FormRoute> = paths[P]["post"]["responses"] extends infer R
  ? R extends { 200: { content: { "application/json": infer T } } }
    ? T
    : R extends { 201: { content: { "application/json": infer T } } }
      ? T
      : never
  : never;

/** POST `form` as multipart/form-data to an upload route; its typed answer or an ApiError. */
export async function postForm<P extends FormRoute>(path: P, form: FormData): Promise<FormAnswer<P>> {
  const response = await fetch(path, {
    method: "POST",
    body: form,
    headers: browserHeaders(),
    credentials: "same-origin",
  });
  const body: unknown = await response.json().catch(() => undefined);
  if (response.ok) return body as FormAnswer<P>;
  throw new ApiError(response.status, describe(body, response), detailsOf(body));
}

function describe(error: unknown, response: Response): string {
  const body = (error ?? {}) as {
    error?: { message?: string; details?: { path: string; message: string }[] };
  };
  const main = body.error?.message ?? `${response.status} ${response.statusText}`;
  const details = (body.error?.details ?? []).map((d) => `${d.path}: ${d.message}`);
  return details.length ? `${main} (${details.join("; ")})` : main;
}
