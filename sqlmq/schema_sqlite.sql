-- The transactional outbox (SQLite 3.35 or later).
-- Times are microseconds since the Unix epoch (UTC); NULL dispatched_us means
-- not yet confirmed by the broker; a non-NULL retired_us means the relay
-- gave up on the row and it waits for an operator.
-- Running it again changes nothing.
CREATE TABLE IF NOT EXISTS Messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id       TEXT    NOT NULL,
    topic            TEXT    NOT NULL DEFAULT '',
    routing_key      TEXT    NOT NULL DEFAULT '',
    correlation_id   TEXT    NOT NULL DEFAULT '',
    causation_id     TEXT    NOT NULL DEFAULT '',
    reply_to         TEXT    NOT NULL DEFAULT '',
    message_type     TEXT    NOT NULL DEFAULT '',
    message_version  INTEGER NOT NULL DEFAULT 0,
    content_type     TEXT    NOT NULL DEFAULT '',
    content_encoding TEXT    NOT NULL DEFAULT '',
    envelope_attempt INTEGER NOT NULL DEFAULT 0,
    first_seen_us    INTEGER NOT NULL DEFAULT 0,
    origin           TEXT    NOT NULL DEFAULT '',
    error_reason     TEXT        NULL,
    claim            TEXT    NOT NULL DEFAULT '',
    route            TEXT        NULL,
    route_position   INTEGER NOT NULL DEFAULT 0,
    route_id         TEXT    NOT NULL DEFAULT '',
    expiration_ms    INTEGER NOT NULL DEFAULT 0,
    sent_us          INTEGER NOT NULL DEFAULT 0,
    is_transient     INTEGER NOT NULL DEFAULT 0,
    headers          TEXT        NULL,
    payload          BLOB    NOT NULL,
    created_us       INTEGER NOT NULL,
    publish_attempts INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT        NULL,
    dispatched_us    INTEGER     NULL,
    retired_us       INTEGER     NULL,
    lease_owner      TEXT        NULL,
    lease_until_us   INTEGER     NULL
);
CREATE INDEX IF NOT EXISTS ix_Messages_pending ON Messages (dispatched_us, retired_us, id);
CREATE INDEX IF NOT EXISTS ix_Messages_message_id ON Messages (message_id);
