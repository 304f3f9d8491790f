import { useEscapeToClose } from "../hooks/useEscapeToClose";
import type { FeatureInfo } from "./featureInfo";

/** The feature's properties as a list, its overflow and its layer. */
export function FeatureRows({ info }: { info: FeatureInfo }) {
  return (
    <>
      {info.rows.length > 0 ? (
        <dl className="identify-values feature-values" tabIndex={0} aria-label="Properties">
          {info.rows.map((row) => (
            <div key={row.key} className="identify-value">
              <dt>{row.key}</dt>
              <dd>{row.value}</dd>
            </div>
          ))}
        </dl>
      ) : (
        <p className="identify-note">This feature has no properties.</p>
      )}
      {info.more > 0 ? <p className="identify-source">and {info.more} more properties</p> : null}
      {info.layer ? <p className="identify-source">Layer {info.layer}</p> : null}
    </>
  );
}

/** The properties of the vector feature clicked on the map where no raster layer gives a value (with
 * one, they are a collapsed part of the value's panel, which keeps the small map of a phone clear). */
export function FeaturePanel({ info, onClose }: { info: FeatureInfo; onClose: () => void }) {
  useEscapeToClose(onClose);

  return (
    <section className="identify-panel feature-panel" aria-labelledby="feature-title" data-testid="feature-popup">
      <header className="identify-header">
        <h2 id="feature-title" className="identify-title">
          {info.title}
        </h2>
        <button type="button" className="identify-close" aria-label="Close the feature's properties" onClick={onClose}>
          ×
        </button>
      </header>
      <FeatureRows info={info} />
    </section>
  );
}
