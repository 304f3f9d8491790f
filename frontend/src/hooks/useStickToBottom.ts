import { useCallback, useLayoutEffect, useRef, useState } from "react";
import { isAtBottom } from "../lib/scroll";

/**
 * Keeps a scroll container pinned to its newest content while the user is at the
 * bottom; stops once they scroll up and resumes when they come back down.
 * `version` changes whenever content grows.
 */
export function useStickToBottom<T extends HTMLElement>(version: unknown) {
  const ref = useRef<T>(null);
  const stuck = useRef(true);
  const [showJump, setShowJump] = useState(false);

  const onScroll = useCallback(() => {
    const el = ref.current;
    if (!el) return;
    stuck.current = isAtBottom(el);
    if (stuck.current) setShowJump(false);
  }, []);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (stuck.current) el.scrollTop = el.scrollHeight;
    else setShowJump(true);
  }, [version]);

  const jumpToBottom = useCallback(() => {
    const el = ref.current;
    if (!el) return;
    stuck.current = true;
    el.scrollTop = el.scrollHeight;
    setShowJump(false);
  }, []);

  return { ref, onScroll, showJump, jumpToBottom };
}
