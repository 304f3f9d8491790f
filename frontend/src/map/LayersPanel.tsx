import { useId, useMemo, useState } from "react";
import { useChatStore } from "../state/chatStore";
import { useUiStore } from "../state/uiStore";
import { basemapLabel, BASEMAP_RASTER_COLLECTION } from "./basemap";
import { collectionsFromMessages } from "./collectionMeta";
import { addCollectionByHand } from "./frontendTools";
import { cssGradient, withUnit, type LegendInfo } from "./legend";
import type { BasemapChoice } from "./mapBridge";

function basemapName(choice: BasemapChoice): string {
  return typeof choice === "object" ? "Custom style" : basemapLabel(choice);
}

/** A layer's scale: a colour bar with its end values and unit, or the classes with their colours. */
export function LegendBody({ legend }: { legend: LegendInfo }) {
  if (legend.classes.length > 0) {
    return (
      <ul className="legend-classes" aria-label={`Classes of ${legend.title}`}>
        {legend.classes.map((c) => (
          <li key={c.value}>
            <span className="legend-swatch" style={c.color ? { background: c.color } : undefined} aria-hidden="true" />
            {c.label} <span className="legend-class-value">({c.value})</span>
          </li>
        ))}
      </ul>
    );
  }
  const range = legend.range;
  if (legend.colors.length > 0) {
    return (
      <>
        <div className="legend-bar" style={{ background: cssGradient(legend.colors) }} aria-hidden="true" />
        <div className="legend-scale" data-testid="legend-scale">
          <span>{range ? withUnit(range[0], legend.units) : "low"}</span>
          <span>{range ? "" : (legend.units ?? legend.colormapName ?? "")}</span>
          <span>{range ? withUnit(range[1], legend.units) : "high"}</span>
        </div>
      </>
    );
  }
  if (range || legend.units) {
    return (
      <div className="legend-scale" data-testid="legend-scale">
        <span>{range ? `${withUnit(range[0], legend.units)} – ${withUnit(range[1], legend.units)}` : legend.units}</span>
      </div>
    );
  }
  return null;
}

/** The legend alone, while the layers panel is closed. */
export function Legend() {
  const overlays = useUiStore((s) => s.overlays);
  const open = useUiStore((s) => s.panels.legend);
  const removeOverlay = useUiStore((s) => s.removeOverlay);
  const visible = overlays.filter((o) => o.visible);
  if (!open || visible.length === 0) return null;
  return (
    <section className="legend" aria-label="Map legend">
      {[...visible].reverse().map(({ id, legend }) => (
        <div key={id} className="legend-item" data-collection={legend.collectionId}>
          <div className="legend-header">
            <span className="legend-title">{legend.title}</span>
            <button type="button" className="icon-button small" aria-label={`Remove layer ${legend.title}`} onClick={() => removeOverlay(id)}>
              ×
            </button>
          </div>
          <LegendBody legend={legend} />
        </div>
      ))}
    </section>
  );
}

function AddCollection() {
  const messages = useChatStore((s) => s.chat.messages);
  const overlays = useUiStore((s) => s.overlays);
  const known = useMemo(() => {
    const ids = new Set(collectionsFromMessages(messages).keys());
    ids.add(BASEMAP_RASTER_COLLECTION);
    for (const o of overlays) ids.delete(o.legend.collectionId);
    return [...ids].sort();
  }, [messages, overlays]);
  const [value, setValue] = useState("");
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const listId = useId();
  return (
    <form
      className="add-collection"
      aria-label="Add a collection"
      onSubmit={(e) => {
        e.preventDefault();
        const id = value.trim();
        if (!id) return;
        setBusy(true);
        setMessage(null);
        void addCollectionByHand(id)
          .then(
            (result) => {
              setMessage({ ok: result.ok, text: result.message });
              if (result.ok) setValue("");
            },
            (err: unknown) => setMessage({ ok: false, text: `Could not add ${id}: ${err instanceof Error ? err.message : String(err)}` }),
          )
          .finally(() => setBusy(false));
      }}
    >
      <label htmlFor={`${listId}-input`}>Add a collection from the catalog</label>
      <div className="add-collection-row">
        <input
          id={`${listId}-input`}
          list={`${listId}-ids`}
          value={value}
          placeholder="collection id, e.g. luxembourg-dem"
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => setValue(e.target.value)}
        />
        <datalist id={`${listId}-ids`}>
          {known.map((id) => (
            <option key={id} value={id} />
          ))}
        </datalist>
        <button type="submit" className="primary small" disabled={busy || !value.trim()}>
          Add
        </button>
      </div>
      {known.length > 0 ? (
        <p className="add-collection-known" data-testid="known-collections">
          Known here: {known.join(", ")}
        </p>
      ) : null}
      {message ? (
        <p className={message.ok ? "add-collection-ok" : "add-collection-error"} role={message.ok ? "status" : "alert"}>
          {message.text}
        </p>
      ) : null}
    </form>
  );
}

