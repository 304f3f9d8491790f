/** What the legend of a raster layer shows, taken from the TileJSON and the tool's arguments. */
export interface LegendInfo {
  collectionId: string;
  title: string;
  /** CSS colours from the low to the high end of the scale; empty when the server did not say. */
  colors: string[];
  /** [min, max] of the scale, if known. */
  range: [number, number] | null;
  units: string | null;
  colormapName: string | null;
  /** Categorical data: each class with its colour (null when the colormap does not give one). */
  classes: { value: number; label: string; color: string | null }[];
}

/** A few stops of the colormaps raster tile servers commonly name, low to high. */
const NAMED_COLORMAPS: Record<string, string[]> = {
  viridis: ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"],
  cividis: ["#00224e", "#414d6b", "#7c7b78", "#bcaf6f", "#fee838"],
  magma: ["#000004", "#51127c", "#b73779", "#fc8961", "#fcfdbf"],
  inferno: ["#000004", "#56106e", "#bb3754", "#f98e09", "#fcffa4"],
  plasma: ["#0d0887", "#7e03a8", "#cc4778", "#f89540", "#f0f921"],
  terrain: ["#333399", "#0294fa", "#24d36d", "#fefe98", "#82654f", "#ffffff"],
  gray: ["#000000", "#ffffff"],
  greys: ["#ffffff", "#000000"],
  blues: ["#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"],
  greens: ["#f7fcf5", "#c7e9c0", "#74c476", "#238b45", "#00441b"],
  ylgnbu: ["#ffffd9", "#c7e9b4", "#41b6c4", "#225ea8", "#081d58"],
  rdylgn: ["#a50026", "#f46d43", "#ffffbf", "#66bd63", "#006837"],
  spectral: ["#9e0142", "#f46d43", "#ffffbf", "#66c2a5", "#5e4fa2"],
  rdbu: ["#67001f", "#f4a582", "#f7f7f7", "#92c5de", "#053061"],
};

function toCss(value: unknown): string | null {
  if (typeof value === "string" && /^#[0-9a-f]{3,8}$/i.test(value)) return value;
  if (Array.isArray(value) && value.length >= 3 && value.every((v) => typeof v === "number")) {
    const [r, g, b, a] = value as number[];
    return a === undefined ? `rgb(${r}, ${g}, ${b})` : `rgba(${r}, ${g}, ${b}, ${(a / 255).toFixed(3)})`;
  }
  return null;
}

/** Colours for a colormap given by name or as an explicit `{value: colour}` table. */
export function colorsFor(colormap: unknown): { name: string | null; colors: string[] } {
  if (typeof colormap === "string") {
    const key = colormap.toLowerCase().replace(/_r$/, "");
    const colors = NAMED_COLORMAPS[key];
    if (!colors) return { name: colormap, colors: [] };
    return { name: colormap, colors: colormap.toLowerCase().endsWith("_r") ? [...colors].reverse() : colors };
  }
  if (colormap && typeof colormap === "object" && !Array.isArray(colormap)) {
    const entries = Object.entries(colormap as Record<string, unknown>)
      .map(([k, v]) => [Number(k), toCss(v)] as const)
      .filter((e): e is readonly [number, string] => Number.isFinite(e[0]) && e[1] !== null)
      .sort((a, b) => a[0] - b[0]);
    if (entries.length > 0) return { name: null, colors: entries.map((e) => e[1]) };
  }
  return { name: null, colors: [] };
}

/** Parses `[min, max]`, `"min,max"` or `{min, max}`. */
export function parseRange(value: unknown): [number, number] | null {
  let pair: unknown[] | null = null;
  if (Array.isArray(value)) pair = value.length === 1 && Array.isArray(value[0]) ? (value[0] as unknown[]) : value;
  else if (typeof value === "string") pair = value.split(",");
  else if (value && typeof value === "object") {
    const rec = value as Record<string, unknown>;
    pair = [rec.min, rec.max];
  }
  if (!pair || pair.length !== 2) return null;
  const [lo, hi] = pair.map((v) => (typeof v === "string" ? Number(v.trim()) : Number(v)));
  return Number.isFinite(lo) && Number.isFinite(hi) ? [lo, hi] : null;
}

/** The colour a `{value: colour}` table gives one value. */
export function colorOf(colormap: unknown, value: number): string | null {
  if (!colormap || typeof colormap !== "object" || Array.isArray(colormap)) return null;
  return toCss((colormap as Record<string, unknown>)[String(value)]);
}

/** A legend value: whole numbers as they are, others to three significant digits. */
export function formatValue(v: number): string {
  return Math.abs(v) >= 1000 || Number.isInteger(v) ? v.toFixed(0) : v.toPrecision(3);
}

/** "200 m", "0.5" (no unit): one end of a legend's scale. */
export function withUnit(v: number, units: string | null): string {
  if (!units) return formatValue(v);
  return units === "%" || units.startsWith("°") ? `${formatValue(v)}${units}` : `${formatValue(v)} ${units}`;
}

export function cssGradient(colors: string[]): string {
  return colors.length === 1 ? colors[0] : `linear-gradient(to right, ${colors.join(", ")})`;
}
