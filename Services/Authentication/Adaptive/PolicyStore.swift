import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Rules
import Schema
import ServiceKit
import Tokens
import JSON

/// A tenant's authentication policy: its two rulesets (authentication, registration decisions)
/// and its sign-in settings, stored in the database, versioned, and kept compiled in memory.
///
/// Changes go through ``putRuleset(_:kind:tenant:)`` and ``putSettings(_:tenant:)``, which store
/// the new version and an `AuthenticationPolicyChanged` event in one transaction. Every replica
/// drops its compiled copy when the event reaches it (``BroadcastListener``); an entry is also
/// reloaded after ``maximumAge`` in case an event was missed.
final class PolicyStore: Sendable {
    static let maximumAge: Duration = .seconds(60)

    /// A tenant's compiled policy.
    struct Compiled: Sendable {
        let authentication: CompiledRuleset
        let registration: CompiledRuleset
        let settings: AuthenticationSettings
        let authenticationVersion: Int
        let registrationVersion: Int
        let loadedAt: ContinuousClock.Instant
    }

    let pool: PostgresPool
    /// A refreshed cache, but read one to three times by every sign-in request: a `PlainLock`
    /// around the dictionary (held for a lookup, never across the load), not an actor, whose
    /// hop costs 5–9 µs of CPU against 0.3–0.5 µs here (`signet-bench locks`; see
    /// `RateLimiter`). Two requests that miss together both load; the later store wins, and
    /// both are the stored version.
    private let cache = PlainLock<[String: Compiled]>([:])

    init(pool: PostgresPool) { self.pool = pool }

