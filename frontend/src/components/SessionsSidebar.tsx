import { useEffect, useRef, useState } from "react";
import type { SessionSummary } from "../api/client";
import {
  deleteSession,
  loadSession,
  newConversation,
  refreshSessions,
  renameSession,
} from "../state/chatController";
import { isRunActive } from "../state/chatReducer";
import { useChatStore } from "../state/chatStore";
import { titleMatches } from "../lib/exportMarkdown";
import { AccessTokens } from "./AccessTokens";

function formatWhen(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function SessionItem({ session, current }: { session: SessionSummary; current: boolean }) {
  const [mode, setMode] = useState<"view" | "rename" | "confirm-delete">("view");
  const [title, setTitle] = useState(session.title ?? "");
  const inputRef = useRef<HTMLInputElement>(null);
  const label = session.title || "Untitled conversation";

  useEffect(() => {
    if (mode === "rename") inputRef.current?.select();
  }, [mode]);

  if (mode === "rename") {
    return (
      <li className="session-item editing">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void renameSession(session.id, title).then((ok) => ok && setMode("view"));
          }}
        >
          <label className="visually-hidden" htmlFor={`rename-${session.id}`}>
            New title for {label}
          </label>
          <input
            id={`rename-${session.id}`}
            ref={inputRef}
            value={title}
            maxLength={200}
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") {
                setTitle(session.title ?? "");
                setMode("view");
              }
            }}
          />
          <div className="session-actions">
            <button type="submit" className="small primary" disabled={!title.trim()}>
              Save
            </button>
            <button type="button" className="small" onClick={() => setMode("view")}>
              Cancel
            </button>
          </div>
        </form>
      </li>
    );
  }

  return (
    <li className={`session-item ${current ? "current" : ""}`} data-session-id={session.id}>
      <button
        type="button"
        className="session-open"
        aria-current={current ? "true" : undefined}
        onClick={() => void loadSession(session.id)}
      >
        <span className="session-title">{label}</span>
        <span className="session-meta">
          {formatWhen(session.updated_at)} · {session.message_count} message{session.message_count === 1 ? "" : "s"}
        </span>
      </button>
      {mode === "confirm-delete" ? (
        <div className="session-actions" role="group" aria-label={`Delete ${label}?`}>
          <span>Delete?</span>
          <button type="button" className="small danger" onClick={() => void deleteSession(session.id)}>
            Delete
          </button>
          <button type="button" className="small" onClick={() => setMode("view")}>
            Keep
          </button>
        </div>
      ) : (
        <div className="session-actions">
          <button type="button" className="small" aria-label={`Rename ${label}`} onClick={() => setMode("rename")}>
            Rename
          </button>
          <button
            type="button"
            className="small"
            aria-label={`Delete ${label}`}
            onClick={() => setMode("confirm-delete")}
          >
            Delete
          </button>
        </div>
      )}
    </li>
  );
}

export function SessionsSidebar() {
  const sessions = useChatStore((s) => s.sessions);
  const error = useChatStore((s) => s.sessionsError);
  const currentId = useChatStore((s) => s.chat.sessionId);
  const running = useChatStore((s) => isRunActive(s.chat));
  const [query, setQuery] = useState("");
  const shown = sessions.filter((s) => titleMatches(s.title, query));

  return (
    <nav className="sessions-sidebar" aria-labelledby="sessions-title">
      <div className="sidebar-header">
        <h2 id="sessions-title" className="panel-title">
          Conversations
        </h2>
        <button type="button" className="small" onClick={() => void refreshSessions()} aria-label="Refresh conversations">
          ↻
        </button>
      </div>
      <button type="button" className="primary new-chat" onClick={newConversation} disabled={running}>
        + New conversation
      </button>
      {error ? (
        <p className="sidebar-error" role="status">
          {error}
        </p>
      ) : null}
      {sessions.length > 0 ? (
        <input
          type="search"
          className="session-search"
          aria-label="Search conversations"
          placeholder="Search conversations"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
      ) : null}
      {sessions.length === 0 ? (
        <p className="sidebar-empty">No saved conversations yet.</p>
      ) : shown.length === 0 ? (
        <p className="sidebar-empty" role="status">
          No conversation title contains “{query.trim()}”.
        </p>
      ) : (
        <ul className="session-list">
          {shown.map((s) => (
            <SessionItem key={s.id} session={s} current={s.id === currentId} />
          ))}
        </ul>
      )}
      <AccessTokens />
    </nav>
  );
}
