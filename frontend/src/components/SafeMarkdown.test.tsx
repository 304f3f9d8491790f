import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { SafeMarkdown, safeUrl } from "./SafeMarkdown";

function html(text: string): string {
  return renderToStaticMarkup(<SafeMarkdown text={text} />);
}

describe("SafeMarkdown", () => {
  it("renders ordinary Markdown", () => {
    const out = html("# Title\n\n**bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |");
    expect(out).toContain("<h1>Title</h1>");
    expect(out).toContain("<strong>bold</strong>");
    expect(out).toContain("<code>code</code>");
    expect(out).toContain("<table>");
  });

  it("drops raw HTML, script included", () => {
    const out = html('Hi <script>alert("x")</script> <img src=x onerror="alert(1)"> <b onclick="x()">there</b>');
    expect(out).not.toMatch(/<script|<img|onerror|onclick|<b>/i);
    expect(out).toContain("Hi");
    expect(out).toContain("there");
  });

  it("removes javascript:, data: and vbscript: links but keeps their text", () => {
    for (const href of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", "&#106;avascript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=", "vbscript:msgbox"]) {
      const out = html(`[click me](${href})`);
      expect(out, href).not.toMatch(/href=/);
      expect(out, href).not.toMatch(/javascript|vbscript|data:/i);
      expect(out, href).toContain("click me");
    }
  });

  it("keeps http(s) and mailto links, opened safely in a new tab", () => {
    const out = html("[docs](https://example.org/a?b=1) and [mail](mailto:x@example.org)");
    expect(out).toContain('href="https://example.org/a?b=1"');
    expect(out).toContain('rel="noopener noreferrer nofollow"');
    expect(out).toContain('target="_blank"');
    expect(out).toContain('href="mailto:x@example.org"');
  });

  it("shows images as links instead of loading them", () => {
    const out = html("![a cat](https://tracker.example/pixel.gif) ![bad](javascript:alert(1))");
    expect(out).not.toContain("<img");
    expect(out).toContain('href="https://tracker.example/pixel.gif"');
    expect(out).toContain("[a cat]");
    expect(out).toContain("<span>[bad]</span>");
  });

  it("autolinks only safe schemes", () => {
    expect(html("see https://example.org")).toContain('href="https://example.org/"');
    expect(html("<javascript:alert(1)>")).not.toContain("href");
  });
});

describe("safeUrl", () => {
  it("keeps relative links and refuses protocol-relative ones", () => {
    expect(safeUrl("/tiles/x")).toBe("/tiles/x");
    expect(safeUrl("#part")).toBe("#part");
    expect(safeUrl("//evil.example/x")).toBe("");
    expect(safeUrl("  ")).toBe("");
  });
});
