import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { stillFollowing } from "../lib/scroll";

/**
 * Keeps a scroll container pinned to its newest content while the user is at the
 * bottom; stops once they scroll up and resumes when they come back down.
 * `version` changes whenever content is added; content that grows later by
 * itself (a chart drawn after loading) is caught by a ResizeObserver.
 */
export function useStickToBottom<T extends HTMLElement>(version: unknown) {
  const ref = useRef<T>(null);
  const stuck = useRef(true);
  const lastTop = useRef(0);
  const [showJump, setShowJump] = useState(false);

  const onScroll = useCallback(() => {
    const el = ref.current;
    if (!el) return;
    stuck.current = stillFollowing(stuck.current, lastTop.current, el);
    lastTop.current = el.scrollTop;
    if (stuck.current) setShowJump(false);
  }, []);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (stuck.current) el.scrollTop = el.scrollHeight;
    else setShowJump(true);
  }, [version]);

  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => {
      if (stuck.current) el.scrollTop = el.scrollHeight;
    });
    observer.observe(el);
    for (const child of Array.from(el.children)) observer.observe(child);
    const mutations = new MutationObserver(() => {
      for (const child of Array.from(el.children)) observer.observe(child);
    });
    mutations.observe(el, { childList: true });
    return () => {
      observer.disconnect();
      mutations.disconnect();
    };
  }, []);

  const jumpToBottom = useCallback(() => {
    const el = ref.current;
    if (!el) return;
    stuck.current = true;
    el.scrollTop = el.scrollHeight;
    setShowJump(false);
  }, []);

  return { ref, onScroll, showJump, jumpToBottom };
}
