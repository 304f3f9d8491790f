/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** A MapLibre style URL to use instead of the offline basemap (deployments with internet). */
  readonly VITE_MAP_STYLE_URL?: string;
  /** Style URL for the "satellite" basemap; without it an offline palette is used. */
  readonly VITE_SATELLITE_STYLE_URL?: string;
}

interface ImportMeta {
  readonly env: ImportMetaEnv;
}
