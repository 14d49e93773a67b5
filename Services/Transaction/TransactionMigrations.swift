import Postgres

/// The transaction service's own tables (versions 101+).
enum TransactionMigrations {
    static let all: [Migration] = [
        Migration(
            101, "transactions",
            """
            CREATE TABLE transactions (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text NOT NULL,
                details text NOT NULL,
                details_hash bytea NOT NULL,
                payer_account text,
                custom_fields text,
                status text NOT NULL,
                revision integer NOT NULL,
                created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                tc_token text,
                tc_jti text,
                tc_consumed_at timestamptz,
                evidence text
            );
            CREATE INDEX transactions_pending_expiry ON transactions (expires_at) WHERE status = 'PENDING';
            -- tcToken signing keys per tenant: the private key sealed with AES-256-GCM under
            -- SIGNET_TCTOKEN_KEY_SEAL; the newest is current, older ones stay published.
            CREATE TABLE tctoken_keys (
                tenant_id text NOT NULL,
                kid text NOT NULL,
                sealed_private_key bytea NOT NULL,
                public_jwk text NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, kid)
            );
            """),
        Migration(
            102, "credential owners",
            """
            -- Whose each credential is (from registration's events): a confirmation is signed by
            -- an active credential of the transaction's own user, with the key it registered.
            CREATE TABLE credential_owners (
                tenant_id text NOT NULL,
                credential_id bytea NOT NULL,
                username text NOT NULL,
                public_key_cose bytea NOT NULL,
                status text NOT NULL,
                PRIMARY KEY (tenant_id, credential_id)
            );
            """),
        Migration(
            103, "retention",
            """
            -- The tenants' retention of transactions' evidence (from registration's events); NULL keeps.
            CREATE TABLE retention_settings (
                tenant_id text PRIMARY KEY,
                transaction_evidence_days integer,
                changed_at timestamptz NOT NULL
            );
            CREATE INDEX transactions_evidence_age ON transactions (tenant_id, updated_at) WHERE evidence IS NOT NULL;
            """),
        Migration(
            150, "uaf key owners",
            """
            -- Whose each FIDO UAF key is (from registration's events): a UAF confirmation step is
            -- signed by an active key of the transaction's own user, verified with the key,
            -- encoding and algorithm registered.
            CREATE TABLE uaf_key_owners (
                tenant_id text NOT NULL,
                aaid text NOT NULL,
                key_id bytea NOT NULL,
                username text NOT NULL,
                public_key bytea NOT NULL,
                key_encoding integer NOT NULL,
                signature_algorithm integer NOT NULL,
                attestation_type text NOT NULL,
                status text NOT NULL,
                PRIMARY KEY (tenant_id, aaid, key_id)
            );
            CREATE INDEX uaf_key_owners_user ON uaf_key_owners (tenant_id, username);
            """),
        Migration(
            152, "uaf app ids and facets",
            """
            -- The tenant's UAF AppID (the last one registration announced in UAFAuthenticatorRegistered)
            -- and trusted facets (UAFSettingsChanged, applied when its revision is newer; without a
            -- row the tenant's web origins): a UAF confirmation step's fcParams must name both, as
            -- at sign-in (UAF Protocol §3.5.7.5 steps 3.a and 3.c).
            CREATE TABLE uaf_app_ids (
                tenant_id text PRIMARY KEY,
                app_id text NOT NULL,
                seen_at timestamptz NOT NULL
            );
            CREATE TABLE uaf_settings (
                tenant_id text PRIMARY KEY,
                facet_ids text[] NOT NULL,
                revision integer NOT NULL
            );
            """),
        Migration(
            180, "owners_by_subject_ref",
            """
            -- credential.registered.v2 and uaf.registered.v2 name the user by subject reference
            -- (#18): so do the owners' records. Rows from v1 events cannot be re-keyed in SQL (the
            -- reference needs SIGNET_SUBJECT_KEY) and are dropped.
            DELETE FROM credential_owners;
            ALTER TABLE credential_owners DROP COLUMN username;
            ALTER TABLE credential_owners ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX credential_owners_by_subject ON credential_owners (tenant_id, subject_ref);
            DELETE FROM uaf_key_owners;
            DROP INDEX uaf_key_owners_user;
            ALTER TABLE uaf_key_owners DROP COLUMN username;
            ALTER TABLE uaf_key_owners ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX uaf_key_owners_by_subject ON uaf_key_owners (tenant_id, subject_ref);
            """),
        Migration(
            190, "device_key_owners",
            """
            -- Bound devices' user-auth public keys (JWK text), from the oob service's DeviceChanged
            -- events: an oob_push confirmation step verifies with this record's key (#16).
            CREATE TABLE device_key_owners (
                tenant_id text NOT NULL,
                device_id text NOT NULL,
                subject_ref text NOT NULL,
                user_auth_key text NOT NULL,
                changed_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, device_id)
            );
            CREATE INDEX device_key_owners_by_subject ON device_key_owners (tenant_id, subject_ref);
            """),
        Migration(
            191, "consumed_evidence",
            """
            -- The dynamic-linking challenge of every WebAuthn and UAF step that confirmed a
            -- transaction, spent once per tenant in the confirming transaction: the details hash
            -- does not name the transaction, so one confirmation's steps would confirm another
            -- transaction with the same details. The signing key (aaid NULL: a WebAuthn
            -- credential id) says when a row stops mattering (ConsumedEvidence.purge).
            CREATE TABLE consumed_evidence (
                tenant_id text NOT NULL,
                challenge bytea NOT NULL,
                transaction_id text NOT NULL,
                aaid text,
                key_id bytea NOT NULL,
                consumed_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, challenge)
            );
            CREATE INDEX consumed_evidence_by_transaction ON consumed_evidence (tenant_id, transaction_id);
            """),
        Migration(
            192, "consumed_evidence_backfill",
            """
            -- The steps of confirmations made before 191 are spent too, from the evidence kept
            -- (evidence already cleared by retention cannot be). The challenge as
            -- DynamicLinkingChallenge.derive computes it: SHA-256("signet-dynamic-link-v1" || 0x00
            -- || detailsHash || nonce). Only well-formed base64url is decoded (a step that was
            -- verified always is); a confirmed transaction's details hash cannot change.
            INSERT INTO consumed_evidence (tenant_id, challenge, transaction_id, aaid, key_id, consumed_at)
            SELECT t.tenant_id,
                sha256(convert_to('signet-dynamic-link-v1', 'UTF8') || decode('00', 'hex') || t.details_hash
                    || decode(translate(a->>'nonce', '-_', '+/') || repeat('=', (4 - length(a->>'nonce') % 4) % 4), 'base64')),
                t.id, CASE WHEN a->>'format' IS NULL THEN NULL ELSE a->>'aaid' END,
                decode(translate(a->>'credentialId', '-_', '+/') || repeat('=', (4 - length(a->>'credentialId') % 4) % 4), 'base64'),
                t.updated_at
            FROM transactions t CROSS JOIN LATERAL json_array_elements(
                CASE WHEN json_typeof(t.evidence::json -> 'assertions') = 'array' THEN t.evidence::json -> 'assertions' ELSE '[]'::json END) a
            WHERE t.status = 'CONFIRMED' AND t.evidence IS NOT NULL
                AND (a->>'format' IS NULL OR (a->>'format' = 'uaf' AND a->>'aaid' IS NOT NULL))
                AND a->>'nonce' ~ '^[A-Za-z0-9_-]{22}$'
                AND a->>'credentialId' ~ '^[A-Za-z0-9_-]+$' AND length(a->>'credentialId') % 4 <> 1
            ON CONFLICT DO NOTHING;
            """),
    ]
}
