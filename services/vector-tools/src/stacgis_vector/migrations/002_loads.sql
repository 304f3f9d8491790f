-- Dataset loads under way (python -m stacgis_vector.load): a row per dataset being loaded, written as
-- its features are embedded and removed in the transaction that swaps the dataset in. A service
-- started before its place names are in reads it to say what is still arriving and how far it got.

CREATE TABLE loads (
    dataset text PRIMARY KEY,
    -- 'embedding' (done of total features embedded) or 'writing' (all embedded, being copied in).
    stage text NOT NULL CHECK (stage IN ('embedding', 'writing')),
    done integer NOT NULL CHECK (done >= 0),
    total integer NOT NULL CHECK (total >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
