import JSON
/// The protected header of a JWS (RFC 7515 §4).
///
/// Key-carrying parameters (`jwk`, `jku`, `x5u`, `x5c`) are kept in
/// ``additionalParameters`` but never used to choose a key: the caller chooses it.
public struct JWSHeader: Sendable, Hashable {
    /// `alg`. Always a supported algorithm: `none`, HS* and unknown names are refused when
    /// parsing. Verification still requires it to equal the key's algorithm.
    public var algorithm: JWSAlgorithm
    /// `kid`.
    public var keyID: String?
    /// `typ` ("JWT", "tc+jwt"…).
    public var type: String?
    /// `cty`.
    public var contentType: String?
    /// `crit`: extensions the verifier must understand (RFC 7515 §4.1.11).
    public var critical: [String]?
    /// Every other member.
    public var additionalParameters: [String: JSONValue]

    /// Header parameters defined by RFC 7515 and RFC 7518 for JWS; `crit` must not list them.
    static let registeredNames: Set<String> = [
        "alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit",
    ]

    /// A header to sign with.
    public init(
        algorithm: JWSAlgorithm, keyID: String? = nil, type: String? = nil, contentType: String? = nil,
        critical: [String]? = nil, additionalParameters: [String: JSONValue] = [:]
    ) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.type = type
        self.contentType = contentType
        self.critical = critical
        self.additionalParameters = additionalParameters
    }

    /// Parses a decoded protected header.
    ///
    /// - Parameter understood: extension parameters this caller processes and so may appear
    ///   in `crit`.
    /// - Throws: `malformed` (not a JSON object, duplicate members, missing `alg`, a
    ///   registered parameter of the wrong type, an invalid `crit`), `unsupported_algorithm`
    ///   (`none`, HS*, unknown), `unsupported_critical_header` (`crit` lists an extension not
    ///   in `understood`).
    init(json: [UInt8], understoodCriticalParameters understood: Set<String>) throws(JOSEError) {
        var members = try JSONParser.parseObject(json, what: "JWS header")

        guard let alg = members.removeValue(forKey: "alg") else { throw JOSEError(.malformed, "JWS header without alg") }
        guard case .string(let algName) = alg else { throw JOSEError(.malformed, "JWS header alg is not a string") }
        algorithm = try JWSAlgorithm(joseName: algName)

        func string(_ name: String) throws(JOSEError) -> String? {
            guard let value = members.removeValue(forKey: name) else { return nil }
            guard case .string(let s) = value else { throw JOSEError(.malformed, "JWS header \(name) is not a string") }
            return s
        }
        keyID = try string("kid")
        type = try string("typ")
        contentType = try string("cty")

        if let crit = members.removeValue(forKey: "crit") {
            // RFC 7515 §4.1.11: a non-empty array of names, none registered, each present.
            guard let names = crit.stringArrayValue, !names.isEmpty, Set(names).count == names.count else {
                throw JOSEError(.malformed, "JWS header crit must be a non-empty array of distinct strings")
            }
            for name in names {
                guard !JWSHeader.registeredNames.contains(name) else {
                    throw JOSEError(.malformed, "JWS header crit lists a registered parameter")
                }
                guard members[name] != nil else { throw JOSEError(.malformed, "JWS header crit lists an absent parameter") }
            }
            for name in names where !understood.contains(name) {
                throw JOSEError(.unsupportedCriticalHeader, "JWS header crit lists an extension that is not understood")
            }
            critical = names
        } else {
            critical = nil
        }
        additionalParameters = members
    }

    /// The header's JSON: `alg`, `typ`, `kid`, `cty`, `crit` in that order, then the other
    /// parameters sorted by name (registered names there are ignored).
    var serialized: [UInt8] {
        var ordered: [(String, JSONValue)] = [("alg", .string(algorithm.rawValue))]
        if let type { ordered.append(("typ", .string(type))) }
        if let keyID { ordered.append(("kid", .string(keyID))) }
        if let contentType { ordered.append(("cty", .string(contentType))) }
        if let critical { ordered.append(("crit", .array(critical.map(JSONValue.string)))) }
        for (name, value) in additionalParameters.sorted(by: { $0.key < $1.key })
        where !["alg", "typ", "kid", "cty", "crit"].contains(name) {
            ordered.append((name, value))
        }
        var writer = JSONWriter()
        writer.writeObject(ordered)
        return writer.bytes
    }
}
