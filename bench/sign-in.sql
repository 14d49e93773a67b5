-- pgbench script: the durable work of one WebAuthn sign-in (WebAuthnAuthenticationRoutes.finish):
-- read the credential and whether the challenge was used, then, in one transaction, record
-- the challenge and update the counter.
\set c :client_id + 1
\set n random(1, 2000000000)
SELECT username, user_handle, public_key_cose, sign_count, backup_eligible, backup_state, status, clone_suspected,
       EXISTS (SELECT 1 FROM used_challenges WHERE challenge_hash = sha256(int8send(:n) || int4send(:client_id))) AS challenge_used
  FROM credentials WHERE tenant_id = 'demo' AND credential_id = int4send(:c);
BEGIN;
INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (sha256(int8send(:n) || int4send(:client_id) || int8send(:n)), now() + interval '5 minutes')
  ON CONFLICT DO NOTHING;
UPDATE credentials SET sign_count = sign_count + 1, backup_state = true, last_used_at = now()
  WHERE tenant_id = 'demo' AND credential_id = int4send(:c);
END;
