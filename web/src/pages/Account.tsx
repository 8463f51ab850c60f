// Users and access tokens: one's own password and tokens; for admins, every user (add one,
// make or unmake an admin, deactivate) and every user's tokens. What `assay user` and
// `assay token` do from the CLI.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, ok, type Schemas, type User } from "../api/client";
import { ErrorLine, Loading } from "../components/bits";
import { Table, type Column } from "../components/Table";
import { when } from "../format";
import { useMe } from "../me";
import { useTitle } from "../title";

type Token = Schemas["AccessToken"];

export function AccountPage() {
  useTitle("Users and tokens");
  const me = useMe();
  if (me.isPending) return <Loading />;
  if (me.error) return <ErrorLine error={me.error} />;
  return (
    <section>
      <h1>Users and tokens</h1>
      <p className="muted">
        Signed in as <strong>{me.data.username}</strong>{me.data.admin ? " (an admin)" : ""}.
      </p>
      <h2>Your password</h2>
      <PasswordForm username={me.data.username} />
      <h2>Access tokens</h2>
      <Tokens everyone={me.data.admin} />
      {me.data.admin && (
        <>
          <h2>Users</h2>
          <Users self={me.data.username} />
        </>
      )}
    </section>
  );
}

function PasswordForm({ username }: { username: string }) {
  const [password, setPassword] = useState("");
  const change = useMutation({
    mutationFn: () => ok(api.PATCH("/api/v1/users/{username}", { params: { path: { username } }, body: { password } })),
    onSuccess: () => setPassword(""),
  });
  return (
    <form className="actions" onSubmit={(e) => { e.preventDefault(); change.mutate(); }}>
      <label>
        New password{" "}
        <input type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
      </label>
      <button type="submit" disabled={!password || change.isPending}>Change password</button>
      {change.isSuccess && <span role="status">Password changed.</span>}
      <ErrorLine error={change.error} />
    </form>
  );
}

function Tokens({ everyone }: { everyone: boolean }) {
  const client = useQueryClient();
  const [description, setDescription] = useState("");
  const [days, setDays] = useState("");
  const [made, setMade] = useState<string | null>(null);
  const tokens = useQuery({
    queryKey: ["tokens", everyone],
    queryFn: () => ok(api.GET("/api/v1/tokens", { params: { query: { all_users: everyone } } })),
  });
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/tokens", {
      body: { description, lifespan_days: days ? Number(days) : null },
    })),
    onSuccess: (answer) => {
      setMade(answer.token);
      setDescription("");
      client.invalidateQueries({ queryKey: ["tokens"] });
    },
  });
  const revoke = useMutation({
    mutationFn: (id: number) => ok(api.DELETE("/api/v1/tokens/{token_id}", { params: { path: { token_id: id } } })),
    onSettled: () => client.invalidateQueries({ queryKey: ["tokens"] }),
  });
  const columns: Column<Token>[] = [
    { key: "id", header: "ID", value: (t) => t.id, cell: (t) => t.id, className: "num" },
    ...(everyone ? [{ key: "user", header: "User", value: (t: Token) => t.username, cell: (t: Token) => t.username }] : []),
    { key: "description", header: "Description", value: (t) => t.description, cell: (t) => t.description },
    { key: "created", header: "Created", value: (t) => t.created_at, cell: (t) => when(t.created_at) },
    { key: "expires", header: "Expires", value: (t) => t.expires_at ?? null, cell: (t) => (t.expires_at ? when(t.expires_at) : "never") },
    {
      key: "state", header: "State", value: (t) => (t.revoked_at ? "revoked" : "active"),
      cell: (t) => (t.revoked_at ? `revoked ${when(t.revoked_at)}` : (
        <button
          type="button"
          className="danger"
          aria-label={`revoke token ${t.id}`}
          disabled={revoke.isPending}
          onClick={() => { if (confirm(`Revoke token ${t.id}? Programs using it are refused from now on.`)) revoke.mutate(t.id); }}
        >
          Revoke
        </button>
      )),
    },
  ];
  return (
    <>
      <form className="filters" onSubmit={(e) => { e.preventDefault(); setMade(null); create.mutate(); }}>
        <label>
          Description <input value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <label>
          Days until it expires <input type="number" min={1} placeholder="never" value={days} onChange={(e) => setDays(e.target.value)} />
        </label>
        <button type="submit" disabled={create.isPending}>Create token</button>
      </form>
      <ErrorLine error={create.error ?? revoke.error} />
      {made && (
        <p role="status">
          The new token, shown this once (give it to a program as <code>ASSAY_USER_TOKEN</code>): <code aria-label="new token">{made}</code>
        </p>
      )}
      {tokens.isPending ? <Loading /> : (
        <Table label="tokens" defaultSort="-id" rows={tokens.data?.tokens ?? []} columns={columns} rowKey={(t) => t.id} sortParam="tsort" height={260} empty="No access tokens." />
      )}
      <ErrorLine error={tokens.error} />
    </>
  );
}

