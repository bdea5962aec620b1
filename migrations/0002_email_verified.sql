-- Whether the provider said the email address is verified: true only when it explicitly said
-- so; false when it said false or did not say (a profile endpoint such as the Graph API's).
-- Rows written before this migration become false: nobody recorded that they were verified.
-- Applied by `authgate migrate --config FILE` inside one transaction.

ALTER TABLE accounts ADD COLUMN email_verified boolean NOT NULL DEFAULT false;
ALTER TABLE identities ADD COLUMN email_verified boolean NOT NULL DEFAULT false;
