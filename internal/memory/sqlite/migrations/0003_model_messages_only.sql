-- A message is stored as the model messages it is made of, and nothing
-- else: UI parts are drawn from them when the API shows a message. Messages
-- a client sent were stored with their parts only; they become one model
-- message of their role and text, which is what their parts said.
UPDATE messages SET model = json_array(json_object('role', role, 'content', text)) WHERE model IS NULL;
ALTER TABLE messages DROP COLUMN parts;
UPDATE threads SET bytes = coalesce((
    SELECT sum(length(CAST(text AS BLOB)) + length(CAST(model AS BLOB)))
    FROM messages WHERE messages.thread_id = threads.id), 0);
