/** A rectangle as getBoundingClientRect gives it. */
export interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

/**
 * How much of the map's bottom a panel hides: on a narrow screen the chat is a
 * sheet over the map's lower part, and the map's centre (and every zoom or fit)
 * should be reckoned in what stays visible above it. A panel beside the map, or
 * none, hides nothing.
 */
export function coveredBottom(map: Box, panel: Box | null): number {
  if (!panel || panel.bottom <= panel.top) return 0;
  const spansWidth = panel.left <= map.left + 1 && panel.right >= map.right - 1;
  const overBottom = panel.top > map.top && panel.top < map.bottom && panel.bottom >= map.bottom - 1;
  return spansWidth && overBottom ? Math.round(map.bottom - panel.top) : 0;
}
