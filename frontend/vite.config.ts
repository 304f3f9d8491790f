import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The dev and preview servers proxy the API and tiles so the browser sees one
// origin, as it does behind the ingress: by default to the local ingress, or to
// the gateway and raster-tools directly.
const backend = process.env.STACGIS_BACKEND_URL ?? "http://127.0.0.1:8080";
const apiTarget = process.env.STACGIS_API_URL ?? backend;
const tilesTarget = process.env.STACGIS_TILES_URL ?? backend;
const proxy = {
  "/api": { target: apiTarget, changeOrigin: false },
  "/tiles": { target: tilesTarget, changeOrigin: false },
};

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
  server: { proxy },
  preview: { proxy },
  test: {
    include: ["src/**/*.test.{ts,tsx}"],
    environment: "node",
  },
});
