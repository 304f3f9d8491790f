import { placeLoadingText, usePlaceLoading } from "./placeLoading";

/**
 * Under the place search while the place names still load: which datasets, how far, and that search and
 * city names find only what is loaded until then. The live region stays in the page (out of the layout
 * while empty) so the notice is announced when it appears.
 */
export function PlaceLoadingNotice() {
  const text = placeLoadingText(usePlaceLoading());
  return (
    <div className="place-loading-region" role="status" aria-live="polite">
      {text ? <p className="place-loading">{text}</p> : null}
    </div>
  );
}
