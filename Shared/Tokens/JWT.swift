import JSON
import FoundationEssentials

/// A verified JWT: its header and claims, available only from ``JWTVerifier/verify(_:now:)``
/// (or after signing), so that holding a `JWT` means its signature and claims were checked.
public struct JWT: Sendable {
    /// The protected header.
    public let header: JWSHeader
    /// The claims.
    public let claims: JWTClaims
    /// The payload JSON as signed (already checked: one object, no duplicate members).
    public let payload: [UInt8]

    init(header: JWSHeader, claims: JWTClaims, payload: [UInt8]) {
        self.header = header
        self.claims = claims
        self.payload = payload
    }

    /// Decodes the payload into a service's own claim type (a tcToken's transaction fields,
    /// a device JWT's claims).
    ///
    /// Read by the strict parser (a duplicate member is an error, not a silent choice):
    /// NumericDate claims (`exp`, `iat`, `nbf`) decode as numbers (`Int64`), not `Date`.
    ///
    /// - Throws: `DecodingError` (or the parser's syntax error).
    public func decodePayload<Claims: Decodable>(as type: Claims.Type = Claims.self) throws -> Claims {
        try JSONValueDecoder().decode(Claims.self, from: payload)
    }
}
