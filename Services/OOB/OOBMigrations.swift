import Postgres
import ServiceKit

/// The oob-notification service's own tables (versions 101+).
enum OOBMigrations {
    static let all: [Migration] = [
        TemplateStore.migration,
        Migration(
            102, "devices",
            """
            -- Mobile devices: their public keys (JWK text), what the app told about itself, the
            -- user they are bound to. The push token is a device secret: sealed with AES-256-GCM
            -- under SIGNET_OOB_KEY_SEAL (associated data: tenant/device id), never stored plain.
            CREATE TABLE devices (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                key_thumbprint text NOT NULL,
                device_key text NOT NULL,
                user_auth_key text,
                platform text NOT NULL,
                model text,
                os_version text,
                app_id text NOT NULL,
                sealed_push_token bytea,
                push_token_invalid_at timestamptz,
                username text,
                status text NOT NULL,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                last_seen_at timestamptz NOT NULL,
                UNIQUE (tenant_id, key_thumbprint)
            );
            CREATE INDEX devices_user ON devices (tenant_id, username) WHERE username IS NOT NULL;
            -- Nonces of the device proofs accepted, until the proofs could no longer be fresh.
            CREATE TABLE device_proof_nonces (
                tenant_id text NOT NULL,
                holder text NOT NULL,
                nonce text NOT NULL,
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, holder, nonce)
            );
            CREATE INDEX device_proof_nonces_expiry ON device_proof_nonces (expires_at);
            -- Device identifier JWT keys per tenant, as the transaction service keeps tcToken keys.
            CREATE TABLE device_token_keys (
                tenant_id text NOT NULL,
                kid text NOT NULL,
                sealed_private_key bytea NOT NULL,
                public_jwk text NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, kid)
            );
            """),
        Migration(
            103, "approvals",
            """
            CREATE TABLE approvals (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text NOT NULL,
                device_id text,
                level text NOT NULL,
                action text NOT NULL,
                resource text NOT NULL,
                text text,
                custom_fields text,
                details_hash bytea NOT NULL,
                number_matching boolean NOT NULL,
                number integer,
                status text NOT NULL,
                revision integer NOT NULL,
                reason text,
                decided_device_id text,
                decided_level text,
                callback_url text,
                created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL
            );
            CREATE INDEX approvals_pending_user ON approvals (tenant_id, username) WHERE status = 'IN_PROGRESS';
            CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'IN_PROGRESS';
            """),
        Migration(
            104, "qr_sessions",
            """
            -- QR sessions: short-lived, single-use; the id (128 random bits) is the only thing
            -- the QR payload carries. The watch token is kept as its SHA-256.
            CREATE TABLE qr_sessions (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                purpose text NOT NULL,
                qr_type text NOT NULL,
                username text,
                signin_id text,
                watch_token_hash bytea NOT NULL,
                status text NOT NULL,
                revision integer NOT NULL,
                reason text,
                device_id text,
                claimed_username text,
                created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL
            );
            CREATE INDEX qr_sessions_expiry ON qr_sessions (expires_at);
            CREATE INDEX qr_sessions_user ON qr_sessions (tenant_id, username) WHERE username IS NOT NULL;
            CREATE INDEX qr_sessions_claimed_user ON qr_sessions (tenant_id, claimed_username) WHERE claimed_username IS NOT NULL;
            """),
        AppSettingsStore.migration,
        StoredQRSession.credentialMigration,
        StoredTruCode.migration,
        StoredQRSession.blessMigration,
        IdentityDocumentStore.migration,
        Migration(
            160, "approval_transaction_evidence",
            """
            -- A transaction confirmed by push: the approval carries the transaction's details hash
            -- (part of its canonical details, so of what the device signs), and keeps the signed
            -- decision (key named, base64url r||s, number chosen) as the evidence the transaction
            -- service verifies again. Public data: no secret, no personal data.
            ALTER TABLE approvals ADD COLUMN transaction_hash text;
            ALTER TABLE approvals ADD COLUMN decision_signed_with text;
            ALTER TABLE approvals ADD COLUMN decision_signature text;
            ALTER TABLE approvals ADD COLUMN decision_number integer;
            """),
        ApprovalDeliveryStore.migration,
        PushTemplate.migration,
        // The expirer's purge of finished rows past the retention runs every few seconds: without
        // these it read the whole table each time (400 ms of PostgreSQL CPU for a million
        // approvals, every 5 s). Updates that finish a row were never HOT (`status` is in the
        // predicates of partial indexes already): one more index entry each.
        Migration(
            180, "finished_rows_by_time",
            """
            CREATE INDEX approvals_finished ON approvals (updated_at) WHERE status <> 'IN_PROGRESS';
            CREATE INDEX approval_deliveries_finished ON approval_deliveries (updated_at) WHERE status <> 'pending';
            """),
        // The device routes take a user's session token: a revoked session's is refused.
        Migration(190, "revoked_sessions", SessionRevocations.migrationSQL),
    ]
}
