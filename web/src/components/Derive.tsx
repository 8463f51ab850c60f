// New work from an experiment that exists: Fork (its config and context, with overrides) and
// Continue (one of its trials trained further from its latest checkpoint), as `assay e fork`
// and `assay e continue` do; and a TensorBoard over its trials.
import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import { api, ok, type ExperimentState } from "../api/client";
import { ENDED, ErrorLine } from "./bits";


export type DeriveKind = "fork" | "continue";

/** `key.path=value` lines (blank ones skipped), as `--config` takes them. */
function overrideLines(text: string): string[] {
  return text.split("\n").map((l) => l.trim()).filter(Boolean);
}

export function DeriveDialog({
  kind,
  experimentId,
  trialId,
  onClose,
}: {
  kind: DeriveKind;
  experimentId: number;
  /** The trial to continue (needed when the experiment has several). */
  trialId?: number;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const navigate = useNavigate();
  const [overrides, setOverrides] = useState("");
  const [paused, setPaused] = useState(false);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const create = useMutation({
    mutationFn: () => {
      const body = { overrides: overrideLines(overrides), activate: !paused };
      const path = { experiment_id: experimentId };
      return kind === "fork"
        ? ok(api.POST("/api/v1/experiments/{experiment_id}/fork", { params: { path }, body }))
        : ok(api.POST("/api/v1/experiments/{experiment_id}/continue", {
          params: { path },
          body: { ...body, trial_id: trialId ?? null },
        }));
    },
    onSuccess: (experiment) => navigate(`/experiments/${experiment.id}`),
  });
  const title = kind === "fork" ? `Fork experiment ${experimentId}` : `Continue trial ${trialId ?? ""}`.trim();
  return (
    <dialog ref={dialog} onClose={onClose} aria-label={title} className="dialog">
      <form onSubmit={(e) => { e.preventDefault(); create.mutate(); }}>
        <h2>{title}</h2>
        <p className="why">
          {kind === "fork"
            ? "A new experiment with this one's config and code, with these changes."
            : "A new experiment whose one trial trains this trial further from its latest checkpoint, with the same hyperparameters. Give a larger searcher.max_length to train longer."}
        </p>
        <label className="field">
          Config changes, one <code>key.path=value</code> a line
          <textarea
            rows={4}
            value={overrides}
            placeholder={kind === "fork" ? "name=my-fork\nhyperparameters.lr=0.01" : "searcher.max_length.batches=2000"}
            onChange={(e) => setOverrides(e.target.value)}
          />
        </label>
        <label className="check">
          <input type="checkbox" checked={paused} onChange={(e) => setPaused(e.target.checked)} />
          Create it paused
        </label>
        <ErrorLine error={create.error} />
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()}>Cancel</button>
          <button type="submit" className="primary" disabled={create.isPending}>
            {kind === "fork" ? "Fork" : "Continue"}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** Fork, Continue (for an ended experiment of one trial; a trial's page continues any of
 * several) and TensorBoard. */
export function DeriveActions({
  experimentId,
  state,
  trials,
}: {
  experimentId: number;
  state: ExperimentState;
  trials: number;
}) {
  const [open, setOpen] = useState<DeriveKind | null>(null);
  const canContinue = ENDED.includes(state) && trials === 1;
  return (
    <span className="actions">
      <button type="button" onClick={() => setOpen("fork")}>Fork</button>
      {canContinue && <button type="button" onClick={() => setOpen("continue")}>Continue</button>}
      <TensorBoardButton experimentId={experimentId} />
      {open && <DeriveDialog kind={open} experimentId={experimentId} onClose={() => setOpen(null)} />}
    </span>
  );
}

/** Start TensorBoard over the experiment's trials; once it has started, link its job page. */
function TensorBoardButton({ experimentId }: { experimentId: number }) {
  const start = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/tensorboards", { body: { experiment_id: experimentId } })),
  });
  if (start.data)
    return <Link to={`/tasks/${start.data.id}`}>TensorBoard (job {start.data.id})</Link>;
  return (
    <>
      <button type="button" disabled={start.isPending} onClick={() => start.mutate()}>TensorBoard</button>
      <ErrorLine error={start.error} />
    </>
  );
}
