// The model registry: models by name, and one model's versions with their checkpoints.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router-dom";
import { api, ok, type Model, type ModelVersion } from "../api/client";
import { ErrorLine, Loading } from "../components/bits";
import { Table, type Column } from "../components/Table";
import { when } from "../format";
import { useMayAct } from "../me";
import { downloadHref } from "../components/Checkpoints";
import { useTitle } from "../title";

export function ModelsPage() {
  useTitle("Models");
  const [params, setParams] = useSearchParams();
  const filter = params.get("name") ?? "";
  const models = useQuery({
    queryKey: ["models", filter],
    queryFn: () => ok(api.GET("/api/v1/models", { params: { query: { name: filter || undefined, limit: 1000 } } })),
  });
  const columns: Column<Model>[] = [
    { key: "name", header: "Name", value: (m) => m.name, cell: (m) => <Link to={`/models/${encodeURIComponent(m.name)}`}>{m.name}</Link> },
    { key: "versions", header: "Versions", value: (m) => m.versions, cell: (m) => m.versions, className: "num" },
    { key: "latest", header: "Latest", value: (m) => m.latest_version, cell: (m) => m.latest_version ?? "", className: "num" },
    { key: "owner", header: "Owner", value: (m) => m.owner, cell: (m) => m.owner },
    { key: "labels", header: "Labels", value: (m) => m.labels.join(","), cell: (m) => m.labels.join(", ") },
    { key: "updated", header: "Updated", value: (m) => m.updated_at, cell: (m) => when(m.updated_at) },
    { key: "description", header: "Description", cell: (m) => m.description },
  ];
  return (
    <section>
      <h1>Models</h1>
      <div className="filters">
        <label>
          Name contains{" "}
          <input
            value={filter}
            onChange={(e) => {
              const next = new URLSearchParams(params);
              if (e.target.value) next.set("name", e.target.value);
              else next.delete("name");
              setParams(next, { replace: true });
            }}
          />
        </label>
        <NewModel />
      </div>
      <ErrorLine error={models.error} />
      {models.isPending ? <Loading /> : (
        <Table
          label="models"
          defaultSort="name"
          rows={models.data?.models ?? []}
          columns={columns}
          rowKey={(m) => m.id}
          sortParam="sort"
          height={520}
          empty="No models yet: register a checkpoint from an experiment's or a trial's page, or with `assay model register`."
        />
      )}
    </section>
  );
}

function NewModel() {
  const navigate = useNavigate();
  const client = useQueryClient();
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/models", { body: { name, description: "" } })),
    onSuccess: (model) => {
      client.invalidateQueries({ queryKey: ["models"] });
      navigate(`/models/${encodeURIComponent(model.name)}`);
    },
  });
  return (
    <form className="actions" onSubmit={(e) => { e.preventDefault(); create.mutate(); }}>
      <input aria-label="new model name" placeholder="new model name" value={name} onChange={(e) => setName(e.target.value)} />
      <button type="submit" disabled={!name || create.isPending}>Create model</button>
      <ErrorLine error={create.error} />
    </form>
  );
}

export function ModelPage() {
  useTitle(`Model ${useParams().name ?? ""}`);
  const name = useParams().name ?? "";
  const navigate = useNavigate();
  const client = useQueryClient();
  const versions = useQuery({
    queryKey: ["model", name],
    queryFn: () => ok(api.GET("/api/v1/models/{name}/versions", { params: { path: { name } } })),
  });
  const owner = versions.data?.model.owner ?? "";
  const mayAct = useMayAct(owner);
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/api/v1/models/{name}", { params: { path: { name } } })),
    onSuccess: () => {
      client.invalidateQueries({ queryKey: ["models"] });
      navigate("/models");
    },
  });
  if (versions.isPending) return <Loading />;
  if (versions.error) return <ErrorLine error={versions.error} />;
  const { model } = versions.data;
  const columns: Column<ModelVersion>[] = [
    { key: "version", header: "Version", value: (v) => v.version, cell: (v) => v.version, className: "num" },
    { key: "name", header: "Name", value: (v) => v.name, cell: (v) => v.name },
    { key: "checkpoint", header: "Checkpoint", value: (v) => v.checkpoint.uuid, cell: (v) => <code>{v.checkpoint.uuid}</code> },
    {
      key: "trial", header: "Trial", value: (v) => v.checkpoint.trial_id,
      cell: (v) => <Link to={`/trials/${v.checkpoint.trial_id}`}>{v.checkpoint.trial_id}</Link>,
    },
    { key: "steps", header: "Steps", value: (v) => v.checkpoint.steps_completed, cell: (v) => v.checkpoint.steps_completed, className: "num" },
    { key: "owner", header: "Registered by", value: (v) => v.owner, cell: (v) => v.owner },
    { key: "created", header: "Registered", value: (v) => v.created_at, cell: (v) => when(v.created_at) },
    { key: "comment", header: "Comment", cell: (v) => v.comment },
    {
      key: "download", header: "Files",
      cell: (v) => <a href={downloadHref(v.checkpoint.uuid)} download aria-label={`download version ${v.version}`}>Download</a>,
    },
  ];
  return (
    <section>
      <h1>Model {model.name}</h1>
      <div className="summary">
        <span>owner {model.owner}</span>
        <span>{model.versions} version(s)</span>
        <span>created {when(model.created_at)}</span>
        {model.labels.length > 0 && <span>labels {model.labels.join(", ")}</span>}
        {mayAct && (
          <button
            type="button"
            className="danger"
            disabled={remove.isPending}
            onClick={() => {
              if (confirm(`Delete model ${model.name} and its ${model.versions} version(s)? Their checkpoints stay in storage.`)) remove.mutate();
            }}
          >
            Delete model
          </button>
        )}
      </div>
      <ErrorLine error={remove.error} />
      {model.description && <p>{model.description}</p>}
      <h2>Versions</h2>
      <Table
        label="versions"
        defaultSort="-version"
        rows={versions.data.versions}
        columns={columns}
        rowKey={(v) => v.id}
        sortParam="vsort"
        height={420}
        empty="No versions yet: register a checkpoint from an experiment's or a trial's page."
      />
    </section>
  );
}
