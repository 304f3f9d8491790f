-- Vector datasets and their features. The `embedding vector(N)` column and its HNSW index
-- are added by stacgis_vector.embedding_column, sized from VECTOR_EMBEDDING_DIMENSION.

CREATE TABLE embedding_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    model text NOT NULL,
    dimension integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE datasets (
    id text PRIMARY KEY,
    title text NOT NULL,
    description text NOT NULL,
    geometry_type text NOT NULL,
    feature_count integer NOT NULL,
    extent double precision[] NOT NULL,
    license text NOT NULL,
    attribution text NOT NULL,
    -- Package, version, file and archive checksum of every input, for citation and reloads.
    sources jsonb NOT NULL,
    -- Properties shown in search results (the full set comes with get_vector_feature).
    summary_properties text[] NOT NULL,
    source_checksum text NOT NULL,
    loaded_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE features (
    dataset text NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    id text NOT NULL,
    name text NOT NULL,
    name_normalized text NOT NULL,
    alternate_names text[] NOT NULL DEFAULT '{}',
    -- Population (cities, countries) orders otherwise equal matches: Paris, France before Paris, Texas.
    population bigint,
    properties jsonb NOT NULL,
    geometry jsonb NOT NULL,
    geometry_type text NOT NULL,
    vertex_count integer NOT NULL,
    bbox box NOT NULL,
    -- A point inside the feature (label point), so results can place it without the geometry.
    anchor_lon double precision NOT NULL,
    anchor_lat double precision NOT NULL,
    -- The sentence whose embedding represents the feature.
    embedding_text text NOT NULL,
    -- Normalised (unaccented, case-folded) words for full-text search.
    search_document text NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_document)) STORED,
    PRIMARY KEY (dataset, id)
);

CREATE INDEX features_bbox_gist ON features USING gist (bbox);
CREATE INDEX features_search_gin ON features USING gin (search_tsv);
CREATE INDEX features_name_prefix ON features (name_normalized text_pattern_ops);
CREATE INDEX features_alternate_names_gin ON features USING gin (alternate_names);
