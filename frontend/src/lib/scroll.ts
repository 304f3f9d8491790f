/** How close to the bottom (px) still counts as "at the bottom" for auto-scroll. */
export const STICK_THRESHOLD_PX = 24;

export function isAtBottom(
  el: { scrollTop: number; scrollHeight: number; clientHeight: number },
  threshold = STICK_THRESHOLD_PX,
): boolean {
  return el.scrollHeight - el.scrollTop - el.clientHeight <= threshold;
}
