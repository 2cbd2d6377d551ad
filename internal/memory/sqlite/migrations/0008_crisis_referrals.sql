-- Crisis referrals shown per UTC day and locale, for the yearly report of
-- how many were made: counts only, of no resource, thread or message, so
-- that erasing a resource leaves them and they hold no personal data.
CREATE TABLE crisis_referrals (
    day    TEXT    NOT NULL,           -- YYYY-MM-DD, UTC
    locale TEXT    NOT NULL,
    count  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, locale)
) STRICT;
