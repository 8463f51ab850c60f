// Small shared pieces: state badges, errors, the experiment actions.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Fragment, useEffect, useState } from "react";
import { Link } from "react-router-dom";
import { api, ok, type ExperimentState } from "../api/client";
import { duration } from "../format";
import { useMayAct } from "../me";

export function StateBadge({ state }: { state: string }) {
  return <span className={`state state-${state.toLowerCase()}`}>{state}</span>;
}

/** A trial's state, with "early stop" when its searcher closed it before its full length
 * (as the CLI's "COMPLETED (early stop)"), and where a WAITING trial's searcher holds it (as
 * the CLI's "WAITING (rung 2 of 4)"): not a user's pause, which is PAUSED. */
export function TrialStateBadge({
  state,
  earlyStopped,
  waitingAt,
}: {
  state: string;
  earlyStopped: boolean;
  waitingAt?: string | null;
}) {
  return (
    <>
      <StateBadge state={state} />
      {earlyStopped && <span className="tag" title="its searcher stopped it before its full length">early stop</span>}
      {state === "WAITING" && waitingAt && (
        <span className="tag" title="its searcher holds it here until it decides whether it trains further (a promotion)">
          {waitingAt}
        </span>
      )}
    </>
  );
}

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

export function Loading() {
  return <p className="muted">Loading…</p>;
}

/** The states an experiment (or a trial) ends in: nothing more runs. */
export const ENDED: readonly string[] = ["COMPLETED", "CANCELED", "ERROR"];

type Action = "pause" | "activate" | "cancel" | "kill" | "archive" | "unarchive";

/** The actions the API allows an experiment in `state`, in the order they are shown. */
export function actionsFor(state: ExperimentState, archived: boolean): Action[] {
  if (ENDED.includes(state)) return [archived ? "unarchive" : "archive"];
  const out: Action[] = [];
  if (state === "ACTIVE") out.push("pause");
  if (state === "PAUSED") out.push("activate");
  if (!state.startsWith("STOPPING_CANCELED") && !state.startsWith("STOPPING_KILLED"))
    out.push("cancel");
  out.push("kill");
  return out;
}

const PATHS = {
  pause: "/api/v1/experiments/{experiment_id}/pause",
  activate: "/api/v1/experiments/{experiment_id}/activate",
  cancel: "/api/v1/experiments/{experiment_id}/cancel",
  kill: "/api/v1/experiments/{experiment_id}/kill",
  archive: "/api/v1/experiments/{experiment_id}/archive",
  unarchive: "/api/v1/experiments/{experiment_id}/unarchive",
} as const;

/** The state buttons of an experiment, shown only to those the API lets use them: its owner
 * and admins (others would only be refused after asking). */
export function ExperimentActions({
  id,
  state,
  archived,
  owner,
  compact = false,
}: {
  id: number;
  state: ExperimentState;
  archived: boolean;
  owner: string;
  compact?: boolean;
}) {
  const mayAct = useMayAct(owner);
  const client = useQueryClient();
  const act = useMutation({
    mutationFn: (action: Action) =>
      ok(api.POST(PATHS[action], { params: { path: { experiment_id: id } } })),
    onSettled: () => client.invalidateQueries(),
  });
  if (!mayAct) return null;
  return (
    <span className={compact ? "actions compact" : "actions"}>
      {actionsFor(state, archived).map((action) => (
        <button
          key={action}
          type="button"
          disabled={act.isPending}
          aria-label={`${action} experiment ${id}`}
          className={action === "kill" ? "danger" : undefined}
          onClick={() => {
            // Both end the experiment for good: asked first.
            if (action === "kill" && !confirm(`Kill experiment ${id}?`)) return;
            if (action === "cancel" && !confirm(`Cancel experiment ${id}?`)) return;
            act.mutate(action);
          }}
        >
          {action[0].toUpperCase() + action.slice(1)}
        </button>
      ))}
      {act.error && <span className="error">{act.error.message}</span>}
    </span>
  );
}

/** A message of the master's, with the trials and experiments it names linked to their pages
 * (its pointer to the CLI for a trial's log links the trial's page, where the log is). */
export function Message({ text, ok = false }: { text: string; ok?: boolean }) {
  return (
    <p className={ok ? "message ok" : "message"}>
      <Linked text={text} />
    </p>
  );
}

/** A master's words with the trials and experiments they name as links (and a pointer to a
 * trial's log as its page). */
export function Linked({ text }: { text: string }) {
  const parts = text.split(/(assay trial logs \d+|\btrial \d+|\bexperiment \d+)/);
  return (
    <>
      {parts.map((part, i) => {
        const log = /^assay trial logs (\d+)$/.exec(part);
        if (log) return <Link key={i} to={`/trials/${log[1]}`}>on trial {log[1]}'s page</Link>;
        const named = /^(trial|experiment) (\d+)$/.exec(part);
        if (named) return <Link key={i} to={`/${named[1]}s/${named[2]}`}>{part}</Link>;
        return <Fragment key={i}>{part}</Fragment>;
      })}
    </>
  );
}

/** How long something ran from `start`: to `end`, or, while it runs (no end), to now, ticking
 * each second. */
export function Duration({ start, end }: { start: number; end: number | null | undefined }) {
  const running = end === null || end === undefined;
  const [, tick] = useState(0);
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return <>{duration(start, end)}</>;
}

/** A filter of states as a row of checkboxes: `chosen` ticked, each change the new choice. */
export function StateChecks<T extends string>({
  states,
  chosen,
  onChange,
  disabled = () => false,
}: {
  states: readonly T[];
  chosen: readonly T[];
  onChange: (chosen: T[]) => void;
  disabled?: (state: T) => boolean;
}) {
  return (
    <fieldset className="states">
      <legend>State</legend>
      {states.map((s) => (
        <label key={s} className="check">
          <input
            type="checkbox"
            checked={chosen.includes(s)}
            disabled={disabled(s)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, s] : chosen.filter((x) => x !== s))}
          />
          {s}
        </label>
      ))}
    </fieldset>
  );
}
