-- The map of a conversation (view, layers, selection) as the web app last saved it, restored when the
-- conversation is opened again. JSON the gateway validated (schemas.MapState); NULL until first saved.
ALTER TABLE sessions ADD COLUMN map_state jsonb;
ALTER TABLE sessions ADD COLUMN map_state_updated_at timestamptz;
