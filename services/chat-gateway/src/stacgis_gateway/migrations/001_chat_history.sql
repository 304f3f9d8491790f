-- Chat sessions, their messages and per-run usage. Postgres is the record; Redis only caches.
CREATE TABLE sessions (
    id          uuid PRIMARY KEY,
    user_id     text NOT NULL,
    title       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user_updated ON sessions (user_id, updated_at DESC);

CREATE TABLE messages (
    id            bigserial PRIMARY KEY,
    session_id    uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role          text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content       text NOT NULL DEFAULT '',
    tool_calls    jsonb,
    tool_call_id  text,
    name          text,
    run_id        text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_session_order ON messages (session_id, id);

-- One row per finished run: its primary key makes persisting a run's messages happen once.
CREATE TABLE runs (
    run_id         text PRIMARY KEY,
    user_id        text NOT NULL,
    session_id     uuid,
    outcome        text NOT NULL,
    finish_reason  text,
    error_code     text,
    input_tokens   bigint NOT NULL DEFAULT 0,
    output_tokens  bigint NOT NULL DEFAULT 0,
    tool_calls     integer NOT NULL DEFAULT 0,
    steps          integer NOT NULL DEFAULT 0,
    started_at     timestamptz NOT NULL,
    finished_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_user_finished ON runs (user_id, finished_at);
