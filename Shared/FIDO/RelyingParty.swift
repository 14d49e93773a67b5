import Crypto

/// Who the relying party is, for the checks both ceremonies make on client data and
/// authenticator data: its RP ID(s), the origins it serves, and whether it may run inside
/// cross-origin iframes.
///
/// Origins are compared exactly as clients serialise them (`scheme://host[:port]`, or e.g.
/// `android:apk-key-hash:…` for apps): no case folding, no default-port removal. A trailing
/// `/` in configured origins is dropped, so `https://example.com/` means `https://example.com`.
public struct RelyingParty: Sendable {
    /// Acceptable RP IDs. Usually one; more for migrations between domains.
    public let ids: [String]
    /// Acceptable values of `clientData.origin` (the RP's own origins and related origins).
    public let origins: [String]
    /// Whether ceremonies in cross-origin iframes (`crossOrigin: true`) are accepted.
    public let allowsCrossOrigin: Bool
    /// Acceptable values of `clientData.topOrigin` when ``allowsCrossOrigin`` is true. Empty
    /// means no embedding page is trusted: a `topOrigin` is then refused.
    public let topOrigins: [String]
    /// SHA-256 of each of ``ids``, computed once.
    let rpIDHashes: [[UInt8]]

    /// - Parameters:
    ///   - ids: Acceptable RP IDs (at least one).
    ///   - origins: Acceptable origins (at least one).
    ///   - allowsCrossOrigin: Accept `crossOrigin: true`. Default false.
    ///   - topOrigins: Acceptable `topOrigin` values, used only when cross-origin is allowed.
    public init(ids: [String], origins: [String], allowsCrossOrigin: Bool = false, topOrigins: [String] = []) {
        self.ids = ids
        self.origins = origins.map(Self.normalise)
        self.allowsCrossOrigin = allowsCrossOrigin
        self.topOrigins = topOrigins.map(Self.normalise)
        self.rpIDHashes = ids.map { SHA256.hash(Array($0.utf8)) }
    }

    /// A relying party with one RP ID.
    public init(id: String, origins: [String], allowsCrossOrigin: Bool = false, topOrigins: [String] = []) {
        self.init(ids: [id], origins: origins, allowsCrossOrigin: allowsCrossOrigin, topOrigins: topOrigins)
    }

    /// The RP ID whose hash is `rpIDHash`, if any.
    public func rpID(matching rpIDHash: [UInt8]) -> String? {
        for (id, hash) in zip(ids, rpIDHashes) where hash == rpIDHash { return id }
        return nil
    }

    static func normalise(_ origin: String) -> String {
        // Drop the "/" of an empty path: "https://example.com/" → "https://example.com".
        guard origin.hasSuffix("/"), let schemeEnd = origin.firstRange(of: "://") else { return origin }
        let rest = origin[schemeEnd.upperBound...].dropLast()
        guard !rest.isEmpty, !rest.contains("/") else { return origin }
        return String(origin.dropLast())
    }
}

// MARK: - Client data checks shared by both ceremonies

extension RelyingParty {
    /// Step numbers of the client-data checks in one ceremony.
    struct ClientDataSteps {
        let type: String
        let challenge: String
        let origin: String
        let topOrigin: String
        let tokenBinding: String

        /// WebAuthn L3 §7.1 steps 7–10.
        static let registration = ClientDataSteps(
            type: "§7.1 step 7", challenge: "§7.1 step 8", origin: "§7.1 step 9", topOrigin: "§7.1 step 10",
            tokenBinding: "§7.1 step 10 (L2 tokenBinding)")
        /// WebAuthn L3 §7.2 steps 10–13.
        static let authentication = ClientDataSteps(
            type: "§7.2 step 10", challenge: "§7.2 step 11", origin: "§7.2 step 12", topOrigin: "§7.2 step 13",
            tokenBinding: "§7.2 step 13 (L2 tokenBinding)")
    }

    /// Type, challenge, origin, cross-origin/top-origin and Token Binding checks, in that order.
    func verify(
        _ clientData: CollectedClientData, types: [String], challenge: [UInt8], steps: ClientDataSteps
    ) throws(WebAuthnError) {
        guard types.contains(where: { $0.utf8.elementsEqual(clientData.type.utf8) }) else {
            throw WebAuthnError(.clientDataTypeMismatch, step: steps.type, "type is not one of the expected types")
        }
        // The client base64url-encodes the challenge without padding; compare encodings exactly.
        let expected = Base64URL.encodeASCII(challenge)
        guard !challenge.isEmpty, ConstantTime.equals(expected, Array(clientData.challenge.utf8)) else {
            throw WebAuthnError(.challengeMismatch, step: steps.challenge, "challenge is not the one issued")
        }
        guard origins.contains(where: { $0.utf8.elementsEqual(clientData.origin.utf8) }) else {
            throw WebAuthnError(.originNotAllowed, step: steps.origin, "origin is not an origin of this relying party")
        }
        // crossOrigin: true means an iframe not same-origin with its ancestors; topOrigin names
        // the top-level page. Either needs the relying party to expect being embedded (§13.4.9).
        if clientData.crossOrigin == true || clientData.topOrigin != nil {
            guard allowsCrossOrigin else {
                throw WebAuthnError(.crossOriginNotAllowed, step: steps.topOrigin, "cross-origin ceremonies are not allowed")
            }
        }
        if let top = clientData.topOrigin {
            guard topOrigins.contains(where: { $0.utf8.elementsEqual(top.utf8) }) else {
                throw WebAuthnError(.topOriginNotAllowed, step: steps.topOrigin, "topOrigin is not an allowed embedding origin")
            }
        }
        // WebAuthn L2: tokenBinding.status must match the connection's Token Binding state.
        // Signet never negotiates Token Binding, so only "supported" (client capable, not used)
        // can match; "present" and any value outside the L2 enumeration cannot.
        if let binding = clientData.tokenBinding, binding.status != "supported" {
            throw WebAuthnError(.tokenBindingInvalid, step: steps.tokenBinding, "tokenBinding status does not match this connection")
        }
    }
}
