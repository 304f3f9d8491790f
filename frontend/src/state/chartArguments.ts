import type { JsonObject } from "@bufbuild/protobuf";

/**
 * The Chart.js config of a `generate_chart` call: the `frontend_tool` event carries
 * `{chart: config}`; stored history has the model's own arguments
 * (`chart_type`, `labels`, `datasets`, `title`), turned into a config here.
 */
export function chartConfigFrom(args: JsonObject | undefined): JsonObject | null {
  if (!args) return null;
  const inner = args.chart;
  if (inner && typeof inner === "object" && !Array.isArray(inner)) {
    const config = inner as JsonObject;
    return typeof config.type === "string" && config.data && typeof config.data === "object" ? config : null;
  }
  if (typeof args.type === "string" && args.data && typeof args.data === "object") return args;
  return chartFromDescription(args);
}

function chartFromDescription(args: JsonObject): JsonObject | null {
  const kind = args.chart_type;
  const datasets = args.datasets;
  if (typeof kind !== "string" || !Array.isArray(datasets) || datasets.length === 0) return null;
  const labels = Array.isArray(args.labels) ? args.labels : [];
  const series = datasets.map((raw, i) => {
    const ds = raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as JsonObject) : {};
    const values = Array.isArray(ds.data) ? ds.data : [];
    const data = kind === "scatter" ? values.map((y, j) => ({ x: Number(labels[j]), y })) : values;
    return { label: typeof ds.label === "string" && ds.label ? ds.label : `Series ${i + 1}`, data };
  });
  const title = typeof args.title === "string" ? args.title : "";
  return {
    type: kind,
    data: kind === "scatter" ? { datasets: series } : { labels: labels.map(String), datasets: series },
    options: { plugins: { title: { display: Boolean(title), text: title } } },
  };
}
