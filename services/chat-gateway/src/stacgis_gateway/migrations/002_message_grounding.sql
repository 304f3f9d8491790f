-- The grounding check of a final answer (stacgis.v1.Grounding as proto3 JSON), shown again with the history.
ALTER TABLE messages ADD COLUMN grounding jsonb;
