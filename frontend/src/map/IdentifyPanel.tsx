import { useEscapeToClose } from "../hooks/useEscapeToClose";
import { formatLngLat } from "./drawing";
import {
  identifyError,
  identifyTarget,
  identifyUrl,
  parseIdentify,
  type IdentifyResult,
  type IdentifyTarget,
} from "./identify";
import type { RasterOverlay } from "./mapBridge";
import type { FeatureInfo } from "./featureInfo";
import { FeatureRows } from "./FeaturePanel";

export type IdentifyState =
  | { status: "loading"; target: IdentifyTarget; lng: number; lat: number }
  | { status: "done"; result: IdentifyResult }
  | { status: "error"; target: IdentifyTarget; lng: number; lat: number; message: string };

let pending: AbortController | null = null;

/**
 * Asks the tile server for the value of the top visible raster layer at a clicked point; a newer
 * click aborts the request before. Returns false (and asks nothing) when no raster layer is on.
 */
export function identifyAt(
  overlays: readonly RasterOverlay[],
  lng: number,
  lat: number,
  show: (state: IdentifyState | null) => void,
): boolean {
  const target = identifyTarget(overlays);
  pending?.abort();
  pending = null;
  if (!target) return false;
  const controller = new AbortController();
  pending = controller;
  show({ status: "loading", target, lng, lat });
  (async () => {
    try {
      const response = await fetch(identifyUrl(target, lng, lat), { signal: controller.signal, headers: { Accept: "application/json" } });
      const body: unknown = await response.json().catch(() => null);
      if (controller.signal.aborted) return;
      if (!response.ok) show({ status: "error", target, lng, lat, message: identifyError(response.status, body) });
      else show({ status: "done", result: parseIdentify(body, target, lng, lat) });
    } catch (err) {
      if (controller.signal.aborted) return;
      show({ status: "error", target, lng, lat, message: `The value could not be read: ${(err as Error).message || "no answer"}.` });
    } finally {
      if (pending === controller) pending = null;
    }
  })();
  return true;
}

/** Stops a request still running (the panel was closed). */
export function cancelIdentify(): void {
  pending?.abort();
  pending = null;
}

/** The value(s) at the clicked point: collection, values with units or classes, and where. */
export function IdentifyPanel({
  state,
  feature = null,
  onClose,
}: {
  state: IdentifyState;
  /** The vector feature clicked at the same point, if any: its properties, collapsed. */
  feature?: FeatureInfo | null;
  onClose: () => void;
}) {
  useEscapeToClose(onClose);

  const title = state.status === "done" ? state.result.title : state.target.title;
  const [lng, lat] = state.status === "done" ? [state.result.lng, state.result.lat] : [state.lng, state.lat];
  return (
    <section className="identify-panel" aria-labelledby="identify-title" data-testid="identify">
      <header className="identify-header">
        <h2 id="identify-title" className="identify-title">
          {title}
        </h2>
        <button type="button" className="identify-close" aria-label="Close the value at this point" onClick={onClose}>
          ×
        </button>
      </header>
      <div role="status" aria-live="polite" className="identify-body">
        {state.status === "loading" ? <p className="identify-note">Reading the value here…</p> : null}
        {state.status === "error" ? <p className="identify-error">{state.message}</p> : null}
        {state.status === "done" ? (
          <>
            {state.result.lines.length > 0 ? (
              <dl className="identify-values">
                {state.result.lines.map((line) => (
                  <div key={line.label} className="identify-value">
                    <dt>{line.label}</dt>
                    <dd>{line.text}</dd>
                  </div>
                ))}
              </dl>
            ) : null}
            {state.result.note ? <p className="identify-note">{state.result.note.replace(/^no data here/, "No data here")}</p> : null}
            {state.result.source ? <p className="identify-source">{state.result.source}</p> : null}
          </>
        ) : null}
        <p className="identify-where">
          {state.status === "done" && state.result.lines.length > 0 ? "Pixel at " : "At "}
          {formatLngLat(lng, lat)}
        </p>
      </div>
      {feature ? (
        <details className="identify-feature" data-testid="feature-popup">
          <summary>{feature.title}: properties</summary>
          <FeatureRows info={feature} />
        </details>
      ) : null}
    </section>
  );
}
