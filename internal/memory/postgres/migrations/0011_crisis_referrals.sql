-- Crisis referrals shown per UTC day and locale, for the yearly report of
-- how many were made: counts only, of no resource, thread or message, so
-- that erasing a resource leaves them and they hold no personal data.
CREATE TABLE crisis_referrals (
    day    date   NOT NULL,             -- UTC
    locale text   NOT NULL,
    count  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (day, locale)
);
