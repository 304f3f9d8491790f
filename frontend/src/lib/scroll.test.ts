import { describe, expect, it } from "vitest";
import { isAtBottom } from "./scroll";

describe("isAtBottom", () => {
  it("counts the last few pixels as the bottom, so auto-scroll keeps going", () => {
    expect(isAtBottom({ scrollTop: 600, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(isAtBottom({ scrollTop: 580, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
  });

  it("treats a user scrolled up as not at the bottom, so auto-scroll stops", () => {
    expect(isAtBottom({ scrollTop: 300, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
  });
});
