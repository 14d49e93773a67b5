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
            Migration(
            102, "record_assertion",
            """
            -- The durable half of a WebAuthn sign-in in one round trip (WebAuthn L3 §7.2 steps
            -- 22-23 and the single use of the challenge), after the signature has verified:
            --  1. record the challenge as used; a second use is a replay, reported before any
            --     counter judgement (a replayed assertion carries a stale counter);
            --  2. move the counter forward, only if the credential is still the same key, active,
            --     not suspected of cloning, and the presented counter is greater than the stored
            --     one (or both are zero: authenticators without a counter);
            --  3. on success, enqueue the event in the outbox, in the same transaction.
            -- Otherwise it says why. A counter that did not increase is flagged by the caller in
            -- its own transaction, with its event.
            CREATE FUNCTION record_assertion(
                p_tenant text, p_credential bytea, p_public_key bytea, p_challenge bytea, p_expires timestamptz,
                p_sign_count bigint, p_backup_state boolean, p_now timestamptz,
                p_event_id text, p_topic text, p_message_key text, p_event_type text, p_source text, p_subject text,
                p_event_time timestamptz, p_event_data text)
            RETURNS TABLE (outcome text, stored_sign_count bigint)
            LANGUAGE plpgsql AS $$
            DECLARE
                r record;
            BEGIN
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (p_challenge, p_expires) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    RETURN QUERY SELECT 'challenge_replayed'::text, NULL::bigint;
                    RETURN;
                END IF;
                UPDATE credentials SET sign_count = p_sign_count, backup_state = p_backup_state, last_used_at = p_now
                    WHERE tenant_id = p_tenant AND credential_id = p_credential AND public_key_cose = p_public_key
                      AND status = 'active' AND NOT clone_suspected
                      AND (sign_count < p_sign_count OR (p_sign_count = 0 AND sign_count = 0));
                IF FOUND THEN
                    INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data)
                        VALUES (p_event_id, p_topic, p_message_key, p_event_type, p_source, p_subject, p_event_time, p_event_data);
                    RETURN QUERY SELECT 'ok'::text, p_sign_count;
                    RETURN;
                END IF;
                SELECT c.status, c.clone_suspected, c.sign_count, c.public_key_cose INTO r
                    FROM credentials c WHERE c.tenant_id = p_tenant AND c.credential_id = p_credential;
                IF NOT FOUND OR r.status = 'deleted' OR r.public_key_cose <> p_public_key THEN
                    RETURN QUERY SELECT 'credential_not_found'::text, NULL::bigint;
                ELSIF r.status <> 'active' OR r.clone_suspected THEN
                    RETURN QUERY SELECT 'credential_suspended'::text, r.sign_count;
                ELSE
                    RETURN QUERY SELECT 'sign_count_not_increased'::text, r.sign_count;
                END IF;
            END;
            $$;
            """),
            Migration(
            103, "adaptive_authentication",
            """
            -- The model of each credential, for rules about authenticator properties.
            ALTER TABLE credentials ADD COLUMN aaguid uuid;

            -- Rulesets per tenant and kind (authentication, registration): the current version
            -- and every earlier one.
            CREATE TABLE rulesets (
                tenant_id text NOT NULL,
                kind text NOT NULL,
                version integer NOT NULL,
                document text NOT NULL,
                updated_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, kind)
            );
            CREATE TABLE ruleset_history (
                tenant_id text NOT NULL,
                kind text NOT NULL,
                version integer NOT NULL,
                document text NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, kind, version)
            );

            -- Per-tenant settings of the sign-in flow (anti-hammering numbers, quick-auth window,
            -- time zone, named locations); absent means the documented defaults.
            CREATE TABLE authentication_settings (
                tenant_id text PRIMARY KEY,
                document text NOT NULL,
                updated_at timestamptz NOT NULL
            );

            -- Sign-in flows: transient, purged after they expire.
            CREATE TABLE signin_flows (
                id text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text,
                status text NOT NULL,
                matched_rule text NOT NULL,
                sequences text NOT NULL,
                completed text[] NOT NULL DEFAULT '{}',
                used_credentials text[] NOT NULL DEFAULT '{}',
                pending_method text,
                pending_state bytea,
                revision integer NOT NULL DEFAULT 0,
                created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL
            );
            CREATE INDEX signin_flows_expiry ON signin_flows (expires_at);

            -- Anti-hammering: consecutive failures per user and method.
            CREATE TABLE method_failures (
                tenant_id text NOT NULL,
                username text NOT NULL,
                method text NOT NULL,
                consecutive integer NOT NULL,
                probation_until timestamptz,
                locked_at timestamptz,
                last_failure_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, username, method)
            );

            -- Each user's last completed sign-in (daysSinceLastSignIn) and answer to
            -- registration suggestions (NOT_NOW, NEVER).
            CREATE TABLE user_state (
                tenant_id text NOT NULL,
                username text NOT NULL,
                last_signin_at timestamptz,
                registration_answer text,
                registration_answered_at timestamptz,
                PRIMARY KEY (tenant_id, username)
            );

            -- Sessions and their rotating refresh tokens (stored as SHA-256). A session is one
            -- refresh-token family: reusing a rotated token revokes the session.
            CREATE TABLE sessions (
                sid text PRIMARY KEY,
                tenant_id text NOT NULL,
                username text NOT NULL,
                amr text[] NOT NULL,
                acr text NOT NULL,
                created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL,
                revoked_at timestamptz,
                revoked_reason text
            );
            CREATE INDEX sessions_by_user ON sessions (tenant_id, username);
            CREATE INDEX sessions_expiry ON sessions (expires_at);
            CREATE TABLE refresh_tokens (
                token_hash bytea PRIMARY KEY,
                sid text NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
                issued_at timestamptz NOT NULL,
                used_at timestamptz
            );
            CREATE INDEX refresh_tokens_by_session ON refresh_tokens (sid);
            """),
            Migration(
            104, "transaction_confirmation",
            """
            -- What confirmation needs of the transaction service's transactions (from its events).
            CREATE TABLE transactions (
                tenant_id text NOT NULL,
                id text NOT NULL,
                revision integer NOT NULL,
                status text NOT NULL,
                username text NOT NULL,
                details text NOT NULL,
                details_hash bytea NOT NULL,
                expires_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, id)
            );
            -- A sign-in that confirms a transaction, and each fido2 step's signed data.
            ALTER TABLE signin_flows ADD COLUMN transaction_id text;
            ALTER TABLE signin_flows ADD COLUMN evidence text NOT NULL DEFAULT '[]';
            """),
            Migration(
            105, "user_methods_read_model",
            """
            -- Non-FIDO methods from registration's events: the vault reference of the destination,
            -- the sealed TOTP secret, and the last TOTP step used (replays are refused).
            CREATE TABLE user_methods (
                tenant_id text NOT NULL,
                method_id text NOT NULL,
                username text NOT NULL,
                type text NOT NULL,
                status text NOT NULL,
                pii_ref text,
                masked text,
                sealed_secret bytea,
                last_totp_step bigint,
                PRIMARY KEY (tenant_id, method_id)
            );
            CREATE INDEX user_methods_by_user ON user_methods (tenant_id, username);
            """),
        Migration(
            106, "refresh_token_successor",
            """
            -- The token a refresh token was exchanged for: a retired token presented again within
            -- the reuse grace, while its successor is still unused, is a parallel refresh of the
            -- same client (it gets a sibling), not a copy (which revokes the session).
            ALTER TABLE refresh_tokens ADD COLUMN replaced_by bytea;
            """),
        Migration(
            107, "code_sends",
            """
            -- One-time codes sent per destination and client address (CodeSendBudget), kept for
            -- the budget's window and purged after.
            CREATE TABLE code_sends (
                tenant_id text NOT NULL,
                method_id text NOT NULL,
                client text NOT NULL,
                sent_at timestamptz NOT NULL
            );
            CREATE INDEX code_sends_by_destination ON code_sends (tenant_id, method_id, sent_at);
            """),
        Migration(
            108, "uaf",
            """
            -- FIDO UAF from registration's events: each tenant's trusted facets and UAF policy
            -- (UAFSettingsChanged, applied when its revision is newer) and the registered
            -- authenticator keys (UAFAuthenticatorRegistered) with their signature counters.
            CREATE TABLE uaf_settings (
                tenant_id text PRIMARY KEY,
                facet_ids text[] NOT NULL,
                policy text NOT NULL,
                revision integer NOT NULL
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
                attestation_type text NOT NULL,
                status text NOT NULL DEFAULT 'active',
                registered_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, aaid, key_id)
            );
            CREATE INDEX uaf_registrations_by_user ON uaf_registrations (tenant_id, username);
            """),
        Migration(
            120, "fido_policies",
            """
            -- What sign-in applies of each tenant's FIDO policy (FIDOSignInPolicyStore): the
            -- latest FIDOPolicyChanged event of registration, as its JSON.
            CREATE TABLE fido_policies (
                tenant_id text PRIMARY KEY,
                document text NOT NULL,
                changed_at timestamptz NOT NULL
            );
            """),
        Migration(
            121, "transaction_tc_token",
            """
            -- The tcToken of a CONFIRMED transaction (TransactionChanged), handed back to the app
            -- that confirmed it with the sign-in's result.
            ALTER TABLE transactions ADD COLUMN tc_token text;
            """),
        // record_assertion (102) also writes the event's CloudEvents tracing extension
        // (outbox columns of common migration 7): the sign-in's trace continues in consumers.
        Migration(
            130, "record_assertion_trace_context",
            """
            DROP FUNCTION record_assertion(text, bytea, bytea, bytea, timestamptz, bigint, boolean, timestamptz,
                text, text, text, text, text, text, timestamptz, text);
            CREATE FUNCTION record_assertion(
                p_tenant text, p_credential bytea, p_public_key bytea, p_challenge bytea, p_expires timestamptz,
                p_sign_count bigint, p_backup_state boolean, p_now timestamptz,
                p_event_id text, p_topic text, p_message_key text, p_event_type text, p_source text, p_subject text,
                p_event_time timestamptz, p_event_data text, p_traceparent text, p_tracestate text)
            RETURNS TABLE (outcome text, stored_sign_count bigint)
            LANGUAGE plpgsql AS $$
            DECLARE
                r record;
            BEGIN
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (p_challenge, p_expires) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    RETURN QUERY SELECT 'challenge_replayed'::text, NULL::bigint;
                    RETURN;
                END IF;
                UPDATE credentials SET sign_count = p_sign_count, backup_state = p_backup_state, last_used_at = p_now
                    WHERE tenant_id = p_tenant AND credential_id = p_credential AND public_key_cose = p_public_key
                      AND status = 'active' AND NOT clone_suspected
                      AND (sign_count < p_sign_count OR (p_sign_count = 0 AND sign_count = 0));
                IF FOUND THEN
                    INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data, traceparent, tracestate)
                        VALUES (p_event_id, p_topic, p_message_key, p_event_type, p_source, p_subject, p_event_time, p_event_data,
                          p_traceparent, p_tracestate);
                    RETURN QUERY SELECT 'ok'::text, p_sign_count;
                    RETURN;
                END IF;
                SELECT c.status, c.clone_suspected, c.sign_count, c.public_key_cose INTO r
                    FROM credentials c WHERE c.tenant_id = p_tenant AND c.credential_id = p_credential;
                IF NOT FOUND OR r.status = 'deleted' OR r.public_key_cose <> p_public_key THEN
                    RETURN QUERY SELECT 'credential_not_found'::text, NULL::bigint;
                ELSIF r.status <> 'active' OR r.clone_suspected THEN
                    RETURN QUERY SELECT 'credential_suspended'::text, r.sign_count;
                ELSE
                    RETURN QUERY SELECT 'sign_count_not_increased'::text, r.sign_count;
                END IF;
            END;
            $$;
            """),
        Migration(
            140, "transaction_tc_token_dropped",
            """
            -- tcTokens no longer travel in TransactionChanged: the app that confirmed gets its
            -- token from the transaction service over an internal call. The copies go.
            ALTER TABLE transactions DROP COLUMN tc_token;
            """),
        Migration(
            150, "uaf_clone_suspected",
            """
            -- A UAF key whose signature counter did not increase (UAF Protocol §3.5.7.5 step
            -- 4.f): refused from then on, as a flagged WebAuthn credential is, until registration
            -- resumes it (UAFAuthenticatorStatusChanged to active clears the flag).
            ALTER TABLE uaf_registrations ADD COLUMN clone_suspected boolean NOT NULL DEFAULT false;
            """),
        Migration(
            151, "uaf_app_ids",
            """
            -- The AppID the registration service last announced per tenant (UAFAuthenticatorRegistered):
            -- UAFAppIDCheck compares it at start-up with the AppIDs this service makes from its own
            -- SIGNET_UAF_APP_ID_BASE.
            CREATE TABLE uaf_app_ids (
                tenant_id text PRIMARY KEY,
                app_id text NOT NULL,
                seen_at timestamptz NOT NULL
            );
            """),
        Migration(
            180, "user_methods_by_subject_ref",
            """
            -- Events name users by subject reference, never by username (#18): the methods' read
            -- model is keyed by it. Rows made from the username-carrying v1 events cannot be
            -- re-keyed in SQL (the reference needs SIGNET_SUBJECT_KEY) and are dropped; the
            -- registration service publishes method.changed.v2 from now on.
            DELETE FROM user_methods;
            DROP INDEX user_methods_by_user;
            ALTER TABLE user_methods DROP COLUMN username;
            ALTER TABLE user_methods ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX user_methods_by_subject ON user_methods (tenant_id, subject_ref);
            """),
        Migration(
            181, "transactions_by_subject_ref",
            """
            -- transaction.changed.v2 names the user by subject reference (#18): so does this read
            -- model. Rows from v1 events are dropped (they cannot be re-keyed in SQL); a pending
            -- transaction of before the upgrade is confirmable again once it changes.
            DELETE FROM transactions;
            ALTER TABLE transactions DROP COLUMN username;
            ALTER TABLE transactions ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX transactions_by_subject ON transactions (tenant_id, subject_ref);
            """),
        Migration(
            182, "credentials_by_subject_ref",
            """
            -- credential.registered.v2 and uaf.registered.v2 name the user by subject reference
            -- (#18): so do the credential and UAF read models. Rows made from the v1 events cannot
            -- be re-keyed in SQL (the reference needs SIGNET_SUBJECT_KEY) and are dropped.
            DELETE FROM credentials;
            DROP INDEX credentials_by_user;
            ALTER TABLE credentials DROP COLUMN username;
            ALTER TABLE credentials ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX credentials_by_subject ON credentials (tenant_id, subject_ref);
            DELETE FROM uaf_registrations;
            DROP INDEX uaf_registrations_by_user;
            ALTER TABLE uaf_registrations DROP COLUMN username;
            ALTER TABLE uaf_registrations ADD COLUMN subject_ref text NOT NULL;
            CREATE INDEX uaf_registrations_by_subject ON uaf_registrations (tenant_id, subject_ref);
            -- The usernames the registration service told for references (SubjectUsernames):
            -- a sign-in that finds a credential without a username asks at most once per user.
            -- Deleted by the user's erasure.
            CREATE TABLE subject_usernames (
                tenant_id text NOT NULL,
                subject_ref text NOT NULL,
                username text NOT NULL,
                PRIMARY KEY (tenant_id, subject_ref)
            );
            """),
        DeviceReadModel.migration,
        DeviceReadModel.lastSeenMigration,
        // record_assertion (130) as a function of one row: the same statements, the same
        // outcomes, answered through OUT parameters instead of RETURN QUERY (which runs its
        // SELECT through SPI as a statement of its own and returns a set). About 3 µs less per
        // call, in process, of 64–67 µs (README, "The sign-in's SQL (stop 39)"). The caller's
        // `SELECT outcome, stored_sign_count FROM record_assertion(...)` reads either form.
        Migration(
            192, "record_assertion_one_row",
            """
            DROP FUNCTION record_assertion(text, bytea, bytea, bytea, timestamptz, bigint, boolean, timestamptz,
                text, text, text, text, text, text, timestamptz, text, text, text);
            CREATE FUNCTION record_assertion(
                p_tenant text, p_credential bytea, p_public_key bytea, p_challenge bytea, p_expires timestamptz,
                p_sign_count bigint, p_backup_state boolean, p_now timestamptz,
                p_event_id text, p_topic text, p_message_key text, p_event_type text, p_source text, p_subject text,
                p_event_time timestamptz, p_event_data text, p_traceparent text, p_tracestate text,
                OUT outcome text, OUT stored_sign_count bigint)
            LANGUAGE plpgsql AS $$
            DECLARE
                r record;
            BEGIN
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (p_challenge, p_expires) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    outcome := 'challenge_replayed';
                    RETURN;
                END IF;
                UPDATE credentials SET sign_count = p_sign_count, backup_state = p_backup_state, last_used_at = p_now
                    WHERE tenant_id = p_tenant AND credential_id = p_credential AND public_key_cose = p_public_key
                      AND status = 'active' AND NOT clone_suspected
                      AND (sign_count < p_sign_count OR (p_sign_count = 0 AND sign_count = 0));
                IF FOUND THEN
                    INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data, traceparent, tracestate)
                        VALUES (p_event_id, p_topic, p_message_key, p_event_type, p_source, p_subject, p_event_time, p_event_data,
                          p_traceparent, p_tracestate);
                    outcome := 'ok';
                    stored_sign_count := p_sign_count;
                    RETURN;
                END IF;
                SELECT c.status, c.clone_suspected, c.sign_count, c.public_key_cose INTO r
                    FROM credentials c WHERE c.tenant_id = p_tenant AND c.credential_id = p_credential;
                IF NOT FOUND OR r.status = 'deleted' OR r.public_key_cose <> p_public_key THEN
                    outcome := 'credential_not_found';
                ELSIF r.status <> 'active' OR r.clone_suspected THEN
                    outcome := 'credential_suspended';
                    stored_sign_count := r.sign_count;
                ELSE
                    outcome := 'sign_count_not_increased';
                    stored_sign_count := r.sign_count;
                END IF;
            END;
            $$;
            """),
        Migration(
            193, "uaf_metadata_characteristics",
            """
            -- The metadata characteristics a UAF policy is matched on at sign-in (UAF Protocol
            -- §3.5.7.5 step 4.a: userVerification, keyProtection), as registration found them in
            -- the AAID's metadata statement (UAFAuthenticatorRegistered): userVerificationDetails
            -- as JSON (alternatives of method names), keyProtection names. NULL for a key
            -- registered without a statement, or stored before this migration: criteria on them
            -- do not match it, as before.
            ALTER TABLE uaf_registrations ADD COLUMN user_verification_details jsonb, ADD COLUMN key_protection text[];
            """),
        Migration(
            194, "signin_flow_facts",
            """
            -- The signals and context (JSON objects, as the strict JSON module writes them) a
            -- sign-in started without a username was decided on: once a step identifies the user,
            -- the rules decide again with them and the user's facts. NULL for a flow started with
            -- a username, or before this migration (such a flow fails when its user is
            -- identified: it cannot be decided again).
            ALTER TABLE signin_flows ADD COLUMN signals text, ADD COLUMN context text;
            """),
        Migration(
            195, "refresh_token_sibling",
            """
            -- A retired refresh token presented again within the grace gets one sibling at most
            -- (SessionStore.refresh): a third presentation revokes the session as any reuse.
            ALTER TABLE refresh_tokens ADD COLUMN sibling_issued boolean NOT NULL DEFAULT false;
            """),
        // record_assertion (192) that also holds the user's standing for a method, for the
        // direct sign-in route (outside a flow, where no guess was reserved before): with
        // p_method set, a method locked or on probation (AntiHammering, method_failures) refuses
        // before anything is written, and an ok clears the method's failures (not a lock), in
        // the same round trip as the rest. p_method NULL: exactly 192's statements. An
        // overload: a replica of the previous release still calls the 18-parameter form.
        Migration(
            196, "record_assertion_standing",
            """
            CREATE FUNCTION record_assertion(
                p_tenant text, p_credential bytea, p_public_key bytea, p_challenge bytea, p_expires timestamptz,
                p_sign_count bigint, p_backup_state boolean, p_now timestamptz,
                p_event_id text, p_topic text, p_message_key text, p_event_type text, p_source text, p_subject text,
                p_event_time timestamptz, p_event_data text, p_traceparent text, p_tracestate text,
                p_username text, p_method text,
                OUT outcome text, OUT stored_sign_count bigint, OUT probation_until timestamptz)
            LANGUAGE plpgsql AS $$
            DECLARE
                r record;
                f record;
                had_failures boolean := false;
            BEGIN
                IF p_method IS NOT NULL THEN
                    SELECT m.locked_at, m.probation_until INTO f FROM method_failures m
                        WHERE m.tenant_id = p_tenant AND m.username = p_username AND m.method = p_method;
                    IF FOUND THEN
                        IF f.locked_at IS NOT NULL THEN
                            outcome := 'method_locked';
                            RETURN;
                        ELSIF f.probation_until > p_now THEN
                            outcome := 'method_probation';
                            probation_until := f.probation_until;
                            RETURN;
                        END IF;
                        had_failures := true;
                    END IF;
                END IF;
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (p_challenge, p_expires) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    outcome := 'challenge_replayed';
                    RETURN;
                END IF;
                UPDATE credentials SET sign_count = p_sign_count, backup_state = p_backup_state, last_used_at = p_now
                    WHERE tenant_id = p_tenant AND credential_id = p_credential AND public_key_cose = p_public_key
                      AND status = 'active' AND NOT clone_suspected
                      AND (sign_count < p_sign_count OR (p_sign_count = 0 AND sign_count = 0));
                IF FOUND THEN
                    INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data, traceparent, tracestate)
                        VALUES (p_event_id, p_topic, p_message_key, p_event_type, p_source, p_subject, p_event_time, p_event_data,
                          p_traceparent, p_tracestate);
                    IF had_failures THEN
                        DELETE FROM method_failures
                            WHERE tenant_id = p_tenant AND username = p_username AND method = p_method AND locked_at IS NULL;
                    END IF;
                    outcome := 'ok';
                    stored_sign_count := p_sign_count;
                    RETURN;
                END IF;
                SELECT c.status, c.clone_suspected, c.sign_count, c.public_key_cose INTO r
                    FROM credentials c WHERE c.tenant_id = p_tenant AND c.credential_id = p_credential;
                IF NOT FOUND OR r.status = 'deleted' OR r.public_key_cose <> p_public_key THEN
                    outcome := 'credential_not_found';
                ELSIF r.status <> 'active' OR r.clone_suspected THEN
                    outcome := 'credential_suspended';
                    stored_sign_count := r.sign_count;
                ELSE
                    outcome := 'sign_count_not_increased';
                    stored_sign_count := r.sign_count;
                END IF;
            END;
            $$;
            """),
        Migration(
            221, "revoked_direct_sessions",
            """
            -- Sessions of the direct sign-in routes (no sessions row: their ids prove themselves,
            -- DirectSessionID) that the relying party revoked: a second revocation answers 404
            -- as for any session already revoked. Tenant and id only; purged a day after, past
            -- any access token's lifetime (TransientDataPurger).
            CREATE TABLE revoked_direct_sessions (
                tenant_id text NOT NULL,
                sid text NOT NULL,
                revoked_at timestamptz NOT NULL,
                PRIMARY KEY (tenant_id, sid)
            );
            CREATE INDEX revoked_direct_sessions_by_time ON revoked_direct_sessions (revoked_at);
            """),
        Migration(
            222, "signin_flow_facts_by_expiry",
            """
            -- The flows still holding the signals and context of an anonymous start (the client's
            -- IP among them): TransientDataPurger erases them once the flow has expired, an hour
            -- before the flow itself goes, and finds them by this index (a handful, not the table).
            CREATE INDEX signin_flows_facts_by_expiry ON signin_flows (expires_at) WHERE signals IS NOT NULL OR context IS NOT NULL;
            """),
    ]
}
