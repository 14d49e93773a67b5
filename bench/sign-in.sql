-- pgbench script: the database work of one WebAuthn sign-in ceremony as the authentication
-- service does it (WebAuthnAuthenticationRoutes): the options request reads the user's
-- credentials; the finish request makes one call to record_assertion (AuthenticationMigrations
-- 102, 130, 192, 196), which reads the user's fido2 standing (method_failures; migration 196,
-- the direct route's form), records the challenge's single use, moves the counter forward and
-- enqueues the AuthenticationSucceeded event in the outbox with its trace context (migration
-- 130), in one transaction. The service runs them as
-- prepared statements, so the anchor is `pgbench -M prepared` (the colons in the event's JSON are
-- escaped, \x3a, because pgbench reads `:name` as a variable).
\set c :client_id + 1
\set n random(1, 9223372036854775806)
SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials
  WHERE tenant_id = 'demo' AND subject_ref = 'bench-' || :c AND status = 'active' ORDER BY registered_at;
SELECT outcome, stored_sign_count, probation_until FROM record_assertion('demo', int4send(:c), '\x00'::bytea,
  sha256(int8send(:n) || int4send(:client_id) || int8send(:n)), now() + interval '5 minutes',
  CAST(extract(epoch from clock_timestamp()) * 1000000 AS bigint), true, now(),
  CAST(gen_random_uuid() AS text), 'signet.authentication', 'demo', 'signet.authentication.succeeded.v1', '/signet/authentication', 'demo', now(),
  E'{"authenticatedAt"\x3a"2026-11-29T12\x3a00\x3a00Z","backupState"\x3atrue,"credentialId"\x3a"AAAAAQ","method"\x3a"fido2","sessionId"\x3a"s","signCount"\x3a1,"tenantId"\x3a"demo","userVerified"\x3atrue}',
  '00-' || md5(CAST(:n AS text)) || '-' || substr(md5(CAST(:c AS text)), 1, 16) || '-01', NULL, 'bench-' || :c, 'fido2');
