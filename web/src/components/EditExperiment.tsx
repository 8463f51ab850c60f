// Edit an experiment: its name, description and labels at any time; its priority, weight and
// max slots while it runs (what `assay experiment set ...` changes). Only the fields changed
// are sent, and the master applies all of them or none.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { useNavigate } from "react-router-dom";
import { api, ok, type Experiment, type Schemas } from "../api/client";
import { ENDED, ErrorLine } from "./bits";


function resource(e: Experiment, key: string): string {
  const value = (e.config.resources as Record<string, unknown> | undefined)?.[key];
  return value === null || value === undefined ? "" : String(value);
}

export function EditExperiment({ experiment, onClose }: { experiment: Experiment; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const client = useQueryClient();
  const ended = ENDED.includes(experiment.state);
  const [name, setName] = useState(experiment.name);
  const [description, setDescription] = useState(experiment.description);
  const [labels, setLabels] = useState(experiment.labels.join(", "));
  const [priority, setPriority] = useState(resource(experiment, "priority"));
  const [weight, setWeight] = useState(resource(experiment, "weight"));
  const [maxSlots, setMaxSlots] = useState(resource(experiment, "max_slots"));
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const save = useMutation({
    mutationFn: () => {
      const change: Schemas["ExperimentResources"] = {};
      if (name !== experiment.name) change.name = name;
      if (description !== experiment.description) change.description = description;
      const newLabels = labels.split(",").map((l) => l.trim()).filter(Boolean);
      if (newLabels.join("\n") !== experiment.labels.join("\n")) change.labels = newLabels;
      if (!ended) {
        if (priority !== resource(experiment, "priority")) change.priority = Number(priority);
        if (weight !== resource(experiment, "weight")) change.weight = Number(weight);
        if (maxSlots !== resource(experiment, "max_slots")) change.max_slots = maxSlots === "" ? null : Number(maxSlots);
      }
      return ok(api.PATCH("/api/v1/experiments/{experiment_id}", {
        params: { path: { experiment_id: experiment.id } },
        body: change,
      }));
    },
    onSuccess: () => {
      client.invalidateQueries();
      dialog.current?.close();
    },
  });
  const why = ended ? "It has ended: only its name, description and labels change." : null;
  return (
    <dialog ref={dialog} onClose={onClose} aria-label={`Edit experiment ${experiment.id}`} className="dialog">
      <form onSubmit={(e) => { e.preventDefault(); save.mutate(); }}>
        <h2>Edit experiment {experiment.id}</h2>
        <label className="field">Name<input value={name} onChange={(e) => setName(e.target.value)} required /></label>
        <label className="field">Description<textarea rows={3} value={description} onChange={(e) => setDescription(e.target.value)} /></label>
        <label className="field">Labels, separated by commas<input value={labels} onChange={(e) => setLabels(e.target.value)} /></label>
        <fieldset disabled={ended}>
          <legend>Its share of the cluster</legend>
          <label className="field">Priority (1 first, 99 last; priority pools)<input type="number" min={1} max={99} value={priority} onChange={(e) => setPriority(e.target.value)} /></label>
          <label className="field">Weight (fair-share pools)<input type="number" min={0} step="any" value={weight} onChange={(e) => setWeight(e.target.value)} /></label>
          <label className="field">Max slots (empty: no limit)<input type="number" min={0} value={maxSlots} onChange={(e) => setMaxSlots(e.target.value)} /></label>
          {why && <small className="why">{why}</small>}
        </fieldset>
        <ErrorLine error={save.error} />
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()}>Cancel</button>
          <button type="submit" className="primary" disabled={save.isPending}>Save</button>
        </div>
      </form>
    </dialog>
  );
}

/** Delete an ended experiment, its trials and its checkpoints (from storage too), after saying
 * how many of each go (the master's dry run counts them). */
export function DeleteExperiment({ experiment }: { experiment: Experiment }) {
  const navigate = useNavigate();
  const client = useQueryClient();
  const path = { experiment_id: experiment.id };
  const remove = useMutation({
    mutationFn: async () => {
      const counted = await ok(api.DELETE("/api/v1/experiments/{experiment_id}", { params: { path, query: { dry_run: true } } }));
      const what = `experiment ${experiment.id} with its ${counted.trials} trial(s) and ${counted.checkpoints} checkpoint(s), from storage too`;
      if (!confirm(`Delete ${what}? This cannot be undone.`)) return null;
      return ok(api.DELETE("/api/v1/experiments/{experiment_id}", { params: { path } }));
    },
    onSuccess: (deleted) => {
      if (!deleted) return;
      client.invalidateQueries({ queryKey: ["experiments"] });
      navigate("/experiments");
    },
  });
  if (!ENDED.includes(experiment.state)) return null;
  return (
    <>
      <button type="button" className="danger" disabled={remove.isPending} onClick={() => remove.mutate()}>Delete</button>
      <ErrorLine error={remove.error} />
    </>
  );
}
