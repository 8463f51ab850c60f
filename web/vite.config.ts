import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The bundle goes into the Python package, where the master serves it at `/`.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "../src/assay/webui/dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 1000,
  },
  server: {
    // `npm run dev` talks to a master on 8080 (ASSAY_MASTER overrides).
    proxy: { "/api": process.env.ASSAY_MASTER ?? "http://127.0.0.1:8080" },
  },
});
