import Crypto
import Delivery
import FoundationEssentials
import HTTPServer
import OTP
import Postgres
import Schema
import ServiceKit
import Tokens
import JSON

/// Keys of the code-based methods.
struct CodeMethodKeys: Sendable {
    /// Opens TOTP secrets sealed by the registration service.
    let methodSecrets: SealingKeys
    /// Seals one-time codes to the oob-notification service.
    let delivery: SealingKeys
    /// Keys the hashes of one-time codes kept in flows.
    let codeHashKey: [UInt8]
    /// Earlier code-hash keys (`SIGNET_OTP_HASH_KEY_ACCEPTED`): codes hashed under them still match.
    var acceptedCodeHashKeys: [[UInt8]] = []

    /// The associated data a TOTP secret is sealed with (by the registration service, as its
    /// `MethodEnrollment.secretBinding`): the tenant and the method id.
    static func secretBinding(tenant: String, method: String) -> [UInt8] { Array("\(tenant)/\(method)".utf8) }
}

/// `email_otp` and `sms_otp`: a 6-digit code from a CSPRNG, delivered by the oob-notification
/// service (the code sealed to it, the destination a vault reference), valid for the tenant's
/// `otpLifetimeSeconds`, kept in the flow only as a keyed hash, single use, compared in
/// constant time. A mistyped code counts against anti-hammering but leaves the code pending:
/// the right one still works within its lifetime and ``maximumAttempts`` guesses (then a new
/// code is needed). For a transaction, the message states its amount and payee.
struct OneTimeCodeMethod: AuthenticationMethod {
    /// Guesses one code allows, the right one included (NIST SP 800-63B §5.1.3.1 leaves the
    /// limit to the verifier; anti-hammering bounds the guesses across codes).
    static let maximumAttempts = 5

    let name: String
    let channel: String
    let keys: CodeMethodKeys
    let pool: PostgresPool

