-- pgbench script: the same transaction the PUT tenant route runs (lock-or-create the tenant,
-- insert it, insert its event into the outbox). The id is random over 63 bits: a repeated one
-- would abort the client on the primary key (2e9 values collided now and then).
\set n random(1, 9223372036854775806)
BEGIN;
SELECT id FROM tenants WHERE id = 'pg-' || :client_id || '-' || :n FOR UPDATE;
INSERT INTO tenants (id, display_name, rp_id, origins, revision, updated_at)
  VALUES ('pg-' || :client_id || '-' || :n, 'Bench', 'example.com', ARRAY['https://example.com'], 1, now());
INSERT INTO outbox (event_id, topic, message_key, event_type, source, subject, event_time, data)
  VALUES (md5(random()::text || clock_timestamp()::text), 'signet.registration', 'pg-' || :client_id || '-' || :n,
          'signet.registration.tenant.upserted.v1', '/signet/registration', 'pg', now(),
          '{"displayName":"Bench","origins":["https://example.com"],"revision":1,"rpId":"example.com","tenantId":"pg","updatedAt":"2026-01-01T00:00:00Z"}');
END;
