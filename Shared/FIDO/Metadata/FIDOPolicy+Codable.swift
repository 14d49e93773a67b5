import FoundationEssentials
import Tokens
import JSON

// MARK: - The stored document
//
// {
//   "allowedAAGUIDs": ["cb69481e-8ff7-4039-93ec-0a2729a154a8"],   // omitted or null: any model
//   "disallowedAAGUIDs": [],
//   "attestation": {"conveyance": "direct", "required": true, "acceptNone": false, "acceptSelf": false},
//   "minimumCertificationLevel": "FIDO_CERTIFIED_L1",             // omitted or null: none
//   "userVerification": "required", "residentKey": "preferred",
//   "allowedAlgorithms": [-7, -8, -257],
//   "appId": "https://login.example.com/u2f/appid.json",          // omitted or null: no U2F AppID
//   "autoCreatePasskey": false                                      // conditional create allowed
// }
//
// Every member is optional and defaults to ``FIDOPolicy/consumerDefault``'s value (inside
// `attestation`, `acceptNone`/`acceptSelf` default to `!required` and `conveyance` to `direct`
// when required). Unknown members are refused, not ignored: a misspelt rule would otherwise
// silently not apply.

extension FIDOPolicy: Codable {
    private enum Member: String, CaseIterable {
        case allowedAAGUIDs, disallowedAAGUIDs, attestation, minimumCertificationLevel, userVerification, residentKey,
            allowedAlgorithms, appId, autoCreatePasskey
    }

    private enum AttestationMember: String, CaseIterable {
        case conveyance, required, acceptNone, acceptSelf
    }