    func capacity(for user: UserFacts) -> Int { user.methods.filter { $0.type == name }.count }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        // A sequence that names the method twice needs two of the user's (two phones): one that
        // completed an earlier step of this sign-in is not challenged again.
        guard let method = user.methods.first(where: { $0.type == name && !flow.usedCredentials.contains(Self.stepID($0.id)) }), let piiRef = method.piiRef
        else {
            throw HTTPError(.methodUnavailable, detail: "This user has no such method left for this sign-in.")
        }
        let now = Date()
        // Told to the client (429) rather than dropped by the oob service.
        try await CodeSendBudget(pool: pool).spend(tenant: flow.tenant, methodID: method.id, client: SignInRoutes.clientIP(request), now: now)
        let lifetime = Double(user.settings.otpLifetimeSeconds)
        let code = try OneTimeCode.generate(digits: 6)
        let hash = try OneTimeCode.storageHash(of: code, key: keys.codeHashKey, context: Array("\(flow.id)/\(method.id)".utf8))
        var parameters: [String: String] = [:]
        var template = "otp"
        if let id = flow.transactionId {
            let tx = try await PendingTransaction.load(id, tenant: flow.tenant, pool: pool, now: now)
            template = "transaction_otp"
            parameters = ["amount": tx.details.amount, "currency": tx.details.currency, "payee": tx.details.payee]
        }
        let request = try DeliveryRequested.sealing(
            code: code, with: keys.delivery, tenant: flow.tenant, channel: channel, piiRef: piiRef, template: template, lifetime: lifetime,
            parameters: parameters, now: now)
        let envelope = try EventEnvelope(request, source: ServiceName.authentication.eventSource, subject: flow.tenant)
        let pending = Pending(expiry: UInt64(now.addingTimeInterval(lifetime).timeIntervalSince1970), hash: hash, wrongGuesses: 0, methodID: method.id)
        struct Sent: Encodable {
            let delivery: [String: String]
            let expiresAt: Date
        }
        let body = try JSONValueEncoder().encodeToBytes(Sent(delivery: ["channel": channel, "destination": method.masked ?? ""], expiresAt: now.addingTimeInterval(lifetime)))
        return MethodChallenge(response: Array(body), pending: pending.bytes, outbox: [envelope])
    }

    func verify(flow: SignInFlow, pending bytes: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard let pending = Pending(bytes), let username = flow.username else { throw HTTPError(.invalidHandle, detail: "No code is pending; ask for one.") }
        let body = try request.decode(CodeRequest.self)
        guard Double(pending.expiry) > Date().timeIntervalSince1970 else { throw HTTPError(.codeExpired, detail: "The code expired; ask for another.") }
        let context = Array("\(flow.id)/\(pending.methodID)".utf8)
        guard OneTimeCode.matches(
            body.code, digits: 6, storedHash: pending.hash, keys: [keys.codeHashKey] + keys.acceptedCodeHashKeys, context: context) else {
            let left = Self.maximumAttempts - Int(pending.wrongGuesses) - 1
            throw HTTPError(
                .codeMismatch, detail: left > 0 ? "The code is not right; \(left) more tries with this code." : "The code is not right; ask for another.")
        }
        return MethodOutcome(username: username, userHandle: nil, credentialID: Self.stepID(pending.methodID))
    }

    /// What a completed step of a user's method records in the flow's used credentials (`m:`
    /// and the method id; never a base64url credential id, which has no colon).
    static func stepID(_ methodID: String) -> String { "m:" + methodID }

    /// The code stays pending after a wrong guess, with one guess fewer, until the last.
    func pendingAfterMismatch(_ bytes: [UInt8]) -> [UInt8]? { Self.pendingAfterMismatch(bytes) }

    /// ``pendingAfterMismatch(_:)``: `bytes` with one more wrong guess, or `nil` after the last.
    static func pendingAfterMismatch(_ bytes: [UInt8]) -> [UInt8]? {
        guard var pending = Pending(bytes), Int(pending.wrongGuesses) + 1 < Self.maximumAttempts else { return nil }
        pending.wrongGuesses += 1
        return pending.bytes
    }

    /// The flow's pending state of a sent code: `6`, expiry (8 bytes, Unix seconds, big
    /// endian), keyed hash (32), wrong guesses so far (1), method id. Flows started before
    /// guesses were counted hold `2`, expiry, hash, method id (no guess yet).
    struct Pending: Equatable {
        var expiry: UInt64
        var hash: [UInt8]
        var wrongGuesses: UInt8
        var methodID: String

        init(expiry: UInt64, hash: [UInt8], wrongGuesses: UInt8, methodID: String) {
            self.expiry = expiry
            self.hash = hash
            self.wrongGuesses = wrongGuesses
            self.methodID = methodID
        }

        init?(_ bytes: [UInt8]) {
            guard let tag = bytes.first, tag == 6 && bytes.count > 42 || tag == 2 && bytes.count > 41 else { return nil }
            expiry = bytes[1...8].reduce(0) { $0 << 8 | UInt64($1) }
            hash = Array(bytes[9..<41])
            wrongGuesses = tag == 6 ? bytes[41] : 0
            methodID = String(decoding: bytes[(tag == 6 ? 42 : 41)...], as: UTF8.self)
        }

        var bytes: [UInt8] {
            var out: [UInt8] = [6]
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: expiry >> UInt64(shift))) }
            return out + hash + [wrongGuesses] + Array(methodID.utf8)
        }
    }
}

/// `totp` (RFC 6238): SHA-1, 6 digits, 30 s, ±1 step of drift; each step works once per
/// method (the last step used is kept, and earlier ones are refused).
struct TOTPMethod: AuthenticationMethod {
    let name = "totp"
    let keys: CodeMethodKeys
    let pool: PostgresPool
    /// The methods' read model is keyed by subject reference.
    let subjectKey: SubjectKey

