// Sign-in: POST /api/v1/auth/browser-login sets the session cookie (HttpOnly: the page never
// holds the token).
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate, useSearchParams } from "react-router-dom";
import { api, ok } from "../api/client";
import { ErrorLine } from "../components/bits";
import { useTitle } from "../title";

export function SignInPage() {
  useTitle("Sign in");
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const next = params.get("next");
  const link = params.get("link");
  return (
    <section className="sign-in">
      <h1>Sign in</h1>
      {link === "spent" && (
        <p className="message" role="status">
          This sign-in link was already used or has expired: sign in with your user, or run{" "}
          <code>assay up</code> again for a fresh link.
        </p>
      )}
      {link === "busy" && (
        <p className="message" role="status">
          Too many sign-in attempts from here: wait a minute and open the link again, or sign in with your user.
        </p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            await ok(api.POST("/api/v1/auth/browser-login", { body: { username, password } }));
            client.clear();
            // Only a path on this site: never an address another page slipped in.
            navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/experiments");
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label>
          User <input name="username" autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        </label>
        <label>
          Password <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        <ErrorLine error={error} />
        <button type="submit" className="primary" disabled={busy}>Sign in</button>
      </form>
      <p className="muted">
        On a cluster started with <code>assay up</code>, the user is <code>admin</code> and its
        password is in <code>$ASSAY_HOME/admin-password</code> (<code>~/.assay/admin-password</code> by default).
      </p>
    </section>
  );
}
