import { useUiStore } from "../state/uiStore";
import { basemapLabel } from "./basemap";
import { canFinish, describeDrawn, finishDrawing, idleDraw, type DrawMode } from "./drawing";
import { LayersPanel, Legend } from "./LayersPanel";
import type { BasemapChoice } from "./mapBridge";
import { PlaceLoadingNotice } from "./PlaceLoadingNotice";
import { PlaceSearch } from "./PlaceSearch";

function basemapValue(choice: BasemapChoice): string {
  return typeof choice === "object" ? "custom" : choice;
}

export function MapToolbar({ onStartDrawing }: { onStartDrawing: (mode: DrawMode) => void }) {
  const draw = useUiStore((s) => s.draw);
  const drawn = useUiStore((s) => s.drawnGeometry);
  const basemap = useUiStore((s) => s.basemap);
  const setBasemap = useUiStore((s) => s.setBasemap);
  const setDraw = useUiStore((s) => s.setDraw);
  const setDrawnGeometry = useUiStore((s) => s.setDrawnGeometry);
  const layersOpen = useUiStore((s) => s.panels.layers);
  const setPanel = useUiStore((s) => s.setPanel);

  return (
    <div className="map-tools">
      {/* While drawing, the map's top stays free for the clicks. */}
      {draw.active ? null : (
        <>
          <PlaceSearch />
          <PlaceLoadingNotice />
        </>
      )}
      <div className="map-toolbar" role="toolbar" aria-label="Map tools">
        {/* While drawing, the toolbar holds only the drawing's own controls (it stays small on a phone). */}
        {draw.active ? (
          <>
            <span className="draw-hint" role="status">
              {draw.mode === "point"
                ? "Click the map to place the point; Esc to cancel."
                : `Click to add ${draw.mode === "area" ? "corners" : "points"} (${draw.vertices.length}); double-click or Enter to finish, Esc to cancel.`}
            </span>
            {draw.mode !== "point" ? (
              <button
                type="button"
                className="primary small"
                disabled={!canFinish(draw)}
                onClick={() => {
                  setDrawnGeometry(finishDrawing(draw));
                  setDraw(idleDraw);
                }}
              >
                Finish {draw.mode}
              </button>
            ) : null}
            <button type="button" className="small" onClick={() => setDraw(idleDraw)}>
              Cancel
            </button>
          </>
        ) : (
          <>
            <button type="button" className="small" onClick={() => onStartDrawing("point")}>
              Draw point
            </button>
            <button type="button" className="small" onClick={() => onStartDrawing("line")}>
              Draw line
            </button>
            <button type="button" className="small" onClick={() => onStartDrawing("area")}>
              Draw area
            </button>
            {drawn ? (
              <button type="button" className="small" onClick={() => setDrawnGeometry(null)}>
                Clear {describeDrawn(drawn).noun}
              </button>
            ) : null}
            <button
              type="button"
              className="small"
              aria-expanded={layersOpen}
              {...(layersOpen ? { "aria-controls": "layers-panel" } : {})}
              onClick={() => setPanel("layers")}
            >
              Layers
            </button>
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
          </>
        )}
      </div>
      {layersOpen ? <LayersPanel /> : <Legend />}
    </div>
  );
}