    func capacity(for user: UserFacts) -> Int { user.methods.filter { $0.type == name }.count }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        guard let method = user.methods.first(where: { $0.type == name && !flow.usedCredentials.contains(OneTimeCodeMethod.stepID($0.id)) }) else {
            throw HTTPError(.methodUnavailable, detail: "This user has no authenticator app left for this sign-in.")
        }
        return MethodChallenge(response: Array(#"{"prompt":"totp","digits":6}"#.utf8), pending: [3] + Array(method.id.utf8))
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard pending.count > 1, pending[0] == 3, let username = flow.username else { throw HTTPError(.invalidHandle, detail: "Ask for the challenge first.") }
        let body = try request.decode(CodeRequest.self)
        let methodID = String(decoding: pending[1...], as: UTF8.self)
        guard let row = try await pool.withConnection({ conn in
            try await conn.query(
                """
                SELECT sealed_secret, last_totp_step FROM user_methods
                WHERE tenant_id = \(flow.tenant) AND method_id = \(methodID) AND subject_ref = \(subjectKey.ref(tenant: flow.tenant, username: username))
                    AND status = 'ACTIVE'
                """)
        }).first, let sealed = row.bytes("sealed_secret"),
            let secret = try? keys.methodSecrets.open(sealed, associatedData: CodeMethodKeys.secretBinding(tenant: flow.tenant, method: methodID))
        else { throw HTTPError(.methodGone, detail: "This authenticator app is no longer registered.") }
        let last = row.int64("last_totp_step").map { UInt64($0) }
        let step: UInt64
        do {
            step = try TOTP(secret: try OTPSecret(bytes: secret)).verify(body.code, at: Date(), window: 1, after: last)
        } catch let error as OTPError where error.code == .replayedCode {
            throw HTTPError(.codeReplayed, detail: "This code was already used.")
        } catch {
            throw HTTPError(.codeMismatch, detail: "The code is not right.")
        }
        // The step is recorded only if no concurrent verification recorded it (or a later one).
        let updated = try await pool.withConnection { conn in
            try await conn.query(
                """
                UPDATE user_methods SET last_totp_step = \(Int64(step))
                WHERE tenant_id = \(flow.tenant) AND method_id = \(methodID) AND (last_totp_step IS NULL OR last_totp_step < \(Int64(step)))
                """)
        }
        guard updated.affectedRows == 1 else { throw HTTPError(.codeReplayed, detail: "This code was already used.") }
        return MethodOutcome(username: username, userHandle: nil, credentialID: OneTimeCodeMethod.stepID(methodID))
    }
}

/// `external_jwt`: a JWT issued by the RP's server for the user (`sub` = username), checked
/// against the tenant's configured JWKS, issuer and audience. The algorithm is the key's (a
/// key's `alg`/type decides), never the token's.
///
/// Each token completes one step, once: its SHA-256 is spent in `used_challenges` until it
/// expires (with the leeway), so a token that leaked (front channel, a log, a proxy) does not
/// sign its user in again and again for the hour it may live.
struct ExternalJWTMethod: AuthenticationMethod {
    let name = "external_jwt"
    let policies: PolicyStore
    let pool: PostgresPool
    let cache = JWKSCache()

