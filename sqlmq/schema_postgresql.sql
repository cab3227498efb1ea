-- The transactional outbox (PostgreSQL 9.5 or later).
-- Times are microseconds since the Unix epoch (UTC); NULL dispatched_us means
-- not yet confirmed by the broker; a non-NULL retired_us means the relay
-- gave up on the row and it waits for an operator.
-- Running it again changes nothing.
CREATE TABLE IF NOT EXISTS Messages (
    id               bigserial    NOT NULL,
    message_id       varchar(255) NOT NULL,
    topic            varchar(255) NOT NULL DEFAULT '',
    routing_key      varchar(255) NOT NULL DEFAULT '',
    correlation_id   varchar(255) NOT NULL DEFAULT '',
    causation_id     varchar(255) NOT NULL DEFAULT '',
    reply_to         varchar(255) NOT NULL DEFAULT '',
    message_type     varchar(255) NOT NULL DEFAULT '',
    message_version  integer      NOT NULL DEFAULT 0,
    content_type     varchar(255) NOT NULL DEFAULT '',
    content_encoding varchar(255) NOT NULL DEFAULT '',
    envelope_attempt integer      NOT NULL DEFAULT 0,
    first_seen_us    bigint       NOT NULL DEFAULT 0,
    origin           varchar(255) NOT NULL DEFAULT '',
    error_reason     text             NULL,
    claim            varchar(1024) NOT NULL DEFAULT '',
    route            text             NULL,
    route_position   integer      NOT NULL DEFAULT 0,
    route_id         varchar(255) NOT NULL DEFAULT '',
    expiration_ms    bigint       NOT NULL DEFAULT 0,
    sent_us          bigint       NOT NULL DEFAULT 0,
    is_transient     boolean      NOT NULL DEFAULT false,
    headers          text             NULL,
    payload          bytea        NOT NULL,
    created_us       bigint       NOT NULL,
    publish_attempts integer      NOT NULL DEFAULT 0,
    last_error       text             NULL,
    dispatched_us    bigint           NULL,
    retired_us       bigint           NULL,
    lease_owner      varchar(128)     NULL,
    lease_until_us   bigint           NULL,
    PRIMARY KEY (id)
);
CREATE INDEX IF NOT EXISTS ix_Messages_pending ON Messages (dispatched_us, retired_us, id);
CREATE INDEX IF NOT EXISTS ix_Messages_message_id ON Messages (message_id);