    /// Any member name or array index, so unknown names can be reported with their path.
    struct AnyKey: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(stringValue: String) {
            self.stringValue = stringValue
            self.intValue = nil
        }
        init(intValue: Int) {
            self.stringValue = String(intValue)
            self.intValue = intValue
        }
        init(_ name: String) { self.init(stringValue: name) }
    }

    /// Decodes a policy strictly (unknown members, bad AAGUIDs, unknown levels and values are
    /// errors) and validates it (``validate()``).
    ///
    /// - Throws: `DecodingError` whose `codingPath` locates the member at fault.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        try Self.refuseUnknown(container, known: Member.allCases.map(\.rawValue))
        let defaults = FIDOPolicy.consumerDefault

        let allowed = try Self.decodeArray(container, .allowedAAGUIDs) { (text: String) in AAGUID(text) }
        let disallowed = try Self.decodeArray(container, .disallowedAAGUIDs) { (text: String) in AAGUID(text) }
        // Checked here, in document order, so the index in the path is the document's.
        if let allowed, let disallowed, let i = disallowed.firstIndex(where: allowed.contains) {
            let path = container.codingPath + [AnyKey(Member.disallowedAAGUIDs.rawValue), AnyKey(intValue: i)]
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: Self.ownReason("an AAGUID is both allowed and disallowed")))
        }
        allowedAAGUIDs = allowed.map(Set.init)
        disallowedAAGUIDs = disallowed.map(Set.init) ?? defaults.disallowedAAGUIDs

        let attestationKey = AnyKey(Member.attestation.rawValue)
        if container.contains(attestationKey), try !container.decodeNil(forKey: attestationKey) {
            let nested = try container.nestedContainer(keyedBy: AnyKey.self, forKey: attestationKey)
            try Self.refuseUnknown(nested, known: AttestationMember.allCases.map(\.rawValue))
            let required = try nested.decodeIfPresent(Bool.self, forKey: AnyKey("required")) ?? false
            attestation = AttestationRule(
                conveyance: try nested.decodeIfPresent(AttestationConveyance.self, forKey: AnyKey("conveyance"))
                    ?? (required ? .direct : .none),
                required: required,
                acceptNone: try nested.decodeIfPresent(Bool.self, forKey: AnyKey("acceptNone")) ?? !required,
                acceptSelf: try nested.decodeIfPresent(Bool.self, forKey: AnyKey("acceptSelf")) ?? !required)
        } else {
            attestation = defaults.attestation
        }

        minimumCertificationLevel = try container.decodeIfPresent(
            CertificationLevel.self, forKey: AnyKey(Member.minimumCertificationLevel.rawValue))
        userVerification =
            try container.decodeIfPresent(Requirement.self, forKey: AnyKey(Member.userVerification.rawValue))
            ?? defaults.userVerification
        residentKey =
            try container.decodeIfPresent(Requirement.self, forKey: AnyKey(Member.residentKey.rawValue)) ?? defaults.residentKey
        allowedAlgorithms =
            try Self.decodeArray(container, .allowedAlgorithms) { (n: Int) in COSEAlgorithm(n) } ?? defaults.allowedAlgorithms
        appId = try container.decodeIfPresent(String.self, forKey: AnyKey(Member.appId.rawValue))
        autoCreatePasskey = try container.decodeIfPresent(Bool.self, forKey: AnyKey(Member.autoCreatePasskey.rawValue)) ?? defaults.autoCreatePasskey

        if let violation = firstViolation() {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath + violation.path.map { Int($0).map(AnyKey.init(intValue:)) ?? AnyKey($0) },
                    debugDescription: Self.ownReason(violation.reason)))
        }
    }

    /// Encodes every member (AAGUIDs sorted, so equal policies encode identically).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        func sorted(_ set: Set<AAGUID>) -> [String] { set.map(\.description).sorted() }
        if let allowedAAGUIDs { try container.encode(sorted(allowedAAGUIDs), forKey: AnyKey(Member.allowedAAGUIDs.rawValue)) }
        try container.encode(sorted(disallowedAAGUIDs), forKey: AnyKey(Member.disallowedAAGUIDs.rawValue))
        var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(Member.attestation.rawValue))
        try nested.encode(attestation.conveyance, forKey: AnyKey("conveyance"))
        try nested.encode(attestation.required, forKey: AnyKey("required"))
        try nested.encode(attestation.acceptNone, forKey: AnyKey("acceptNone"))
        try nested.encode(attestation.acceptSelf, forKey: AnyKey("acceptSelf"))
        try container.encodeIfPresent(minimumCertificationLevel, forKey: AnyKey(Member.minimumCertificationLevel.rawValue))
        try container.encode(userVerification, forKey: AnyKey(Member.userVerification.rawValue))
        try container.encode(residentKey, forKey: AnyKey(Member.residentKey.rawValue))
        try container.encode(allowedAlgorithms.map(\.rawValue), forKey: AnyKey(Member.allowedAlgorithms.rawValue))
        try container.encodeIfPresent(appId, forKey: AnyKey(Member.appId.rawValue))
        try container.encode(autoCreatePasskey, forKey: AnyKey(Member.autoCreatePasskey.rawValue))
    }

    private static let ownReasonPrefix = "signet: "

    /// Marks a reason written here (fixed text), as opposed to Foundation's.
    private static func ownReason(_ reason: String) -> String { ownReasonPrefix + reason }

    /// The array at `member`, each element decoded as `Element` and converted by `convert`
    /// (nil: not acceptable). Errors carry the element's own path (Foundation's number
    /// conversion errors do not) and never the value.
    private static func decodeArray<Element: Decodable, Output>(
        _ container: KeyedDecodingContainer<AnyKey>, _ member: Member, _ convert: (Element) -> Output?
    ) throws -> [Output]? {
        let key = AnyKey(member.rawValue)
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
        var elements = try container.nestedUnkeyedContainer(forKey: key)
        var out: [Output] = []
        while !elements.isAtEnd {
            let path = container.codingPath + [key, AnyKey(intValue: elements.currentIndex)]
            let element: Element
            do {
                element = try elements.decode(Element.self)
            } catch {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: ownReason("wrong type")))
            }
            guard let converted = convert(element) else {
                let reason = Element.self == String.self ? "not an AAGUID" : "invalid value"
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: ownReason(reason)))
            }
            out.append(converted)
        }
        return out
    }

    private static func refuseUnknown(_ container: KeyedDecodingContainer<AnyKey>, known: [String]) throws {
        for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath + [key], debugDescription: ownReason("unknown member")))
        }
    }

    // MARK: - Documents

    /// Parses and validates a policy document (JSON).
    ///
    /// - Throws: ``FIDOPolicyError`` — ``FIDOPolicyError/Code/malformed`` when the bytes are
    ///   not one JSON object without duplicate member names, ``FIDOPolicyError/Code/invalid``
    ///   with the JSON Pointer of the first member at fault otherwise.
    public init(document bytes: [UInt8]) throws(FIDOPolicyError) {
        // The strict parser first: Foundation's decoder would silently keep one of two
        // duplicate members, and which one decides the policy.
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(bytes, maximumDepth: 8, allowingByteOrderMark: true)
        } catch {
            throw FIDOPolicyError(.malformed, path: "", "\(error.reason) at byte \(error.offset)")
        }
        guard case .object = parsed else { throw FIDOPolicyError(.malformed, path: "", "a policy is a JSON object") }
        do {
            self = try JSONValueDecoder().decode(FIDOPolicy.self, from: parsed)
        } catch let error as DecodingError {
            throw Self.policyError(error)
        } catch {
            throw FIDOPolicyError(.malformed, path: "", "not a policy document")
        }
    }

    /// The first error in a policy document, or nil when it is valid.
    public static func validate(document bytes: [UInt8]) -> FIDOPolicyError? {
        do {
            _ = try FIDOPolicy(document: bytes)
            return nil
        } catch {
            return error
        }
    }

    /// The policy as a JSON document (sorted keys), for storage.
    public func document() -> [UInt8] {
        // Sorted keys (the strict writer's form). Encoding strings, booleans and integers
        // cannot fail.
        (try? JSONValueEncoder().encodeToBytes(self)) ?? []
    }

    private static func policyError(_ error: DecodingError) -> FIDOPolicyError {
        let (path, reason): ([any CodingKey], String) =
            switch error {
            case .typeMismatch(_, let context): (context.codingPath, "wrong type")
            case .valueNotFound(_, let context): (context.codingPath, "null where a value is needed")
            case .keyNotFound(let key, let context): (context.codingPath + [key], "required member is missing")
            case .dataCorrupted(let context):
                // Foundation's own messages quote the offending value; only ours pass through.
                (
                    context.codingPath,
                    context.debugDescription.hasPrefix(ownReasonPrefix)
                        ? String(context.debugDescription.dropFirst(ownReasonPrefix.count)) : "invalid value"
                )
            @unknown default: ([], "not a policy document")
            }
        return FIDOPolicyError(.invalid, path: FIDOPolicyError.pointer(path.map(\.stringValue)), reason)
    }
}
