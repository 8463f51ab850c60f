// Experiments side by side (`/compare?ids=1,2,3`): each one's state, searcher and best trial,
// the learning curves of their best trials on one chart, and the settings in which their
// effective configs differ.
import { useQueries } from "@tanstack/react-query";
import { useMemo, type ReactNode } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { api, ok, type Experiment } from "../api/client";
import { ErrorLine, Loading, StateBadge } from "../components/bits";
import { LineChart, type Series } from "../components/Chart";
import { num, percent } from "../format";
import { idList } from "../params";
import { useTitle } from "../title";

/** The most experiments one comparison shows. */
const MAX = 10;

export function ComparePage() {
  const [params] = useSearchParams();
  const ids = useMemo(() => idList(params.get("ids")).slice(0, MAX), [params]);
  useTitle(`Compare ${ids.join(", ")}`);
  const experiments = useQueries({
    queries: ids.map((id) => ({
      queryKey: ["experiment", id],
      queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}", { params: { path: { experiment_id: id } } })),
    })),
  });
  const loaded = experiments.map((q) => q.data).filter((e): e is Experiment => e !== undefined);
  const curves = useQueries({
    queries: loaded.map((e) => ({
      queryKey: ["curves", e.id, String(e.best_trial?.id ?? ""), null],
      queryFn: () => ok(api.GET("/api/v1/experiments/{experiment_id}/metrics", {
        params: { path: { experiment_id: e.id }, query: { trial_ids: String(e.best_trial?.id) } },
      })),
      enabled: e.best_trial != null,
    })),
  });
  const series: Series[] = loaded.flatMap((e, i) => {
    const data = curves[i]?.data;
    return (data?.series ?? []).map((s) => ({
      label: `experiment ${e.id} (trial ${s.trial_id})`,
      points: s.steps.map((step, k) => [step, s.values[k]] as [number, number]),
    }));
  });
  const metrics = new Set(loaded.map((e) => e.searcher.metric ?? ""));
  const differing = useMemo(() => differences(loaded.map((e) => e.config)), [loaded]);

  if (ids.length < 2)
    return <p className="muted">Choose two or more experiments to compare: tick them on the <Link to="/experiments">Experiments</Link> page.</p>;
  if (experiments.some((q) => q.isPending)) return <Loading />;
  const failed = experiments.find((q) => q.error);
  return (
    <section>
      <h1>Compare experiments {ids.join(", ")}</h1>
      {failed && <ErrorLine error={failed.error} />}
      <div className="table-scroll">
        <table aria-label="experiments compared">
          <thead>
            <tr>
              <th />
              {loaded.map((e) => <th key={e.id}><Link to={`/experiments/${e.id}`}>{e.id}: {e.name}</Link></th>)}
            </tr>
          </thead>
          <tbody>
            <Row name="State" cells={loaded.map((e) => <StateBadge key={e.id} state={e.state} />)} />
            <Row name="Progress" cells={loaded.map((e) => percent(e.progress))} />
            <Row name="Searcher" cells={loaded.map((e) => `${e.searcher.name ?? ""} on ${e.searcher.metric ?? ""}`)} />
            <Row name="Trials" cells={loaded.map((e) => Object.values(e.trials ?? {}).reduce((a: number, b) => a + Number(b), 0))} />
            <Row
              name="Best trial"
              cells={loaded.map((e) => e.best_trial ? <Link key={e.id} to={`/trials/${e.best_trial.id}`}>trial {e.best_trial.id}</Link> : "")}
            />
            <Row name="Best validation" cells={loaded.map((e) => num(e.best_trial?.best_validation))} />
            <Row name="User" cells={loaded.map((e) => e.owner)} />
          </tbody>
        </table>
      </div>
      <h2>Best trials' learning curves</h2>
      {metrics.size > 1 && <p className="muted">Their searchers rank by different metrics; each curve is its own experiment's.</p>}
      {series.length ? <LineChart title={[...metrics].join(" / ")} series={series} /> : <p className="muted">No best trial has reported its metric yet.</p>}
      <h2>Where their configs differ</h2>
      {differing.length === 0 ? <p className="muted">Their effective configs are the same.</p> : (
        <div className="table-scroll">
          <table aria-label="config differences">
            <thead>
              <tr>
                <th>Setting</th>
                {loaded.map((e) => <th key={e.id}>{e.id}</th>)}
              </tr>
            </thead>
            <tbody>
              {differing.map(([key, values]) => (
                <tr key={key}>
                  <th><code>{key}</code></th>
                  {values.map((v, i) => <td key={i}><code>{v}</code></td>)}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Row({ name, cells }: { name: string; cells: ReactNode[] }) {
  return (
    <tr>
      <th>{name}</th>
      {cells.map((c, i) => <td key={i}>{c}</td>)}
    </tr>
  );
}

/** Each dotted key whose value is not the same in every config, with each config's value. */
function differences(configs: Record<string, unknown>[]): [string, string[]][] {
  const flat = configs.map((c) => flatten(c));
  const keys = Array.from(new Set(flat.flatMap((f) => [...f.keys()]))).sort();
  const out: [string, string[]][] = [];
  for (const key of keys) {
    const values = flat.map((f) => f.get(key) ?? "—");
    if (new Set(values).size > 1) out.push([key, values]);
  }
  return out;
}

function flatten(value: unknown, prefix = "", out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(value));
  return out;
}
