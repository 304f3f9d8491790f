import { describe, expect, it } from "vitest";
import { isAtBottom, stillFollowing } from "./scroll";

describe("isAtBottom", () => {
  it("counts the last few pixels as the bottom, so auto-scroll keeps going", () => {
    expect(isAtBottom({ scrollTop: 600, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(isAtBottom({ scrollTop: 580, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
  });

  it("treats a user scrolled up as not at the bottom, so auto-scroll stops", () => {
    expect(isAtBottom({ scrollTop: 300, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
  });
});

describe("stillFollowing", () => {
  it("keeps following when content grew under a view that did not move up", () => {
    // Pinned at 600, then 300 px arrived before the scroll event: short of the bottom, not moved up.
    expect(stillFollowing(true, 600, { scrollTop: 600, scrollHeight: 1300, clientHeight: 400 })).toBe(true);
  });

  it("stops when the user scrolls up, and resumes at the bottom", () => {
    expect(stillFollowing(true, 600, { scrollTop: 200, scrollHeight: 1300, clientHeight: 400 })).toBe(false);
    expect(stillFollowing(false, 200, { scrollTop: 500, scrollHeight: 1300, clientHeight: 400 })).toBe(false);
    expect(stillFollowing(false, 500, { scrollTop: 900, scrollHeight: 1300, clientHeight: 400 })).toBe(true);
  });
});
