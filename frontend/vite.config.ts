import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The dev server proxies the API and tiles to the local ingress so the browser
// sees one origin, as it does behind the cluster ingress.
const backend = process.env.STACGIS_BACKEND_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    sourcemap: true,
    chunkSizeWarningLimit: 1100,
    rolldownOptions: {
      output: {
        // Static servers do not all know the .mjs MIME type; module workers need a JavaScript one.
        assetFileNames: (asset) =>
          asset.names.some((n) => n.endsWith(".mjs")) ? "assets/[name]-[hash].js" : "assets/[name]-[hash][extname]",
        codeSplitting: {
          groups: [
            { name: "maplibre", test: /node_modules[\\/]maplibre-gl/ },
            { name: "markdown", test: /node_modules[\\/](react-markdown|remark|rehype|mdast|micromark|hast|unified|unist|vfile)/ },
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler)[\\/]/ },
          ],
        },
      },
    },
  },
  server: {
    proxy: {
      "/api": { target: backend, changeOrigin: false },
      "/tiles": { target: backend, changeOrigin: false },
    },
  },
  preview: {
    proxy: {
      "/api": { target: backend, changeOrigin: false },
      "/tiles": { target: backend, changeOrigin: false },
    },
  },
  test: {
    include: ["src/**/*.test.{ts,tsx}"],
    environment: "node",
  },
});
