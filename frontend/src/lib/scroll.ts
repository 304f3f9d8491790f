/** How close to the bottom (px) still counts as "at the bottom" for auto-scroll. */
export const STICK_THRESHOLD_PX = 24;

export function isAtBottom(
  el: { scrollTop: number; scrollHeight: number; clientHeight: number },
  threshold = STICK_THRESHOLD_PX,
): boolean {
  return el.scrollHeight - el.scrollTop - el.clientHeight <= threshold;
}

/**
 * Whether to keep following new content after a scroll event. Only the user moving up stops it:
 * content that grows between our own jump to the bottom and the scroll event it causes leaves the
 * view briefly short of the bottom, which must not count as the user leaving.
 */
export function stillFollowing(
  following: boolean,
  previousTop: number,
  el: { scrollTop: number; scrollHeight: number; clientHeight: number },
): boolean {
  if (isAtBottom(el)) return true;
  if (el.scrollTop < previousTop - 1) return false;
  return following;
}
