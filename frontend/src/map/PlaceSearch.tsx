import { useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import { ApiClient, type PlaceCandidate } from "../api/client";
import { whenMapReady } from "./mapRegistry";

const api = new ApiClient();
/** Wait after the last key before searching, and the fewest characters searched. */
const DEBOUNCE_MS = 250;
const MIN_CHARS = 2;
const MAX_RESULTS = 8;

/** The part of maplibre-gl's Map a chosen place moves. */
export interface FlyableMap {
  flyTo(options: { center: [number, number]; zoom: number; essential?: boolean }): unknown;
  fitBounds(bounds: [[number, number], [number, number]], options?: { padding?: number; maxZoom?: number; essential?: boolean }): unknown;
}

/** Moves the map to a place: an area fills the view, a point is zoomed to (closer for a city). */
export function flyToPlace(map: FlyableMap, place: PlaceCandidate): void {
  if (place.bbox) {
    const [west, south, east, north] = place.bbox;
    // A box across the antimeridian (west > east) is fitted eastwards past 180°.
    const right = east < west ? east + 360 : east;
    map.fitBounds(
      [
        [west, south],
        [right, north],
      ],
      { padding: 40, maxZoom: 12, essential: true },
    );
  } else if (place.point) {
    map.flyTo({ center: place.point, zoom: place.kind === "city" ? 10 : 8, essential: true });
  }
}

function describePlace(place: PlaceCandidate): string {
  return [place.kind, place.country].filter(Boolean).join(", ");
}

/** A search box over the map: typing lists places (name, kind, country); choosing one flies the map there. */
export function PlaceSearch() {
  const [query, setQuery] = useState("");
  const [results, setResults] = useState<PlaceCandidate[]>([]);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const [status, setStatus] = useState("");
  const chosen = useRef<string | null>(null);
  const listId = useId();

  useEffect(() => {
    const text = query.trim();
    if (text.length < MIN_CHARS || text === chosen.current) {
      setResults([]);
      setStatus("");
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      setStatus("Searching…");
      api.searchPlaces(text, MAX_RESULTS, abort.signal).then(
        (found) => {
          setResults(found.results);
          setActive(-1);
          setOpen(true);
          setStatus(found.results.length ? `${found.results.length} places found` : "No place found");
        },
        (err: unknown) => {
          if ((err as Error).name === "AbortError") return;
          setResults([]);
          setOpen(true);
          setStatus(`Place search failed: ${(err as Error).message}`);
        },
      );
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [query]);

  const choose = (place: PlaceCandidate) => {
    chosen.current = place.name;
    setQuery(place.name);
    setOpen(false);
    setResults([]);
    setStatus(`Showing ${place.name}`);
    void whenMapReady().then((map) => flyToPlace(map, place));
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      if (results.length === 0) return;
      e.preventDefault();
      setOpen(true);
      const step = e.key === "ArrowDown" ? 1 : -1;
      setActive((i) => (i + step + results.length) % results.length);
    } else if (e.key === "Enter") {
      const place = results[active] ?? (open ? results[0] : undefined);
      if (!place) return;
      e.preventDefault();
      choose(place);
    } else if (e.key === "Escape") {
      e.preventDefault();
      if (open) setOpen(false);
      else setQuery("");
    }
  };

  const expanded = open && results.length > 0;
  const optionId = (i: number) => `${listId}-option-${i}`;
  return (
    <div className="place-search" role="search">
      <label htmlFor={`${listId}-input`} className="visually-hidden">
        Search places
      </label>
      <input
        id={`${listId}-input`}
        type="text"
        role="combobox"
        aria-expanded={expanded}
        aria-controls={listId}
        aria-autocomplete="list"
        aria-activedescendant={expanded && active >= 0 ? optionId(active) : undefined}
        placeholder="Search places"
        autoComplete="off"
        spellCheck={false}
        maxLength={100}
        value={query}
        onChange={(e) => {
          chosen.current = null;
          setQuery(e.target.value);
        }}
        onKeyDown={onKeyDown}
        onFocus={() => results.length > 0 && setOpen(true)}
        onBlur={() => setOpen(false)}
      />
      <ul id={listId} role="listbox" aria-label="Places" className="place-results" hidden={!expanded}>
        {results.map((place, i) => (
          <li
            key={place.ref}
            id={optionId(i)}
            role="option"
            aria-selected={i === active}
            className={i === active ? "active" : undefined}
            // Chosen before the input's blur closes the list.
            onMouseDown={(e) => {
              e.preventDefault();
              choose(place);
            }}
          >
            <span className="place-name">{place.name}</span>
            <span className="place-kind">{describePlace(place)}</span>
          </li>
        ))}
      </ul>
      {open && results.length === 0 && status ? <p className="place-empty">{status}</p> : null}
      <p className="visually-hidden" role="status" aria-live="polite">
        {status}
      </p>
    </div>
  );
}
