-- Knowledge with owners: a document added by a user (add_knowledge) is private to that user;
-- shared documents (owner NULL) come from operators (the ingest command, admin users). Documents
-- stored before this migration were all visible to everyone, so they stay shared.

ALTER TABLE documents ADD COLUMN owner text;
-- Chunks carry their document's owner, so search filters on the chunk rows it ranks.
ALTER TABLE chunks ADD COLUMN owner text;

-- Deduplication is per owner: identical text added by two users is two private documents, and
-- the answer "already stored" never reveals another user's document.
ALTER TABLE documents DROP CONSTRAINT documents_content_hash_key;
CREATE UNIQUE INDEX documents_owner_content_hash ON documents ((coalesce(owner, '')), content_hash);
ALTER TABLE chunks DROP CONSTRAINT chunks_content_hash_key;
CREATE UNIQUE INDEX chunks_owner_content_hash ON chunks ((coalesce(owner, '')), content_hash);
CREATE INDEX chunks_owner ON chunks (owner);
