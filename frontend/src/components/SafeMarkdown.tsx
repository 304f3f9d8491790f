import Markdown, { type Components, type Options } from "react-markdown";
import remarkGfm from "remark-gfm";
import type { AnswerGrounding } from "../state/chatTypes";
import { remarkGroundedNumbers } from "./groundedNumbers";

/**
 * Model output is untrusted. Raw HTML in the Markdown is dropped (no rehype-raw,
 * `skipHtml`), link targets pass through `safeUrl`, and images become plain
 * links so an answer cannot make the browser fetch from arbitrary hosts.
 */

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/** Keeps http(s), mailto and same-site relative links; everything else becomes "" (no link). */
export function safeUrl(url: string): string {
  const trimmed = url.trim();
  if (!trimmed) return "";
  // Control characters and whitespace inside a scheme are a classic filter bypass.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const compact = trimmed.replace(/[\u0000-\u001F\u007F\s]+/g, "");
  if (/^(\/(?!\/)|\.{1,2}\/|#|\?)/.test(compact)) return compact;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(compact);
  if (!scheme) return /^[^:/?#]+(\/|$)/.test(compact) ? compact : "";
  try {
    const parsed = new URL(compact);
    return SAFE_PROTOCOLS.has(parsed.protocol) ? parsed.toString() : "";
  } catch {
    return "";
  }
}

const components: Components = {
  a: ({ href, children }) => {
    const target = href ? safeUrl(href) : "";
    if (!target) return <span className="md-link-removed">{children}</span>;
    return (
      <a href={target} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    );
  },
  img: ({ src, alt }) => {
    const target = typeof src === "string" ? safeUrl(src) : "";
    const label = alt || "image";
    return target ? (
      <a href={target} target="_blank" rel="noopener noreferrer nofollow">
        [{label}]
      </a>
    ) : (
      <span>[{label}]</span>
    );
  },
};

/**
 * `grounding` (the answer's number check) marks its numbers in place; without it
 * the text renders exactly as before.
 */
export function SafeMarkdown({ text, grounding }: { text: string; grounding?: AnswerGrounding }) {
  const plugins: Options["remarkPlugins"] = grounding
    ? [remarkGfm, [remarkGroundedNumbers, { grounding }]]
    : [remarkGfm];
  return (
    <div className="markdown">
      <Markdown remarkPlugins={plugins} skipHtml urlTransform={safeUrl} components={components}>
        {text}
      </Markdown>
    </div>
  );
}
