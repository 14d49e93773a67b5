-- pgbench script: the database work of one WebAuthn sign-in ceremony as the authentication
-- service does it (WebAuthnAuthenticationRoutes): the options request reads the user's
-- credentials; the finish request makes one call to record_assertion (AuthenticationMigrations
-- 102), which records the challenge's single use, moves the counter forward and enqueues the
-- AuthenticationSucceeded event in the outbox, in one transaction.
\set c :client_id + 1
\set n random(1, 2000000000)
SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials
  WHERE tenant_id = 'demo' AND username = 'bench-' || :c AND status = 'active' ORDER BY registered_at;
SELECT outcome, stored_sign_count FROM record_assertion('demo', int4send(:c), '\x00'::bytea,
  sha256(int8send(:n) || int4send(:client_id) || int8send(:n)), now() + interval '5 minutes',
  (extract(epoch from clock_timestamp()) * 1000000)::bigint, true, now(),
  gen_random_uuid()::text, 'signet.authentication', 'demo', 'signet.authentication.succeeded.v1', '/signet/authentication', 'demo', now(),
  '{"authenticatedAt":"2026-11-29T12:00:00Z","backupState":true,"credentialId":"AAAAAQ","method":"fido2","sessionId":"s","signCount":1,"tenantId":"demo","userVerified":true}');
