import { useCallback, useState } from "react";
import {
  MCP_SERVERS,
  createAccessToken,
  listAccessTokens,
  mcpUrl,
  revokeAccessToken,
  type AccessToken,
  type CreatedAccessToken,
} from "../api/accessTokens";
import { ApiClient } from "../api/client";
import "./AccessTokens.css";

const api = new ApiClient();

function day(iso: string | null): string {
  if (!iso) return "never";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleDateString(undefined, { dateStyle: "medium" });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Personal access tokens for outside MCP clients (an IDE, a desktop assistant): create, list, revoke. */
export function AccessTokens() {
  const [tokens, setTokens] = useState<AccessToken[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [servers, setServers] = useState<string[]>(["memory"]);
  const [days, setDays] = useState(30);
  const [created, setCreated] = useState<CreatedAccessToken | null>(null);
  const [busy, setBusy] = useState(false);

  const refresh = useCallback(async () => {
    try {
      setTokens(await listAccessTokens(api));
      setError(null);
    } catch (err) {
      setError(message(err));
    }
  }, []);

  const create = async () => {
    setBusy(true);
    try {
      setCreated(await createAccessToken(api, { name: name.trim(), servers, expires_in_days: days }));
      setName("");
      await refresh();
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (id: string) => {
    try {
      await revokeAccessToken(api, id);
      if (created?.id === id) setCreated(null);
      await refresh();
    } catch (err) {
      setError(message(err));
    }
  };

  const toggle = (server: string, on: boolean) =>
    setServers((current) => (on ? [...current, server] : current.filter((s) => s !== server)));

  return (
    <details className="access-tokens" onToggle={(e) => {
        // The list is loaded when the section is opened, not with every page.
        if ((e.target as HTMLDetailsElement).open) void refresh();
      }}>
      <summary>MCP access tokens</summary>
      <p className="access-tokens-help">
        For MCP clients outside the browser: each token acts as you on the servers you pick.
      </p>
      {error ? (
        <p className="sidebar-error" role="alert">
          {error}
        </p>
      ) : null}
      {created ? (
        <div className="access-token-created" role="status">
          <p>Copy this token now: it is not shown again.</p>
          <input aria-label="New access token" readOnly value={created.token} onFocus={(e) => e.target.select()} />
          <ul>
            {created.servers.map((server) => (
              <li key={server}>
                <code>{mcpUrl(window.location.origin, server)}</code>
              </li>
            ))}
          </ul>
          <button type="button" className="small" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      ) : null}
      <form
        className="access-token-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label>
          Name
          <input value={name} maxLength={100} placeholder="my IDE" onChange={(e) => setName(e.target.value)} />
        </label>
        <fieldset>
          <legend>Servers</legend>
          {MCP_SERVERS.map((server) => (
            <label key={server} className="access-token-server">
              <input
                type="checkbox"
                checked={servers.includes(server)}
                onChange={(e) => toggle(server, e.target.checked)}
              />
              {server}
            </label>
          ))}
        </fieldset>
        <label>
          Days valid
          <input
            type="number"
            min={1}
            max={365}
            value={days}
            onChange={(e) => setDays(Math.max(1, Math.trunc(Number(e.target.value) || 1)))}
          />
        </label>
        <button type="submit" className="small primary" disabled={busy || !name.trim() || servers.length === 0}>
          Create token
        </button>
      </form>
      {tokens.length > 0 ? (
        <ul className="session-list access-token-list">
          {tokens.map((token) => (
            <li key={token.id} className="session-item" data-token-id={token.id}>
              <span className="session-title">{token.name}</span>
              <span className="session-meta">
                {token.servers.join(", ")} · {token.expired ? "expired" : `until ${day(token.expires_at)}`} · last used{" "}
                {day(token.last_used_at)}
              </span>
              <div className="session-actions">
                <button type="button" className="small" onClick={() => void revoke(token.id)}>
                  Revoke
                </button>
              </div>
            </li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}
