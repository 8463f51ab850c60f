import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, NavLink, Route, Routes, useNavigate } from "react-router-dom";
import { ApiError, api, getToken, setToken, signInAgain } from "./api/client";
import { ClusterPage } from "./pages/Cluster";
import { ExperimentPage } from "./pages/Experiment";
import { ExperimentsPage } from "./pages/Experiments";
import { JobQueuePage } from "./pages/JobQueue";
import { SignInPage } from "./pages/SignIn";
import { SubmitPage } from "./pages/Submit";
import { TaskPage } from "./pages/Task";
import { TasksPage } from "./pages/Tasks";
import { TrialPage } from "./pages/Trial";
import "./styles.css";

// A 401 anywhere means the token is missing or no longer valid: off to the sign-in page.
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
  return (
    <>
      <header className="top">
        <span className="brand">assay</span>
        <nav aria-label="main">
          <NavLink to="/experiments">Experiments</NavLink>
          <NavLink to="/jobs">Job queue</NavLink>
          <NavLink to="/tasks">Jobs</NavLink>
          <NavLink to="/cluster">Cluster</NavLink>
          <NavLink to="/submit">Submit</NavLink>
        </nav>
        <span className="spacer" />
        {getToken() ? (
          <button
            type="button"
            className="link"
            onClick={() => {
              setToken(null);
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
      <main>
        <Routes>
          <Route path="/" element={<ExperimentsPage />} />
          <Route path="/experiments" element={<ExperimentsPage />} />
          <Route path="/experiments/:id" element={<ExperimentPage />} />
          <Route path="/trials/:id" element={<TrialPage />} />
          <Route path="/jobs" element={<JobQueuePage />} />
          <Route path="/cluster" element={<ClusterPage />} />
          <Route path="/submit" element={<SubmitPage />} />
          <Route path="/tasks" element={<TasksPage />} />
          <Route path="/tasks/:id" element={<TaskPage />} />
          <Route path="/sign-in" element={<SignInPage />} />
          <Route path="*" element={<p>No such page.</p>} />
        </Routes>
      </main>
    </>
  );
}

/**
 * The link `assay up` prints carries a one-time sign-in token (`/?token=...`): exchange it for
 * a session before anything is shown, and take it out of the address bar and history.
 */
async function signInFromLink(): Promise<void> {
  const url = new URL(location.href);
  const token = url.searchParams.get("token");
  if (!token) return;
  url.searchParams.delete("token");
  history.replaceState(null, "", url.pathname + url.search + url.hash);
  const { data, response } = await api.POST("/api/v1/auth/one-time", { body: { token } });
  if (response.ok && data) {
    setToken(data.token);
    return;
  }
  // A spent or expired link leaves any session there was. Without one, the sign-in page says
  // why the link did not sign in (the page asked comes after signing in).
  if (!getToken()) {
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
