import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, Navigate, NavLink, Route, Routes, useLocation, useNavigate } from "react-router-dom";
import { ApiError, api, signInAgain } from "./api/client";
import { AccountPage } from "./pages/Account";
import { ClusterPage } from "./pages/Cluster";
import { ComparePage } from "./pages/Compare";
import { ExperimentPage } from "./pages/Experiment";
import { ExperimentsPage } from "./pages/Experiments";
import { JobQueuePage } from "./pages/JobQueue";
import { ModelPage, ModelsPage } from "./pages/Models";
import { NotebooksPage } from "./pages/Notebooks";
import { ShellsPage } from "./pages/Shells";
import { SignInPage } from "./pages/SignIn";
import { SubmitPage } from "./pages/Submit";
import { TaskPage } from "./pages/Task";
import { TasksPage } from "./pages/Tasks";
import { TrialPage } from "./pages/Trial";
import { useMasterLink } from "./live";
import { useMe } from "./me";
import "./styles.css";

// A 401 anywhere means the session is missing or no longer valid: off to the sign-in page.
const queryClient = new QueryClient({
  queryCache: new QueryCache({
    onError: (error) => {
      if (error instanceof ApiError && error.status === 401) signInAgain();
    },
  }),
  defaultOptions: {
    queries: {
      staleTime: 1000,
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
    },
  },
});

function Layout() {
  const navigate = useNavigate();
  // No script can read the session cookie, so the page cannot tell whether there is one: every
  // page but the sign-in page offers to sign out (a page whose reads are refused goes to the
  // sign-in page on its own).
  const signingIn = useLocation().pathname === "/sign-in";
  return (
    <>
      <header className="top">
        <span className="brand">assay</span>
        <nav aria-label="main">
          <NavLink to="/experiments">Experiments</NavLink>
          <NavLink to="/jobs">Job queue</NavLink>
          <NavLink to="/tasks">Jobs</NavLink>
          <NavLink to="/models">Models</NavLink>
          <NavLink to="/notebooks">Notebooks</NavLink>
          <NavLink to="/shells">Shells</NavLink>
          <NavLink to="/cluster">Cluster</NavLink>
          <NavLink to="/submit">Submit</NavLink>
        </nav>
        <span className="spacer" />
        {!signingIn && <SignedInAs />}
        {!signingIn ? (
          <button
            type="button"
            className="link"
            onClick={async () => {
              // The master ends the session and clears its cookie.
              await api.POST("/api/v1/auth/logout").catch(() => undefined);
              queryClient.clear();
              navigate("/sign-in");
            }}
          >
            Sign out
          </button>
        ) : (
          <NavLink to="/sign-in">Sign in</NavLink>
        )}
      </header>
      <MasterLost />
      <main>
        <Routes>
          <Route path="/" element={<Home />} />
          <Route path="/experiments" element={<ExperimentsPage />} />
          <Route path="/experiments/:id" element={<ExperimentPage />} />
          <Route path="/compare" element={<ComparePage />} />
          <Route path="/trials/:id" element={<TrialPage />} />
          <Route path="/jobs" element={<JobQueuePage />} />
          <Route path="/cluster" element={<ClusterPage />} />
          <Route path="/submit" element={<SubmitPage />} />
          <Route path="/tasks" element={<TasksPage />} />
          <Route path="/tasks/:id" element={<TaskPage />} />
          <Route path="/models" element={<ModelsPage />} />
          <Route path="/models/:name" element={<ModelPage />} />
          <Route path="/notebooks" element={<NotebooksPage />} />
          <Route path="/shells" element={<ShellsPage />} />
          <Route path="/account" element={<AccountPage />} />
          <Route path="/sign-in" element={<SignInPage />} />
          <Route path="*" element={<p>No such page.</p>} />
        </Routes>
      </main>
    </>
  );
}

/** Said while the master does not answer: the page's data may be out of date until it does. */
function MasterLost() {
  if (useMasterLink() === "up") return null;
  return (
    <p className="banner" role="alert">
      The master is not answering: what this page shows may be out of date. Trying again…
    </p>
  );
}

/** `/` is the experiments' page under its own address, so the header marks where one is. */
function Home() {
  const { search } = useLocation();
  return <Navigate to={{ pathname: "/experiments", search }} replace />;
}

/** The signed-in user's name (and that they are an admin), once the master has said who. */
function SignedInAs() {
  const me = useMe().data;
  if (!me) return null;
  return (
    <NavLink
      className="who"
      to="/account"
      aria-label={`signed in as ${me.username}${me.admin ? ", an admin" : ""}`}
      title="your password and tokens; users, for admins"
    >
      {me.username}
      {me.admin && <> <span className="tag">admin</span></>}
    </NavLink>
  );
}

/**
 * The link `assay up` prints carries a one-time sign-in token in its fragment (`/#token=...`),
 * which the browser never sends to a server nor passes on as a Referer: exchange it for the
 * session cookie before anything is shown, and take it out of the address bar and history. A
 * token in the query string (`?token=`) is taken out unused: it went to the server already.
 */
async function signInFromLink(): Promise<void> {
  const url = new URL(location.href);
  const fragment = new URLSearchParams(url.hash.slice(1));
  const token = fragment.get("token");
  if (!token && !url.searchParams.has("token")) return;
  fragment.delete("token");
  url.searchParams.delete("token");
  const rest = fragment.toString();
  history.replaceState(null, "", url.pathname + url.search + (rest ? `#${rest}` : ""));
  if (!token) return;
  const { response } = await api.POST("/api/v1/auth/one-time", { body: { token } });
  if (response.ok) return;
  // A spent or expired link leaves any session there was. Without one, the sign-in page says
  // why the link did not sign in (the page asked comes after signing in).
  const signedIn = (await api.GET("/api/v1/me")).response.ok;
  if (!signedIn) {
    const next = new URLSearchParams({ link: response.status === 429 ? "busy" : "spent", next: url.pathname + url.search });
    history.replaceState(null, "", `/sign-in?${next}`);
  }
}

await signInFromLink().catch(() => undefined);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <Layout />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
