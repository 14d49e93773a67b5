import FoundationEssentials

/// What a JWT must satisfy beyond its signature. Issuer and audience have no defaults:
/// every verifier states whose tokens it accepts and for whom they must be meant.
public struct JWTValidationOptions: Sendable {
    /// The one `iss` accepted (exact, case-sensitive match).
    public var issuer: String
    /// The audience this verifier is; `aud` must contain it.
    public var audience: String
    /// Algorithms accepted; a key's algorithm outside this set makes it unusable.
    public var allowedAlgorithms: Set<JWSAlgorithm>
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds (default 30).
    public var leeway: TimeInterval
    /// If set, `exp` minus `iat` (or `nbf` when there is no `iat`) must not exceed it, and
    /// `exp` plus one of them are required.
    public var maximumLifetime: TimeInterval?
    /// Whether `exp` is required (default true: a token without expiry is valid forever).
    public var requireExpiration: Bool
    /// Other claims that must be present (`sub`, `jti`, `amr`…).
    public var requiredClaims: Set<String>
    /// If set, the header's `typ` must be this media type (RFC 8725 §3.11 explicit typing),
    /// compared case-insensitively with an optional `application/` prefix (RFC 7515 §4.1.9).
    public var expectedType: String?
    /// Extensions this verifier processes, allowed in `crit`.
    public var understoodCriticalParameters: Set<String>
    /// Token size limits.
    public var limits: JWS.Limits

    /// Default leeway: 30 seconds.
    public static let defaultLeeway: TimeInterval = 30

    /// Options with the two required answers, whose issuer and for whom, and defaults for
    /// the rest: ES256 only, 30 s leeway, `exp` required, no lifetime cap, no `typ` check.
    public init(
        issuer: String, audience: String, allowedAlgorithms: Set<JWSAlgorithm> = [.es256],
        leeway: TimeInterval = JWTValidationOptions.defaultLeeway, maximumLifetime: TimeInterval? = nil,
        requireExpiration: Bool = true, requiredClaims: Set<String> = [], expectedType: String? = nil,
        understoodCriticalParameters: Set<String> = [], limits: JWS.Limits = .default
    ) {
        self.issuer = issuer
        self.audience = audience
        self.allowedAlgorithms = allowedAlgorithms
        self.leeway = leeway
        self.maximumLifetime = maximumLifetime
        self.requireExpiration = requireExpiration
        self.requiredClaims = requiredClaims
        self.expectedType = expectedType
        self.understoodCriticalParameters = understoodCriticalParameters
        self.limits = limits
    }

    /// Checks the header's `typ` against ``expectedType``.
    ///
    /// - Throws: `type_mismatch`.
    public func validate(_ header: JWSHeader) throws(JOSEError) {
        guard let expectedType else { return }
        func normalized(_ s: String) -> String {
            let lower = s.lowercased()
            return lower.hasPrefix("application/") ? String(lower.dropFirst("application/".count)) : lower
        }
        guard let type = header.type, normalized(type) == normalized(expectedType) else {
            throw JOSEError(.typeMismatch, "JWT typ is not the expected type")
        }
    }

    /// Checks the claims at time `now`.
    ///
    /// Order: presence, then issuer and audience, then time. Every comparison with `now`
    /// allows ``leeway``; `exp` is exclusive (RFC 7519 §4.1.4: valid strictly before it).
    ///
    /// - Throws: `missing_claim`, `issuer_mismatch`, `audience_mismatch`, `expired`,
    ///   `not_yet_valid`, `lifetime_too_long`.
    public func validate(_ claims: JWTClaims, now: Date) throws(JOSEError) {
        if requireExpiration, claims.expiresAt == nil { throw JOSEError(.missingClaim, "exp is required") }
        if maximumLifetime != nil {
            guard claims.expiresAt != nil else { throw JOSEError(.missingClaim, "exp is required with a maximum lifetime") }
            guard claims.issuedAt != nil || claims.notBefore != nil else {
                throw JOSEError(.missingClaim, "iat is required with a maximum lifetime")
            }
        }
        if !requiredClaims.isEmpty {
            let present = claims.jsonObject
            for name in requiredClaims.sorted() where present[name] == nil {
                throw JOSEError(.missingClaim, "\(name) is required")
            }
        }

        guard let issuer = claims.issuer else { throw JOSEError(.missingClaim, "iss is required") }
        guard issuer == self.issuer else { throw JOSEError(.issuerMismatch, "iss is not the expected issuer") }
        guard let audience = claims.audience else { throw JOSEError(.missingClaim, "aud is required") }
        guard audience.contains(self.audience) else {
            throw JOSEError(.audienceMismatch, "aud does not contain the expected audience")
        }

        if let expiresAt = claims.expiresAt, now >= expiresAt.addingTimeInterval(leeway) {
            throw JOSEError(.expired, "exp has passed")
        }
        if let notBefore = claims.notBefore, now.addingTimeInterval(leeway) < notBefore {
            throw JOSEError(.notYetValid, "nbf is in the future")
        }
        if let issuedAt = claims.issuedAt, now.addingTimeInterval(leeway) < issuedAt {
            throw JOSEError(.notYetValid, "iat is in the future")
        }
        if let maximumLifetime, let expiresAt = claims.expiresAt, let start = claims.issuedAt ?? claims.notBefore,
            expiresAt.timeIntervalSince(start) > maximumLifetime
        {
            throw JOSEError(.lifetimeTooLong, "exp is further than the maximum lifetime from iat")
        }
    }
}
