import type { JsonObject } from "@bufbuild/protobuf";
import Chart from "chart.js/auto";
import { useEffect, useMemo, useRef, useState } from "react";
import { sanitizeChartConfig } from "./chartConfig";

/** A Chart.js chart the model asked for, drawn inside its answer. */
export default function ChartView({ config }: { config: JsonObject }) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const safe = useMemo(() => sanitizeChartConfig(config), [config]);
  const [ready, setReady] = useState(false);

  useEffect(() => {
    if (!canvasRef.current || "error" in safe) return;
    const chart = new Chart(canvasRef.current, {
      type: safe.type,
      data: safe.data as never,
      options: {
        ...(safe.options as object),
        responsive: true,
        maintainAspectRatio: true,
        animation: false,
      },
    });
    setReady(true);
    return () => {
      chart.destroy();
      setReady(false);
    };
  }, [safe]);

  if ("error" in safe) {
    return (
      <p className="chart-error" role="note">
        Chart not shown: {safe.error}
      </p>
    );
  }
  const label = safe.title ? `Chart: ${safe.title}` : `${safe.type} chart`;
  return (
    <figure className="chart" data-chart-type={safe.type} data-chart-ready={ready ? "true" : "false"}>
      <canvas ref={canvasRef} role="img" aria-label={label} />
      {safe.title ? <figcaption>{safe.title}</figcaption> : null}
    </figure>
  );
}