/** Every layer on the map, top first: visibility, opacity, order, removal and legend; and adding one by hand. */
export function LayersPanel() {
  const overlays = useUiStore((s) => s.overlays);
  const basemap = useUiStore((s) => s.basemap);
  const basemapVisible = useUiStore((s) => s.basemapVisible);
  const basemapOpacity = useUiStore((s) => s.basemapOpacity);
  const ui = useUiStore.getState();
  const top = [...overlays].reverse();
  return (
    <section id="layers-panel" className="layers-panel" aria-labelledby="layers-title">
      <h2 id="layers-title" className="layers-title">
        Layers
      </h2>
      <ol className="layer-list">
        {top.map((o, i) => {
          const title = o.legend.title;
          return (
            <li key={o.id} className="layer-item" data-layer={o.id} data-collection={o.legend.collectionId}>
              <div className="layer-row">
                <label className="layer-name">
                  <input type="checkbox" checked={o.visible} onChange={(e) => ui.setOverlayVisible(o.id, e.target.checked)} /> {title}
                </label>
                <span className="layer-origin">{o.origin === "user" ? "added by you" : "added by the assistant"}</span>
              </div>
              <div className="layer-row">
                <label className="layer-opacity">
                  Opacity
                  <input
                    type="range"
                    min={0}
                    max={100}
                    step={5}
                    value={Math.round(o.opacity * 100)}
                    aria-label={`Opacity of ${title}`}
                    onChange={(e) => ui.setOverlayOpacity(o.id, Number(e.target.value) / 100)}
                  />
                  <output>{Math.round(o.opacity * 100)} %</output>
                </label>
                <span className="layer-buttons">
                  <button type="button" className="icon-button small" aria-label={`Move ${title} up`} disabled={i === 0} onClick={() => ui.moveOverlay(o.id, 1)}>
                    ↑
                  </button>
                  <button
                    type="button"
                    className="icon-button small"
                    aria-label={`Move ${title} down`}
                    disabled={i === top.length - 1}
                    onClick={() => ui.moveOverlay(o.id, -1)}
                  >
                    ↓
                  </button>
                  <button type="button" className="icon-button small" aria-label={`Remove ${title}`} onClick={() => ui.removeOverlay(o.id)}>
                    ×
                  </button>
                </span>
              </div>
              <LegendBody legend={o.legend} />
            </li>
          );
        })}
        <li className="layer-item layer-basemap" data-layer="basemap">
          <div className="layer-row">
            <label className="layer-name">
              <input type="checkbox" checked={basemapVisible} onChange={(e) => ui.setBasemapVisible(e.target.checked)} /> Basemap:{" "}
              {basemapName(basemap)}
            </label>
          </div>
          <label className="layer-opacity">
            Opacity
            <input
              type="range"
              min={0}
              max={100}
              step={5}
              value={Math.round(basemapOpacity * 100)}
              aria-label="Opacity of the basemap"
              onChange={(e) => ui.setBasemapOpacity(Number(e.target.value) / 100)}
            />
            <output>{Math.round(basemapOpacity * 100)} %</output>
          </label>
        </li>
      </ol>
      <AddCollection />
    </section>
  );
}
