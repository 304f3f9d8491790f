import { useUiStore } from "../state/uiStore";
import { basemapLabel } from "./basemap";
import { canFinish, finishDrawing, idleDraw } from "./drawing";
import { cssGradient } from "./legend";
import type { BasemapChoice } from "./mapBridge";

function basemapValue(choice: BasemapChoice): string {
  return typeof choice === "object" ? "custom" : choice;
}

function formatValue(v: number): string {
  return Math.abs(v) >= 1000 || Number.isInteger(v) ? v.toFixed(0) : v.toPrecision(3);
}

export function Legend() {
  const overlays = useUiStore((s) => s.overlays);
  const open = useUiStore((s) => s.panels.legend);
  const removeOverlay = useUiStore((s) => s.removeOverlay);
  if (!open || overlays.length === 0) return null;
  return (
    <section className="legend" aria-label="Map legend">
      {overlays.map(({ id, legend }) => (
        <div key={id} className="legend-item" data-collection={legend.collectionId}>
          <div className="legend-header">
            <span className="legend-title">{legend.title}</span>
            <button
              type="button"
              className="icon-button small"
              aria-label={`Remove layer ${legend.title}`}
              onClick={() => removeOverlay(id)}
            >
              ×
            </button>
          </div>
          {legend.colors.length > 0 ? (
            <>
              <div className="legend-bar" style={{ background: cssGradient(legend.colors) }} aria-hidden="true" />
              <div className="legend-scale">
                <span>{legend.range ? formatValue(legend.range[0]) : "low"}</span>
                <span>{legend.units ?? legend.colormapName ?? ""}</span>
                <span>{legend.range ? formatValue(legend.range[1]) : "high"}</span>
              </div>
            </>
          ) : legend.range || legend.units ? (
            <div className="legend-scale">
              <span>{legend.range ? `${formatValue(legend.range[0])} – ${formatValue(legend.range[1])}` : ""}</span>
              <span>{legend.units ?? ""}</span>
            </div>
          ) : null}
        </div>
      ))}
    </section>
  );
}

export function MapToolbar({ onStartDrawing }: { onStartDrawing: () => void }) {
  const draw = useUiStore((s) => s.draw);
  const drawn = useUiStore((s) => s.drawnGeometry);
  const basemap = useUiStore((s) => s.basemap);
  const setBasemap = useUiStore((s) => s.setBasemap);
  const setDraw = useUiStore((s) => s.setDraw);
  const setDrawnGeometry = useUiStore((s) => s.setDrawnGeometry);

  return (
    <div className="map-tools">
      <div className="map-toolbar" role="toolbar" aria-label="Map tools">
        {draw.active ? (
          <>
            <span className="draw-hint" role="status">
              Click to add corners ({draw.vertices.length}); double-click or Enter to finish, Esc to cancel.
            </span>
            <button
              type="button"
              className="primary small"
              disabled={!canFinish(draw)}
              onClick={() => {
                setDrawnGeometry(finishDrawing(draw));
                setDraw(idleDraw);
              }}
            >
              Finish area
            </button>
            <button type="button" className="small" onClick={() => setDraw(idleDraw)}>
              Cancel
            </button>
          </>
        ) : (
          <>
            <button type="button" className="small" onClick={onStartDrawing}>
              Draw area
            </button>
            {drawn ? (
              <button type="button" className="small" onClick={() => setDrawnGeometry(null)}>
                Clear area
              </button>
            ) : null}
          </>
        )}
        <label className="basemap-select">
          <span className="visually-hidden">Basemap</span>
          <select
            value={basemapValue(basemap)}
            aria-label="Basemap"
            onChange={(e) => {
              const v = e.target.value;
              if (v === "light" || v === "dark" || v === "satellite") setBasemap(v);
            }}
          >
            <option value="light">{basemapLabel("light")}</option>
            <option value="dark">{basemapLabel("dark")}</option>
            <option value="satellite">{basemapLabel("satellite")}</option>
            {typeof basemap === "object" ? <option value="custom">Custom style</option> : null}
          </select>
        </label>
      </div>
      <Legend />
    </div>
  );
}
