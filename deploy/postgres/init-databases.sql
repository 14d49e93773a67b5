-- Creates one login role and one database per Signet service.
--
-- Used by deploy/compose.yaml: the postgres image runs files in /docker-entrypoint-initdb.d
-- with psql, once, when the data volume is empty (it is not re-run on later starts; drop
-- the volume to re-initialise). It runs as the superuser, connected to `postgres`.
--
-- Each service gets its own role that owns only its own database, and PUBLIC loses CONNECT
-- on all five, so a compromised service cannot read another service's data — in
-- particular the pii vault. The passwords come from the container's environment
-- (psql 15's \getenv), never from this file:
--   SIGNET_REGISTRATION_DB_PASSWORD, SIGNET_AUTHENTICATION_DB_PASSWORD,
--   SIGNET_TRANSACTION_DB_PASSWORD, SIGNET_OOB_DB_PASSWORD, SIGNET_PII_DB_PASSWORD
-- A missing or short (< 16 characters) one aborts initialisation (the entrypoint runs
-- psql with ON_ERROR_STOP=1; the file sets it too, for manual runs with `psql -f`).
--
-- The same statements work on a managed PostgreSQL for production, run once by an
-- administrator (with the passwords in the environment of that psql).
--
-- Each service creates its own tables through its migrations (as database owner it is
-- pg_database_owner, so it may create in schema public on PostgreSQL 15).

\set ON_ERROR_STOP 1

\getenv registration_password SIGNET_REGISTRATION_DB_PASSWORD
\getenv authentication_password SIGNET_AUTHENTICATION_DB_PASSWORD
\getenv transaction_password SIGNET_TRANSACTION_DB_PASSWORD
\getenv oob_password SIGNET_OOB_DB_PASSWORD
\getenv pii_password SIGNET_PII_DB_PASSWORD

\if :{?registration_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'SIGNET_REGISTRATION_DB_PASSWORD is not set'; END $$;
\endif
\if :{?authentication_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'SIGNET_AUTHENTICATION_DB_PASSWORD is not set'; END $$;
\endif
\if :{?transaction_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'SIGNET_TRANSACTION_DB_PASSWORD is not set'; END $$;
\endif
\if :{?oob_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'SIGNET_OOB_DB_PASSWORD is not set'; END $$;
\endif
\if :{?pii_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'SIGNET_PII_DB_PASSWORD is not set'; END $$;
\endif

SELECT least(length(:'registration_password'), length(:'authentication_password'),
             length(:'transaction_password'), length(:'oob_password'), length(:'pii_password')) < 16
       AS signet_short_password \gset
\if :signet_short_password
  DO $$ BEGIN RAISE EXCEPTION 'each SIGNET_<SERVICE>_DB_PASSWORD must be at least 16 characters'; END $$;
\endif
\unset signet_short_password

-- Passwords are stored as SCRAM verifiers (the PostgreSQL 15 default, made explicit).
SET password_encryption = 'scram-sha-256';

CREATE ROLE signet_registration LOGIN PASSWORD :'registration_password';
CREATE ROLE signet_authentication LOGIN PASSWORD :'authentication_password';
CREATE ROLE signet_transaction LOGIN PASSWORD :'transaction_password';
CREATE ROLE signet_oob LOGIN PASSWORD :'oob_password';
CREATE ROLE signet_pii LOGIN PASSWORD :'pii_password';

CREATE DATABASE signet_registration OWNER signet_registration ENCODING 'UTF8' TEMPLATE template0;
CREATE DATABASE signet_authentication OWNER signet_authentication ENCODING 'UTF8' TEMPLATE template0;
CREATE DATABASE signet_transaction OWNER signet_transaction ENCODING 'UTF8' TEMPLATE template0;
CREATE DATABASE signet_oob OWNER signet_oob ENCODING 'UTF8' TEMPLATE template0;
CREATE DATABASE signet_pii OWNER signet_pii ENCODING 'UTF8' TEMPLATE template0;

REVOKE ALL ON DATABASE signet_registration FROM PUBLIC;
REVOKE ALL ON DATABASE signet_authentication FROM PUBLIC;
REVOKE ALL ON DATABASE signet_transaction FROM PUBLIC;
REVOKE ALL ON DATABASE signet_oob FROM PUBLIC;
REVOKE ALL ON DATABASE signet_pii FROM PUBLIC;

-- Don't leave the passwords in psql variables for anything that runs after this file.
\unset registration_password
\unset authentication_password
\unset transaction_password
\unset oob_password
\unset pii_password
