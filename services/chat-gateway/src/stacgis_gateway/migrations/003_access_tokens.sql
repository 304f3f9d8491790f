-- Personal access tokens of outside MCP clients. Only the SHA-256 of a token is kept: a leaked table
-- gives no usable token. `servers` lists the MCP servers the token may reach.
CREATE TABLE access_tokens (
    id            uuid PRIMARY KEY,
    user_id       text NOT NULL,
    name          text NOT NULL,
    token_hash    bytea NOT NULL UNIQUE,
    servers       text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX access_tokens_user ON access_tokens (user_id, created_at DESC);
