import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** Chart kinds the conversation draws; anything else is refused. */
export const CHART_TYPES = ["line", "bar", "scatter", "pie", "doughnut", "radar", "polarArea", "bubble"] as const;
export type ChartKind = (typeof CHART_TYPES)[number];

export interface SafeChartConfig {
  type: ChartKind;
  data: { labels?: JsonValue[]; datasets: JsonObject[] };
  options: JsonObject;
  title: string;
}

const MAX_DATASETS = 20;
const MAX_POINTS = 5000;

const PALETTE = ["#2f6db5", "#d9822b", "#3a9a5b", "#c2413b", "#7a5bb5", "#8c6d46", "#d063a6", "#5f6b7a"];

function obj(value: JsonValue | undefined): JsonObject | null {
  return value && typeof value === "object" && !Array.isArray(value) ? value : null;
}

/**
 * Checks a model-supplied Chart.js config and bounds its size. The config is
 * JSON (no functions can arrive), so the remaining risks are unknown chart types
 * and huge data; both are refused here with a message naming the field.
 */
export function sanitizeChartConfig(config: JsonObject): SafeChartConfig | { error: string } {
  const type = config.type;
  if (typeof type !== "string" || !(CHART_TYPES as readonly string[]).includes(type)) {
    return { error: `chart type must be one of ${CHART_TYPES.join(", ")}, got ${JSON.stringify(type ?? null)}` };
  }
  const data = obj(config.data);
  if (!data) return { error: "chart data must be an object" };
  const datasetsRaw = data.datasets;
  if (!Array.isArray(datasetsRaw) || datasetsRaw.length === 0) return { error: "chart data.datasets must be a non-empty list" };
  if (datasetsRaw.length > MAX_DATASETS) return { error: `chart has more than ${MAX_DATASETS} datasets` };
  const datasets: JsonObject[] = [];
  for (const [i, raw] of datasetsRaw.entries()) {
    const ds = obj(raw);
    if (!ds || !Array.isArray(ds.data)) return { error: `chart data.datasets[${i}].data must be a list` };
    if (ds.data.length > MAX_POINTS) return { error: `chart data.datasets[${i}] has more than ${MAX_POINTS} points` };
    const color = PALETTE[i % PALETTE.length];
    const perPoint = type === "pie" || type === "doughnut" || type === "polarArea";
    datasets.push({
      ...(perPoint
        ? { backgroundColor: ds.data.map((_, j) => PALETTE[j % PALETTE.length]) }
        : { borderColor: color, backgroundColor: `${color}99` }),
      ...ds,
    });
  }
  const labels = Array.isArray(data.labels) ? data.labels.slice(0, MAX_POINTS) : undefined;
  const options = obj(config.options) ?? {};
  const plugins = obj(options.plugins);
  const titleOpt = plugins ? obj(plugins.title) : null;
  const titleText = titleOpt?.text ?? config.title;
  const title = typeof titleText === "string" ? titleText : Array.isArray(titleText) ? titleText.join(" ") : "";
  return {
    type: type as ChartKind,
    data: { ...(labels ? { labels } : {}), datasets },
    options,
    title,
  };
}
