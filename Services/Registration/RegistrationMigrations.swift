import Postgres

/// The registration service's own tables (versions 101+; 1–99 are common to every service).
enum RegistrationMigrations {
    static let all: [Migration] = [
        Migration(
            101, "webauthn_users_and_credentials",
            """
            CREATE TABLE users (
                tenant_id text NOT NULL,
                username text NOT NULL,
                user_handle bytea NOT NULL,
                display_name text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, username),
                UNIQUE (tenant_id, user_handle)
            );
            CREATE TABLE credentials (
                tenant_id text NOT NULL,
                credential_id bytea NOT NULL,
                username text NOT NULL,
                user_handle bytea NOT NULL,
                public_key_cose bytea NOT NULL,
                algorithm integer NOT NULL,
                sign_count bigint NOT NULL,
                aaguid uuid NOT NULL,
                backup_eligible boolean NOT NULL,
                backup_state boolean NOT NULL,
                user_verified boolean NOT NULL,
                transports text[] NOT NULL,
                attestation_format text NOT NULL,
                attestation_type text NOT NULL,
                friendly_name text,
                status text NOT NULL DEFAULT 'active',
                created_at timestamptz NOT NULL DEFAULT now(),
                last_used_at timestamptz,
                PRIMARY KEY (tenant_id, credential_id),
                FOREIGN KEY (tenant_id, username) REFERENCES users (tenant_id, username)
            );
            CREATE INDEX credentials_by_user ON credentials (tenant_id, username);
            -- Single use of registration challenges: the hash of each challenge that finished a
            -- ceremony, kept until the handle could no longer be opened anyway.
            CREATE TABLE used_challenges (
                challenge_hash bytea PRIMARY KEY,
                expires_at timestamptz NOT NULL
            );
            CREATE INDEX used_challenges_expiry ON used_challenges (expires_at);
            """),
        Migration(
            102, "fido_policies",
            """
            -- Per-tenant FIDO policy documents (FIDO.FIDOPolicy); absent means the consumer default.
            CREATE TABLE fido_policies (
                tenant_id text PRIMARY KEY,
                document text NOT NULL,
                updated_at timestamptz NOT NULL
            );
            """),
        Migration(
            103, "credential_status_reason",
            """
            -- Why a credential was suspended when the relying party did not do it
            -- (clone_suspected, authenticator_revoked); NULL otherwise.
            ALTER TABLE credentials ADD COLUMN status_reason text;
            """),
        Migration(
            104, "user_methods",
            """
            CREATE TABLE user_methods (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text NOT NULL,
                type text NOT NULL,
                status text NOT NULL,
                pii_ref text,
                masked text,
                sealed_secret bytea,
                code_hash bytea,
                code_expires_at timestamptz,
                confirm_attempts integer NOT NULL DEFAULT 0,
                friendly_name text,
                created_at timestamptz NOT NULL,
                confirmed_at timestamptz
            );
            CREATE INDEX user_methods_by_user ON user_methods (tenant_id, username);
            """),
        Migration(
            105, "uaf",
            """
            -- FIDO UAF: per-tenant settings (trusted facets, UAF policy) and registered
            -- authenticator keys, one row per (AAID, KeyID); a deleted key stays as a row.
            CREATE TABLE uaf_settings (
                tenant_id text PRIMARY KEY,
                facet_ids text[] NOT NULL,
                policy text,
                allow_surrogate_without_metadata boolean NOT NULL,
                revision integer NOT NULL,
                updated_at timestamptz NOT NULL
            );
            CREATE TABLE uaf_registrations (
                tenant_id text NOT NULL,
                aaid text NOT NULL,
                key_id bytea NOT NULL,
                username text NOT NULL,
                public_key bytea NOT NULL,
                key_encoding integer NOT NULL,
                signature_algorithm integer NOT NULL,
                sign_counter bigint NOT NULL,
                reg_counter bigint NOT NULL,
                attestation_type text NOT NULL,
                authenticator_version integer NOT NULL,
                friendly_name text,
                status text NOT NULL DEFAULT 'active',
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, aaid, key_id)
            );
            CREATE INDEX uaf_registrations_by_user ON uaf_registrations (tenant_id, username);
            """),
        Migration(
            106, "erasures",
            """
            -- Erasures of users' data (the purge saga): one row per request, one per service
            -- that has erased its part. The username is kept only while the erasure is pending
            -- (the services' parts need it); completion clears it and stores the signed receipt.
            CREATE TABLE erasures (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text,
                status text NOT NULL,
                requested_at timestamptz NOT NULL,
                completed_at timestamptz,
                receipt text
            );
            CREATE INDEX erasures_by_tenant ON erasures (tenant_id, requested_at);
            CREATE TABLE erasure_parts (
                erasure_id text NOT NULL REFERENCES erasures (id),
                service text NOT NULL,
                tallies text NOT NULL,
                completed_at timestamptz NOT NULL,
                PRIMARY KEY (erasure_id, service)
            );
            """),
        Migration(
            107, "retention",
            """
            -- Per-tenant retention of history (PUT /v1/admin/tenants/{t}/retention); NULL keeps.
            CREATE TABLE retention_settings (
                tenant_id text PRIMARY KEY,
                deleted_registrations_days integer,
                transaction_evidence_days integer,
                updated_at timestamptz NOT NULL
            );
            -- When a credential or method was deleted, for the retention of deleted registrations.
            ALTER TABLE credentials ADD COLUMN deleted_at timestamptz;
            ALTER TABLE user_methods ADD COLUMN deleted_at timestamptz;
            """),
        Migration(
            120, "credential_device_name",
            """
            -- The device a credential was registered from, as the SDK named it (listed with the
            -- credential).
            ALTER TABLE credentials ADD COLUMN device_name text;
            """),
        Migration(
            150, "sign_up_profiles_and_passkey_only",
            """
            -- An account opened by a username-less sign-up registers passkeys (discoverable
            -- credentials) only.
            ALTER TABLE users ADD COLUMN passkey_only boolean NOT NULL DEFAULT false;
            -- The profile a sign-up carried: the pii vault's reference and masked form of each
            -- value (name, email, phone), never the value.
            CREATE TABLE user_profiles (
                tenant_id text NOT NULL,
                username text NOT NULL,
                kind text NOT NULL CHECK (kind IN ('name', 'email', 'phone')),
                pii_ref text NOT NULL,
                masked text NOT NULL,
                updated_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, username, kind),
                FOREIGN KEY (tenant_id, username) REFERENCES users (tenant_id, username)
            );
            """),
        Migration(
            180, "subjects",
            """
            -- The username each subject reference announced in credential.registered.v2 and
            -- uaf.registered.v2 stands for (#18; SubjectDirectory): the authentication service
            -- asks for it when a sign-in finds a credential without a username. Deleted by the
            -- user's erasure.
            CREATE TABLE subjects (
                tenant_id text NOT NULL,
                subject_ref text NOT NULL,
                username text NOT NULL,
                PRIMARY KEY (tenant_id, subject_ref)
            );
            CREATE INDEX subjects_by_user ON subjects (tenant_id, username);
            """),
        Migration(
            190, "method_setup_sends",
            """
            -- Codes sent to set up email_otp and sms_otp methods, for their send budget
            -- (MethodSetupBudget, ten minutes; older rows go with the retention pass): the
            -- destination as an HMAC, never the address or number, the user by subject
            -- reference. Deleted by the user's erasure.
            CREATE TABLE method_setup_sends (
                tenant_id text NOT NULL,
                destination bytea NOT NULL,
                subject_ref text NOT NULL,
                sent_at timestamptz NOT NULL
            );
            CREATE INDEX method_setup_sends_by_destination ON method_setup_sends (tenant_id, destination, sent_at);
            CREATE INDEX method_setup_sends_by_user ON method_setup_sends (tenant_id, subject_ref, sent_at);
            """),
        Migration(
            200, "revoked_sessions",
            """
            -- Sessions the authentication service revoked (session.revoked.v1), kept a day, past
            -- any access token's lifetime: a revoked session's token no longer fetches or erases
            -- its user's data (RevokedSessions). No user is named: tenant and session id only.
            CREATE TABLE revoked_sessions (
                tenant_id text NOT NULL,
                sid text NOT NULL,
                revoked_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, sid)
            );
            CREATE INDEX revoked_sessions_by_time ON revoked_sessions (revoked_at);
            """),
        Migration(
            210, "sign_up_claims",
            """
            -- The sign-up (its token's jti) an account's first registration was made under, until
            -- that token expires: another sign-up's token registers nothing on it (SignUpClaim).
            -- The user by subject reference only.
            CREATE TABLE sign_up_claims (
                tenant_id text NOT NULL,
                subject_ref text NOT NULL,
                jti text NOT NULL,
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, subject_ref)
            );
            CREATE INDEX sign_up_claims_by_expiry ON sign_up_claims (expires_at);
            """),
        Migration(
            220, "mds_state",
            """
            -- The highest FIDO metadata BLOB number (`no`) the deployment has accepted (MDS 3.0
            -- §3.2: a BLOB whose number is not greater is ignored), kept across restarts and
            -- shared by replicas: nothing older is installed again (MetadataRefresher.holdFloor).
            CREATE TABLE mds_state (
                id boolean PRIMARY KEY DEFAULT true CHECK (id),
                number bigint NOT NULL,
                recorded_at timestamptz NOT NULL
            );
            """),
        Migration(
            223, "erasures_pending_by_user",
            """
            -- Every write that adds to a user's data looks for an erasure of that user in
            -- progress (ErasureStore.requireNoErasureInProgress): the pending ones by user, a
            -- handful (completion clears the username).
            CREATE INDEX erasures_pending_by_user ON erasures (tenant_id, username) WHERE status = 'PENDING';
            """),
        Migration(
            224, "mds_kept_blob",
            """
            -- The newest FIDO metadata BLOB the deployment accepted (its text, as fetched, and how
            -- its signing chain's revocation was checked then): a replica whose source is down
            -- when it starts, or that withdrew an older BLOB, installs it after verifying it again
            -- (MetadataRefresher.installKept). One row; a newer BLOB replaces it.
            CREATE TABLE mds_kept_blob (
                id boolean PRIMARY KEY DEFAULT true CHECK (id),
                number bigint NOT NULL,
                jwt text NOT NULL,
                revocation text NOT NULL,
                accepted_at timestamptz NOT NULL
            );
            """),
        Migration(
            225, "user_methods_pending_by_age",
            """
            -- Method setups still waiting for their first code, oldest first: a day after it
            -- started, the retention pass removes an abandoned one with the vault's copy of its
            -- address or number (MethodStore.removeAbandoned).
            CREATE INDEX user_methods_pending_by_age ON user_methods (created_at) WHERE status = 'PENDING_CONFIRMATION';
            """),
    ]
}
