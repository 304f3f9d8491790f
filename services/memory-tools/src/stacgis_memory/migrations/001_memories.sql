-- Long-term memories, one set per user. The `embedding vector(N)` column and its HNSW index are
-- added by stacgis_memory.embedding_column, sized from MEMORY_EMBEDDING_DIMENSION.

CREATE TABLE embedding_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    model text NOT NULL,
    dimension integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memories (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The verified user of the internal token that stored it; every query filters on it.
    user_id text NOT NULL,
    kind text NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- How often the memory was stated again (replayed or near-duplicate additions).
    times_seen integer NOT NULL DEFAULT 1,
    UNIQUE (user_id, content_hash)
);
CREATE INDEX memories_user_recent ON memories (user_id, updated_at DESC);
CREATE INDEX memories_search_gin ON memories USING gin (search_tsv);
