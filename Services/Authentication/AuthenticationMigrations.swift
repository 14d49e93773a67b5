import Postgres

/// The authentication service's own tables (versions 101+).
enum AuthenticationMigrations {
    static let all: [Migration] = [
        Migration(
            101, "webauthn_credentials_read_model",
            """
            -- Built from registration's credential events; this service is authoritative for
            -- the signature counter from then on.
            CREATE TABLE credentials (
                tenant_id text NOT NULL,
                credential_id bytea NOT NULL,
                username text NOT NULL,
                user_handle bytea NOT NULL,
                public_key_cose bytea NOT NULL,
                algorithm integer NOT NULL,
                sign_count bigint NOT NULL,
                backup_eligible boolean NOT NULL,
                backup_state boolean NOT NULL,
                transports text[] NOT NULL,
                status text NOT NULL DEFAULT 'active',
                clone_suspected boolean NOT NULL DEFAULT false,
                registered_at timestamptz NOT NULL,
                last_used_at timestamptz,
                PRIMARY KEY (tenant_id, credential_id)
            );
            CREATE INDEX credentials_by_user ON credentials (tenant_id, username);
            CREATE TABLE used_challenges (
                challenge_hash bytea PRIMARY KEY,
                expires_at timestamptz NOT NULL
            );
            CREATE INDEX used_challenges_expiry ON used_challenges (expires_at);
            """),
    ]
}
