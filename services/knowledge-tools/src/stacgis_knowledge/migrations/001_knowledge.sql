-- Knowledge documents and their chunks. The `embedding vector(N)` column of `chunks` and its
-- HNSW index are added by stacgis_knowledge.embedding_column, sized from KNOWLEDGE_EMBEDDING_DIMENSION.

CREATE TABLE embedding_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    model text NOT NULL,
    dimension integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title text NOT NULL,
    source text,
    tags text[] NOT NULL DEFAULT '{}',
    content text NOT NULL,
    -- SHA-256 of the normalised content: the same text is stored once.
    content_hash text NOT NULL UNIQUE,
    -- 'ingest' (files of the knowledge base, replaced when the file changes) or 'tool' (add_knowledge).
    origin text NOT NULL CHECK (origin IN ('ingest', 'tool')),
    added_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX documents_ingested_source ON documents (source) WHERE origin = 'ingest';

CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    document_id uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    -- Heading path of the section, e.g. "NDVI > Reading the values".
    heading text NOT NULL,
    content text NOT NULL,
    -- SHA-256 of heading and content: a passage already in the base is not stored twice.
    content_hash text NOT NULL UNIQUE,
    token_count integer NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', heading), 'A') || setweight(to_tsvector('english', content), 'B')
    ) STORED,
    UNIQUE (document_id, ordinal)
);
CREATE INDEX chunks_search_gin ON chunks USING gin (search_tsv);