    func capacity(for user: UserFacts) -> Int { user.settings.externalJWT != nil && user.username != nil ? 1 : 0 }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        MethodChallenge(response: Array(#"{"expects":"jwt"}"#.utf8), pending: [4])
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        struct Body: Decodable { let jwt: String }
        guard pending == [4], let username = flow.username else { throw HTTPError(.invalidHandle, detail: "Ask for the challenge first.") }
        let body = try request.decode(Body.self)
        guard let settings = try await policies.policy(for: flow.tenant).settings.externalJWT else { throw HTTPError(.methodGone, detail: "The tenant has no external JWT method.") }
        let keys = try await keySet(settings.jwksURL)
        let options = JWTValidationOptions(
            issuer: settings.issuer, audience: settings.audience, allowedAlgorithms: [.es256, .es384, .es512, .rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .edDSA], maximumLifetime: 3600,
            requiredClaims: ["sub", "iat"])
        let expiresAt: Date
        do {
            let jwt = try JWTVerifier(keySet: keys, options: options).verify(body.jwt, now: Date())
            guard let subject = jwt.claims.subject, UsernameRules.identical(subject, username) else { throw HTTPError(.jwtSubjectMismatch, detail: "The token is for another user.") }
            expiresAt = (jwt.claims.expiresAt ?? Date()).addingTimeInterval(options.leeway)
        } catch let error as JOSEError {
            throw HTTPError(.externalJWTRefused(error), detail: "The token was refused (\(error.code.rawValue)).")
        }
        // Single use, across every sign-in of the tenant's users.
        let spent = try await pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at)
                VALUES (\(PostgresBytes(SHA256.hash(Array("external-jwt/".utf8) + SHA256.hash(Array(body.jwt.utf8))))), \(expiresAt))
                ON CONFLICT DO NOTHING
                """
            ).affectedRows == 1
        }
        guard spent else { throw HTTPError(.codeReplayed, detail: "This token was already used.") }
        return MethodOutcome(username: username, userHandle: nil, credentialID: nil)
    }

    private func keySet(_ url: String) async throws -> JWKSet {
        if let keys = await cache.fresh(url) { return keys }
        guard URL(string: url) != nil, let answer = try? await HTTPClient.shared.send("GET", url, timeout: .seconds(5), responseLimit: 64 * 1024, followRedirects: true),
            answer.status == 200, !answer.truncated, let keys = try? JWKSet(json: answer.body)
        else { throw HTTPError(.unavailable, detail: "The relying party's keys cannot be fetched.") }
        await cache.store(keys, for: url)
        return keys
    }
}

/// Fetched JWK Sets by URL, for five minutes: a refreshed cache, an actor (one hop per
/// `external_jwt` verification, beside an HTTP fetch on a miss).
actor JWKSCache {
    static let lifetime: Duration = .seconds(300)
    private var entries: [String: (keys: JWKSet, fetchedAt: ContinuousClock.Instant)] = [:]

    /// The key set fetched from `url` less than ``lifetime`` ago.
    func fresh(_ url: String, now: ContinuousClock.Instant = .now) -> JWKSet? {
        guard let entry = entries[url], now - entry.fetchedAt < Self.lifetime else { return nil }
        return entry.keys
    }

    func store(_ keys: JWKSet, for url: String, now: ContinuousClock.Instant = .now) {
        if entries.count > 1000 { entries.removeAll() }
        entries[url] = (keys, now)
    }
}

/// `external_password`: the password goes to the tenant's RP URL with the username; a 2xx
/// answer is success. The password is never stored or logged; the bytes this service holds are
/// overwritten after the call (the decoded request body and the request sent).
struct ExternalPasswordMethod: AuthenticationMethod {
    let name = "external_password"
    let policies: PolicyStore

    func capacity(for user: UserFacts) -> Int { user.settings.externalPassword != nil && user.username != nil ? 1 : 0 }

    func challenge(flow: SignInFlow, user: UserFacts, tenant: TenantResource, request: HTTPRequest) async throws -> MethodChallenge {
        MethodChallenge(response: Array(#"{"expects":"password"}"#.utf8), pending: [5])
    }

    func verify(flow: SignInFlow, pending: [UInt8], tenant: TenantResource, request: HTTPRequest) async throws -> MethodOutcome {
        guard pending == [5], let username = flow.username else { throw HTTPError(.invalidHandle, detail: "Ask for the challenge first.") }
        guard let settings = try await policies.policy(for: flow.tenant).settings.externalPassword, let url = URL(string: settings.verifyURL) else {
            throw HTTPError(.methodGone, detail: "The tenant has no external password method.")
        }
        guard var password = PasswordBody.password(in: request.body) else { throw HTTPError.invalid("password", "Give the password.") }
        var outgoing = Array(#"{"username":"#.utf8) + JSONEscaping.quoted(Array(username.utf8)) + Array(#","password":"#.utf8)
            + JSONEscaping.quoted(password) + [UInt8(ascii: "}")]
        defer {
            for i in password.indices { password[i] = 0 }
            for i in outgoing.indices { outgoing[i] = 0 }
        }
        var headers = ["Content-Type: application/json"]
        if let token = settings.bearerToken { headers.append("Authorization: Bearer \(token)") }
        // Redirects are not followed: a 3xx is no verdict on the password (URLSession, used
        // before, followed them as a GET without the body and took the final status).
        guard let status = try? await HTTPClient.shared.send("POST", url.absoluteString, headers: headers, body: outgoing, timeout: .seconds(5), responseLimit: 0).status else {
            throw HTTPError(.unavailable, detail: "The relying party's password check is unavailable.")
        }
        switch status {
        case 200..<300: return MethodOutcome(username: username, userHandle: nil, credentialID: nil)
        case 400..<500: throw HTTPError(.passwordInvalid, detail: "The password was refused.")
        default: throw HTTPError(.unavailable, detail: "The relying party's password check is unavailable.")
        }
    }
}

/// The password of an `external_password` verify body, `{"password": "…"}`, as bytes (so that
/// they can be overwritten), without going through a `String`.
enum PasswordBody {
    static func password(in body: [UInt8]) -> [UInt8]? {
        // The strict parser, as for every other body: two "password" members are refused.
        guard body.count <= 4096, let object = (try? JSONParser.parse(body, maximumDepth: 1))?.objectValue,
            object.count == 1, let text = object["password"]?.stringValue, (1...1024).contains(text.utf8.count)
        else { return nil }
        return Array(text.utf8)
    }
}

/// Minimal JSON string quoting of UTF-8 bytes.
enum JSONEscaping {
    static func quoted(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x22]
        let hex = Array("0123456789abcdef".utf8)
        for b in bytes {
            switch b {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0..<0x20: out += [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            default: out.append(b)
            }
        }
        out.append(0x22)
        return out
    }
}
