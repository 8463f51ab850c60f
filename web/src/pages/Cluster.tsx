// Cluster: resource pools with their scheduler, agents with their slots, utilisation.
import { useQuery } from "@tanstack/react-query";
import { api, ok } from "../api/client";
import { ErrorLine, Loading } from "../components/bits";
import { when } from "../format";
import { useLiveEvents } from "../live";
import { useTitle } from "../title";

export function ClusterPage() {
  useTitle("Cluster");
  useLiveEvents({ cluster: true });
  const pools = useQuery({ queryKey: ["pools"], queryFn: () => ok(api.GET("/api/v1/resource-pools")) });
  const agents = useQuery({ queryKey: ["agents"], queryFn: () => ok(api.GET("/api/v1/agents")) });
  const all = agents.data?.agents ?? [];
  const used = (pool: string) =>
    all.filter((a) => a.pool === pool && a.connected).flatMap((a) => a.slots).filter((s) => s.allocated).length;
  return (
    <section>
      <h1>Cluster</h1>
      <ErrorLine error={pools.error ?? agents.error} />
      <h2>Resource pools</h2>
      {pools.isPending ? <Loading /> : (
        <div className="table-scroll"><table aria-label="resource pools">
          <thead>
            <tr><th>Name</th><th>Scheduler</th><th>Preemption</th><th className="num">Agents</th><th className="num">Slots</th><th className="num">Used</th><th>Utilisation</th><th>Description</th></tr>
          </thead>
          <tbody>
            {pools.data?.resource_pools.map((p) => (
              <tr key={p.name}>
                <td>{p.name}</td><td>{p.scheduler}</td><td>{p.preemption ? "yes" : "no"}</td>
                <td className="num">{p.agents}</td><td className="num">{p.slots}</td><td className="num">{used(p.name)}</td>
                <td><progress max={Math.max(p.slots, 1)} value={used(p.name)} /> {p.slots ? Math.round((100 * used(p.name)) / p.slots) : 0}%</td>
                <td>{p.description}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      )}
      <h2>Agents</h2>
      {agents.isPending ? <Loading /> : (
        <div className="table-scroll"><table aria-label="agents">
          <thead>
            <tr><th>ID</th><th>Pool</th><th>Connected</th><th>Enabled</th><th>Address</th><th>Slots (free / used)</th><th>Labels</th><th>Containers</th><th>Last seen</th><th>Version</th></tr>
          </thead>
          <tbody>
            {all.map((a) => (
              <tr key={a.id}>
                <td>{a.id}</td><td>{a.pool}</td><td>{a.connected ? "yes" : "no"}</td><td>{a.enabled ? "yes" : "no"}</td>
                <td>{a.address}</td>
                <td>
                  <span className="slots">
                    {a.slots.map((s) => (
                      <span key={s.id} className={s.allocated ? "slot used" : "slot free"} title={`${s.name || s.id} (${s.type}) ${s.allocated ? "used" : "free"}`}>
                        {s.type}
                      </span>
                    ))}
                  </span>{" "}
                  {a.slots.filter((s) => !s.allocated).length} / {a.slots.filter((s) => s.allocated).length}
                </td>
                <td>{a.labels.join(", ")}</td><td>{a.container_runtime || "none"}</td><td>{when(a.last_seen)}</td><td>{a.version}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      )}
    </section>
  );
}
