// Each page names its tab, so a browser's tabs and history tell one page from another.
import { useEffect } from "react";

/** Title the tab `what · assay` while the page shows (`assay` alone while `what` is unknown). */
export function useTitle(what: string | null | undefined): void {
  useEffect(() => {
    document.title = what ? `${what} · assay` : "assay";
  }, [what]);
}