    /// The tenant's compiled policy (defaults when nothing is stored).
    func policy(for tenant: String) async throws -> Compiled {
        if let c = cache.withLock({ $0[tenant] }), ContinuousClock.now - c.loadedAt < Self.maximumAge { return c }
        let rows = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT 'ruleset' AS what, kind, version, document FROM rulesets WHERE tenant_id = \(tenant)
                UNION ALL SELECT 'settings', 'settings', 0, document FROM authentication_settings WHERE tenant_id = \(tenant)
                """)
        }
        var settings = AuthenticationSettings()
        var documents: [Ruleset.Kind: (Int, String)] = [:]
        for row in rows {
            guard let document = row.string("document") else { continue }
            if row.string("what") == "settings" {
                settings = try JSONValueDecoder().decode(AuthenticationSettings.self, from: Array(document.utf8))
            } else if let kind = row.string("kind").flatMap(Ruleset.Kind.init(rawValue:)), let version = row.int("version") {
                documents[kind] = (version, document)
            }
        }
        let locations = Self.geoPoints(settings.locations)
        func compile(_ kind: Ruleset.Kind) throws -> (CompiledRuleset, Int) {
            guard let (version, document) = documents[kind] else { return (CompiledRuleset(defaultFor: kind), 0) }
            let json = try JSONParser.parse(Array(document.utf8), maximumDepth: HTTPRequest.maximumJSONDepth)
            return (try Ruleset(json: json).compile(for: kind, locations: locations), version)
        }
        let (authentication, av) = try compile(.authentication)
        let (registration, rv) = try compile(.registration)
        let compiled = Compiled(
            authentication: authentication, registration: registration, settings: settings, authenticationVersion: av,
            registrationVersion: rv, loadedAt: .now)
        cache.withLock { c in
            if c.count >= 10_000 { c.removeAll(keepingCapacity: true) }
            c[tenant] = compiled
        }
        return compiled
    }

    /// Drops the tenant's compiled policy (its event arrived, or this replica changed it).
    func invalidate(_ tenant: String) {
        _ = cache.withLock { $0.removeValue(forKey: tenant) }
    }

    static func geoPoints(_ locations: [String: [GeoLocation]]) -> [String: [GeoPoint]] {
        locations.mapValues { $0.compactMap { GeoPoint(latitude: $0.lat, longitude: $0.lon) } }
    }

    // MARK: - Changes

    /// Validates and stores a ruleset (`{"rules": [...]}`) as the next version: well formed,
    /// compilable for its kind, and naming only methods of `catalog` (with a signing step in
    /// every sequence of a rule about transactions).
    ///
    /// - Throws: 400 `invalid_ruleset` naming the JSON path and the rule broken.
    func putRuleset(
        _ json: JSONValue, kind: Ruleset.Kind, catalog: Ruleset.MethodCatalog, tenant: String, context: ServiceContext
    ) async throws -> RulesetResource {
        let current = try await policy(for: tenant)
        let ruleset: Ruleset
        do {
            ruleset = try Ruleset(json: json)
            _ = try ruleset.compile(for: kind, locations: Self.geoPoints(current.settings.locations))
            try ruleset.checkMethods(catalog, for: kind)
        } catch {
            throw HTTPError(
                .invalidRuleset,
                detail: "\(error.path): \(error.message) (\(error.code.rawValue))", field: error.path)
        }
        let document = ruleset.json.jsonString
        let now = Date()
        let version = try await context.withTransaction { conn -> Int in
            let row = try await conn.query(
                """
                INSERT INTO rulesets (tenant_id, kind, version, document, updated_at) VALUES (\(tenant), \(kind.rawValue), 1, \(document), \(now))
                ON CONFLICT (tenant_id, kind) DO UPDATE SET version = rulesets.version + 1, document = EXCLUDED.document,
                    updated_at = EXCLUDED.updated_at
                RETURNING version
                """
            ).first
            guard let version = row?.int("version") else { throw HTTPError(.internalError) }
            try await conn.query(
                """
                INSERT INTO ruleset_history (tenant_id, kind, version, document, created_at)
                VALUES (\(tenant), \(kind.rawValue), \(version), \(document), \(now))
                """)
            try await Outbox.enqueue(
                AuthenticationPolicyChanged(tenantId: tenant, part: kind.rawValue, version: version, changedAt: now), source: .authentication,
                subject: tenant, key: tenant, on: conn)
            return version
        }
        invalidate(tenant)
        return RulesetResource(kind: kind.rawValue, version: version, rules: ruleset.rules.map(\.json), updatedAt: now)
    }

    /// The stored ruleset, or the default (version 0, no rules).
    func getRuleset(kind: Ruleset.Kind, tenant: String) async throws -> RulesetResource {
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT version, document, updated_at FROM rulesets WHERE tenant_id = \(tenant) AND kind = \(kind.rawValue)")
        }.first
        guard let row, let document = row.string("document"), let version = row.int("version") else {
            return RulesetResource(kind: kind.rawValue, version: 0, rules: [], updatedAt: nil)
        }
        let json = try JSONParser.parse(Array(document.utf8), maximumDepth: HTTPRequest.maximumJSONDepth)
        guard case .object(let members) = json, case .array(let rules)? = members["rules"] else { throw HTTPError(.internalError) }
        return RulesetResource(kind: kind.rawValue, version: version, rules: rules, updatedAt: row.date("updated_at"))
    }

    /// Validates and stores the tenant's settings.
    func putSettings(_ proposed: AuthenticationSettings, tenant: String, context: ServiceContext) async throws {
        if let v = proposed.violation() { throw HTTPError.invalid(v.field, v.message) }
        // Rulesets naming location lists must still compile with the new lists.
        let current = try await policy(for: tenant)
        let settings = try Self.restoringRedactedToken(proposed, stored: current.settings)
        let locations = Self.geoPoints(settings.locations)
        for compiled in [current.authentication, current.registration] where !compiled.ruleset.rules.isEmpty {
            do {
                _ = try compiled.ruleset.compile(for: compiled.kind, locations: locations)
            } catch {
                throw HTTPError.invalid("locations", "The \(compiled.kind.rawValue) ruleset needs them: \(error.path): \(error.message).")
            }
        }
        let document = String(decoding: try JSONValueEncoder().encodeToBytes(settings), as: UTF8.self)
        let now = Date()
        try await context.withTransaction { conn in
            try await conn.query(
                """
                INSERT INTO authentication_settings (tenant_id, document, updated_at) VALUES (\(tenant), \(document), \(now))
                ON CONFLICT (tenant_id) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
                """)
            try await Outbox.enqueue(
                AuthenticationPolicyChanged(tenantId: tenant, part: "settings", version: 0, changedAt: now), source: .authentication, subject: tenant,
                key: tenant, on: conn)
        }
        invalidate(tenant)
    }

    /// A document read by GET and sent back carries the password check's bearer token as its
    /// redaction (``AuthenticationSettings/redactedSecret``). Stored as such, it would replace
    /// the real token and every password check would fail. It stands for the stored token, for
    /// the same verify URL only: a token is never sent to a URL it was not given for, so a new
    /// URL needs the token itself (400 `invalid_field`).
    static func restoringRedactedToken(
        _ proposed: AuthenticationSettings, stored: AuthenticationSettings
    ) throws(HTTPError) -> AuthenticationSettings {
        guard let sent = proposed.externalPassword, sent.bearerToken == AuthenticationSettings.redactedSecret else { return proposed }
        guard let kept = stored.externalPassword, kept.verifyURL == sent.verifyURL, let token = kept.bearerToken else {
            throw HTTPError.invalid(
                "externalPassword.bearerToken",
                "\"\(AuthenticationSettings.redactedSecret)\" keeps the stored token for the same verifyURL only; send the token itself.")
        }
        var settings = proposed
        settings.externalPassword?.bearerToken = token
        return settings
    }
}

// MARK: - Direct sign-in

extension PolicyStore.Compiled {
    /// Whether the direct sign-in routes issue sessions (``AuthenticationSettings/directSignIn``):
    /// as set, or when not set, only while the tenant has no authentication ruleset of its own
    /// (version 0: none stored). Once one is, a session needs what its rules ask for.
    var allowsDirectSignIn: Bool { settings.directSignIn ?? (authenticationVersion == 0) }
}

extension PolicyStore {
    /// Refuses a direct sign-in route of a tenant that closed it, from the compiled policy this
    /// replica keeps (no query while it is fresh).
    ///
    /// - Returns: the tenant's compiled policy.
    /// - Throws: 403 `direct_sign_in_disabled`.
    @discardableResult
    func requireDirectSignIn(tenant: String) async throws -> Compiled {
        let compiled = try await policy(for: tenant)
        guard compiled.allowsDirectSignIn else {
            throw HTTPError(
                .directSignInDisabled,
                detail: "This tenant signs users in through its authentication rules: start a sign-in (POST …/signins) instead.")
        }
        return compiled
    }
}
