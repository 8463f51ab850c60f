// Open a notebook in a new tab. The master serves it at `/proxy/ID/` to its owner and admins,
// signed in by a cookie of that path, which the master sets when the path is asked once with
// `?token=` (here a one-time sign-in token, spent there). The page's session cookie is not
// sent there, so the page fetches a one-time token, spends it with a request of its own (the
// cookie lands in the browser, HttpOnly), waits until JupyterLab answers through the proxy
// (its process is up before it listens), then sends the tab there: the token is never in an
// address bar or the history, and the tab never shows a "not listening yet" answer.
//
// The tab is opened by the click itself, blank, and sent on after the fetches: a tab opened
// after an await is no longer the click's and a browser may block it as a pop-up.
import { useState } from "react";
import { api, ok, type Notebook } from "../api/client";

const WAIT_MS = 120_000;
const POLL_MS = 1000;

export function OpenNotebook({ book }: { book: Notebook }) {
  const [error, setError] = useState("");
  const [opening, setOpening] = useState(false);
  const open = async () => {
    setError("");
    const tab = window.open("", "_blank");
    if (!tab) {
      setError("the browser blocked the new tab: allow pop-ups for this site and try again");
      return;
    }
    say(tab, `Opening notebook ${book.id}…`, `Opening ${book.name}: waiting for JupyterLab to answer…`);
    setOpening(true);
    try {
      await signInAndWait(book, () => tab.closed);
      if (tab.closed) return;
      // The notebook's pages have no business with this one.
      tab.opener = null;
      tab.location.replace(new URL(book.url, location.origin).href);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      say(tab, `Notebook ${book.id} did not open`, message);
      setError(message);
    } finally {
      setOpening(false);
    }
  };
  return (
    <>
      <button
        type="button"
        className="primary"
        aria-label={`open notebook ${book.id}`}
        disabled={!book.ready || opening}
        title={book.ready ? "Open JupyterLab in a new tab" : "It opens once it runs"}
        onClick={open}
      >
        Open
      </button>
      {error && <span className="error">{error}</span>}
    </>
  );
}

/** Sign this browser in at the notebook's path with a one-time token, then wait until
 * JupyterLab answers there (or the tab is closed: `closed`). */
async function signInAndWait(book: Notebook, closed: () => boolean): Promise<void> {
  const { token } = await ok(api.POST("/api/v1/auth/one-time-tokens"));
  const status = `${book.url}api/status`;
  // Answered by a redirect that sets the path's cookie, followed to the status itself.
  let answer = await fetch(`${status}?token=${encodeURIComponent(token)}`, { credentials: "same-origin" });
  const until = Date.now() + WAIT_MS;
  // 503: the proxy's "not listening yet" (or queued); asked again, now with the cookie.
  while (answer.status === 503 && Date.now() < until && !closed()) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    answer = await fetch(status, { credentials: "same-origin" });
  }
  if (answer.ok || closed()) return;
  throw new Error(await reason(answer, book));
}

async function reason(answer: Response, book: Notebook): Promise<string> {
  const body = (await answer.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
  const said = body?.error?.message ?? `${answer.status} ${answer.statusText}`;
  return answer.status === 503
    ? `JupyterLab did not answer within ${WAIT_MS / 1000} s (${said}); its Logs say why`
    : `notebook ${book.id}: ${said}`;
}

/** Show `text` in the blank tab while it waits (its title as `title`). */
function say(tab: Window, title: string, text: string): void {
  try {
    tab.document.title = title;
    tab.document.body.style.font = "14px system-ui, sans-serif";
    tab.document.body.textContent = text;
  } catch {
    // A tab that has gone elsewhere is not this page's to write to.
  }
}
