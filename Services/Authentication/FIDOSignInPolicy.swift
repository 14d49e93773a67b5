import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// What sign-in applies of a tenant's FIDO policy (kept by registration; this service's copy
/// comes from `FIDOPolicyChanged`): the user verification asked for and required, and the
/// algorithms, models and certification level whose credentials may sign in.
struct FIDOSignInPolicy: Sendable, Equatable {
    /// `required`, `preferred` or `discouraged`.
    var userVerification: String
    /// COSE algorithms accepted; `nil` for any (a tenant that never set a policy).
    var allowedAlgorithms: Set<Int>?
    /// Models accepted (lower-case AAGUIDs); `nil` for any.
    var allowedAAGUIDs: Set<String>?
    /// Models refused.
    var disallowedAAGUIDs: Set<String>
    /// The tenant's legacy U2F AppID: options offer the `appid` extension.
    var appId: String? = nil
    /// With a minimum certification level: the models (lower-case AAGUIDs) the FIDO metadata
    /// certifies at that level or above; nil when the policy sets no minimum.
    var certifiedAAGUIDs: Set<String>? = nil

    /// The request options' extensions: `appid` when the tenant has one.
    var extensions: AuthenticationExtensionsJSON? { appId.map { AuthenticationExtensionsJSON(appid: $0) } }

    /// A tenant without a policy: user verification preferred, any credential registered.
    static let unrestricted = FIDOSignInPolicy(userVerification: "preferred", allowedAlgorithms: nil, allowedAAGUIDs: nil, disallowedAAGUIDs: [])

    init(userVerification: String, allowedAlgorithms: Set<Int>?, allowedAAGUIDs: Set<String>?, disallowedAAGUIDs: Set<String>) {
        self.userVerification = userVerification
        self.allowedAlgorithms = allowedAlgorithms
        self.allowedAAGUIDs = allowedAAGUIDs
        self.disallowedAAGUIDs = disallowedAAGUIDs
    }

    init(_ event: FIDOPolicyChanged) {
        self.init(
            userVerification: event.userVerification, allowedAlgorithms: Set(event.allowedAlgorithms), allowedAAGUIDs: event.allowedAaguids.map(Set.init),
            disallowedAAGUIDs: Set(event.disallowedAaguids))
        appId = event.appId
        if event.minimumCertificationLevel != nil { certifiedAAGUIDs = Set(event.certifiedAaguids ?? []) }
    }

    /// What a ceremony asks for: the policy's, or `required` when the step or the client asks
    /// for it (a step never asks for less than the policy).
    func userVerification(requested: String?) -> String {
        if userVerification == "required" || requested == "required" { return "required" }
        return requested.flatMap { FIDOPolicyChanged.userVerificationValues.contains($0) ? $0 : nil } ?? userVerification
    }

    /// Refuses a credential whose algorithm or model the policy no longer accepts, or whose
    /// model the metadata does not certify at the policy's minimum level (as registration:
    /// an unknown model meets no minimum).
    ///
    /// - Throws: 400 `policy_algorithm_not_allowed`, `policy_aaguid_not_allowed` or
    ///   `policy_certification_level` (the codes registration refuses such a credential with).
    func check(algorithm: COSEAlgorithm, aaguid: String?) throws {
        if let allowed = allowedAlgorithms, !allowed.contains(algorithm.rawValue) {
            throw HTTPError(.policyAlgorithmNotAllowed, detail: "The tenant's FIDO policy does not accept this credential's algorithm.")
        }
        let model = aaguid?.lowercased() ?? AAGUID.zero.description
        if disallowedAAGUIDs.contains(model) || allowedAAGUIDs.map({ !$0.contains(model) }) == true {
            throw HTTPError(.policyAAGUIDNotAllowed, detail: "The tenant's FIDO policy does not accept this authenticator model.")
        }
        if let certified = certifiedAAGUIDs, !certified.contains(model) {
            throw HTTPError(
                .policyCertificationLevel, detail: "The tenant's FIDO policy asks for a FIDO certification level this authenticator model does not have.")
        }
    }
}

/// The tenants' sign-in FIDO policies (`fido_policies`, AuthenticationMigrations 120), read by
/// every FIDO2 ceremony. Cached per process for ``maximumAge``: the replica that consumes a
/// change drops its entry at once, the others within seconds.
final class FIDOSignInPolicyStore: Sendable {
    static let maximumAge: Duration = .seconds(10)

    private struct Entry: Sendable {
        let policy: FIDOSignInPolicy
        let loadedAt: ContinuousClock.Instant
    }

    let pool: PostgresPool
    /// Read by every ceremony: a `PlainLock` around the dictionary, never held across the
    /// load (see `PolicyStore` for the figure against an actor hop).
    private let cache = PlainLock<[String: Entry]>([:])

    init(pool: PostgresPool) { self.pool = pool }

    /// The tenant's policy (``FIDOSignInPolicy/unrestricted`` when registration never sent one).
    func policy(for tenant: String) async throws -> FIDOSignInPolicy {
        if let e = cache.withLock({ $0[tenant] }), ContinuousClock.now - e.loadedAt < Self.maximumAge { return e.policy }
        let row = try await pool.withConnection { conn in
            try await conn.query("SELECT document FROM fido_policies WHERE tenant_id = \(tenant)")
        }.first
        var policy = FIDOSignInPolicy.unrestricted
        if let document = row?.string("document") {
            // Written by the read model from a validated event: one that does not read back is
            // an error (a 500), never taken for "unrestricted".
            let event = try JSONValueDecoder().decode(FIDOPolicyChanged.self, from: Array(document.utf8))
            policy = FIDOSignInPolicy(event)
        }
        cache.withLock { c in
            if c.count >= 10_000 { c.removeAll(keepingCapacity: true) }
            c[tenant] = Entry(policy: policy, loadedAt: .now)
        }
        return policy
    }

    /// Drops the tenant's entry (this replica consumed a change).
    func invalidate(_ tenant: String) {
        _ = cache.withLock { $0.removeValue(forKey: tenant) }
    }

    /// Keeps `fido_policies` from `FIDOPolicyChanged` (the latest change wins).
    var handlers: EventHandlers {
        var h = EventHandlers()
        h.on(FIDOPolicyChanged.self) { [self] e, _, conn in
            let document = String(decoding: try JSONValueEncoder().encodeToBytes(e), as: UTF8.self)
            try await conn.query(
                """
                INSERT INTO fido_policies (tenant_id, document, changed_at) VALUES (\(e.tenantId), \(document), \(e.changedAt))
                ON CONFLICT (tenant_id) DO UPDATE SET document = EXCLUDED.document, changed_at = EXCLUDED.changed_at
                WHERE fido_policies.changed_at <= EXCLUDED.changed_at
                """)
            invalidate(e.tenantId)
        }
        return h
    }
}
