-- A message is stored as the model messages it is made of, and nothing
-- else: UI parts are drawn from them when the API shows a message. Messages
-- a client sent were stored with their parts only; they become one model
-- message of their role and text, which is what their parts said.
-- Written as Go writes it, without spaces.
UPDATE messages SET model = ('[{"role":' || to_json(role)::text || ',"content":' || to_json(text)::text || '}]')::json WHERE model IS NULL;
ALTER TABLE messages DROP COLUMN parts;
ALTER TABLE messages ALTER COLUMN model SET NOT NULL;
UPDATE threads SET bytes = coalesce((
    SELECT sum(octet_length(text) + octet_length(model::text))
    FROM messages WHERE messages.thread_id = threads.id), 0);
