-- The transactional outbox (MySQL 8, MariaDB 10.6 or later).
-- Times are microseconds since the Unix epoch (UTC); NULL dispatched_us means
-- not yet confirmed by the broker; a non-NULL retired_us means the relay
-- gave up on the row and it waits for an operator.
-- Running it again changes nothing. The indexes are declared in the table
-- because MySQL 8 has no CREATE INDEX IF NOT EXISTS.
CREATE TABLE IF NOT EXISTS Messages (
    id               bigint unsigned AUTO_INCREMENT NOT NULL,
    message_id       varchar(255)    NOT NULL,
    topic            varchar(255)    NOT NULL DEFAULT '',
    routing_key      varchar(255)    NOT NULL DEFAULT '',
    correlation_id   varchar(255)    NOT NULL DEFAULT '',
    causation_id     varchar(255)    NOT NULL DEFAULT '',
    reply_to         varchar(255)    NOT NULL DEFAULT '',
    message_type     varchar(255)    NOT NULL DEFAULT '',
    message_version  int             NOT NULL DEFAULT 0,
    content_type     varchar(255)    NOT NULL DEFAULT '',
    content_encoding varchar(255)    NOT NULL DEFAULT '',
    envelope_attempt int             NOT NULL DEFAULT 0,
    first_seen_us    bigint          NOT NULL DEFAULT 0,
    origin           varchar(255)    NOT NULL DEFAULT '',
    error_reason     text                NULL,
    claim            varchar(1024)   NOT NULL DEFAULT '',
    route            text                NULL,
    route_position   int             NOT NULL DEFAULT 0,
    route_id         varchar(255)    NOT NULL DEFAULT '',
    expiration_ms    bigint          NOT NULL DEFAULT 0,
    sent_us          bigint          NOT NULL DEFAULT 0,
    is_transient     tinyint(1)      NOT NULL DEFAULT 0,
    headers          mediumtext          NULL,
    payload          longblob        NOT NULL,
    created_us       bigint          NOT NULL,
    publish_attempts int             NOT NULL DEFAULT 0,
    last_error       text                NULL,
    dispatched_us    bigint              NULL,
    retired_us       bigint              NULL,
    lease_owner      varchar(128)        NULL,
    lease_until_us   bigint              NULL,
    PRIMARY KEY (id),
    INDEX ix_Messages_pending (dispatched_us, retired_us, id),
    INDEX ix_Messages_message_id (message_id)
);