function Users({ self }: { self: string }) {
  const client = useQueryClient();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [admin, setAdmin] = useState(false);
  const users = useQuery({ queryKey: ["users"], queryFn: () => ok(api.GET("/api/v1/users")) });
  const create = useMutation({
    mutationFn: () => ok(api.POST("/api/v1/users", { body: { username: name, password, admin } })),
    onSuccess: () => {
      setName("");
      setPassword("");
      client.invalidateQueries({ queryKey: ["users"] });
    },
  });
  const change = useMutation({
    mutationFn: ({ username, body }: { username: string; body: { admin?: boolean; active?: boolean } }) =>
      ok(api.PATCH("/api/v1/users/{username}", { params: { path: { username } }, body })),
    onSettled: () => client.invalidateQueries({ queryKey: ["users"] }),
  });
  const columns: Column<User>[] = [
    { key: "username", header: "User", value: (u) => u.username, cell: (u) => u.username },
    { key: "admin", header: "Admin", value: (u) => String(u.admin), cell: (u) => (u.admin ? "yes" : "no") },
    { key: "active", header: "Active", value: (u) => String(u.active), cell: (u) => (u.active ? "yes" : "no") },
    { key: "created", header: "Created", value: (u) => u.created_at, cell: (u) => when(u.created_at) },
    {
      key: "actions", header: "Actions",
      cell: (u) => u.username === self ? <span className="muted">you</span> : (
        <span className="actions compact">
          <button type="button" aria-label={`${u.admin ? "unmake" : "make"} ${u.username} an admin`} onClick={() => change.mutate({ username: u.username, body: { admin: !u.admin } })}>
            {u.admin ? "Unmake admin" : "Make admin"}
          </button>
          <button type="button" aria-label={`${u.active ? "deactivate" : "activate"} ${u.username}`} onClick={() => change.mutate({ username: u.username, body: { active: !u.active } })}>
            {u.active ? "Deactivate" : "Activate"}
          </button>
        </span>
      ),
    },
  ];
  return (
    <>
      <form className="filters" onSubmit={(e) => { e.preventDefault(); create.mutate(); }}>
        <label>
          New user <input aria-label="new user name" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Password <input aria-label="new user password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        </label>
        <label className="check">
          <input type="checkbox" checked={admin} onChange={(e) => setAdmin(e.target.checked)} /> Admin
        </label>
        <button type="submit" disabled={!name || !password || create.isPending}>Add user</button>
      </form>
      <ErrorLine error={create.error ?? change.error} />
      {users.isPending ? <Loading /> : (
        <Table label="users" defaultSort="username" rows={users.data?.users ?? []} columns={columns} rowKey={(u) => u.id} sortParam="usort" height={300} empty="No users." />
      )}
    </>
  );
}
