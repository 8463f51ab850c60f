// What the Notebooks and Shells pages share: the list's "ended ones too" box (in the URL), the
// Kill button (asked first), the Logs link (a notebook or shell is a task: its page shows its
// output) and a command shown to copy.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { api, ok } from "../api/client";
import type { Kind } from "./StartForm";

const ENDED = ["SUCCEEDED", "FAILED", "STOPPED"];

/** How often a list is read while one of it runs but its process has not said it started (no
 * change of the job queue says so). */
export const STARTING_POLL_MS = 2000;

export function hasEnded(state: string): boolean {
  return ENDED.includes(state);
}

/** Whether ended ones are listed too (`ended=1` in the URL), and the box that says so. */
export function useShowEnded(): [boolean, ReactNode] {
  const [params, setParams] = useSearchParams();
  const shown = params.get("ended") === "1";
  const box = (
    <label className="check">
      <input
        type="checkbox"
        checked={shown}
        onChange={(e) => {
          const next = new URLSearchParams(params);
          if (e.target.checked) next.set("ended", "1");
          else next.delete("ended");
          setParams(next, { replace: true });
        }}
      />
      Show ended ones
    </label>
  );
  return [shown, box];
}

/** The list's query key: under ["task"], which every change of the job queue reads again. */
export function listKey(kind: Kind, all: boolean): unknown[] {
  return ["task", `${kind}s`, all];
}

export function KillButton({ kind, id }: { kind: Kind; id: number }) {
  const client = useQueryClient();
  const kill = useMutation<unknown, Error>({
    mutationFn: () =>
      kind === "notebook"
        ? ok(api.POST("/api/v1/notebooks/{notebook_id}/kill", { params: { path: { notebook_id: id } } }))
        : ok(api.POST("/api/v1/shells/{shell_id}/kill", { params: { path: { shell_id: id } } })),
    onSettled: () => client.invalidateQueries({ queryKey: ["task"] }),
  });
  return (
    <>
      <button
        type="button"
        className="danger"
        aria-label={`kill ${kind} ${id}`}
        disabled={kill.isPending}
        onClick={() => {
          if (confirm(`Kill ${kind} ${id}? ${kind === "notebook" ? "Its kernels end" : "Every session in it ends"}.`))
            kill.mutate();
        }}
      >
        Kill
      </button>
      {kill.error && <span className="error">{kill.error.message}</span>}
    </>
  );
}

export function LogsLink({ kind, id }: { kind: Kind; id: number }) {
  return (
    <Link to={`/tasks/${id}`} aria-label={`logs of ${kind} ${id}`}>
      Logs
    </Link>
  );
}

/** `text` in code, with a button that copies it. */
export function CopyCommand({ text }: { text: string }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      await copyText(text);
      setSaid("Copied");
    } catch {
      setSaid("Select it and copy");
    }
    setTimeout(() => setSaid(""), 2000);
  };
  return (
    <span className="command">
      <code>{text}</code>
      <button type="button" aria-label={`copy ${text}`} onClick={copy}>
        Copy
      </button>
      {said && <span className="muted" role="status">{said}</span>}
    </span>
  );
}

/** Put `text` on the clipboard: the Clipboard API where the page may use it (https, localhost),
 * else the older copy of a selection. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const box = document.createElement("textarea");
  box.value = text;
  box.setAttribute("readonly", "");
  box.style.position = "fixed";
  box.style.opacity = "0";
  document.body.append(box);
  box.select();
  const copied = document.execCommand("copy");
  box.remove();
  if (!copied) throw new Error("copy refused");
}
