import Crypto
import JSON
import Schema

// The UAF protocol messages (FIDO UAF Protocol v1.2 §3), as JSON. Decoding goes through the
// strict parser (`Shared/JSON`): duplicate member names, lone surrogates and invalid UTF-8
// are refused before any field is read.

/// `Version` (§3.1.1): the UAF protocol version.
public struct UAFVersion: Codable, Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    public static let v1_0 = UAFVersion(major: 1, minor: 0)
    public static let v1_1 = UAFVersion(major: 1, minor: 1)
    public static let v1_2 = UAFVersion(major: 1, minor: 2)
    public var description: String { "\(major).\(minor)" }
}

/// `Extension` (§3.1.5) in JSON messages.
public struct UAFMessageExtension: Codable, Sendable, Hashable {
    public var id: String
    public var data: String
    public var fail_if_unknown: Bool
    public init(id: String, data: String, failIfUnknown: Bool) {
        self.id = id
        self.data = data
        fail_if_unknown = failIfUnknown
    }
}

/// `OperationHeader` (§3.1.4).
public struct UAFOperationHeader: Codable, Sendable, Hashable {
    public var upv: UAFVersion
    /// `Reg`, `Auth` or `Dereg`.
    public var op: String
    public var appID: String?
    public var serverData: String?
    public var exts: [UAFMessageExtension]?
    public init(upv: UAFVersion, op: String, appID: String?, serverData: String?, exts: [UAFMessageExtension]? = nil) {
        self.upv = upv
        self.op = op
        self.appID = appID
        self.serverData = serverData
        self.exts = exts
    }
}

/// `ChannelBinding` (§3.1.8).
public struct UAFChannelBinding: Codable, Sendable, Hashable {
    public var serverEndPoint: String?
    public var tlsServerCertificate: String?
    public var tlsUnique: String?
    public var cid_pubkey: String?
    public init() {}
}

/// `FinalChallengeParams` (§3.1.7): what the client hashes into FinalChallengeHash.
public struct UAFFinalChallengeParams: Codable, Sendable, Hashable {
    public var appID: String
    public var challenge: String
    public var facetID: String
    public var channelBinding: UAFChannelBinding
    public init(appID: String, challenge: String, facetID: String, channelBinding: UAFChannelBinding = UAFChannelBinding()) {
        self.appID = appID
        self.challenge = challenge
        self.facetID = facetID
        self.channelBinding = channelBinding
    }
}

/// `MatchCriteria` (§3.2.1).
public struct UAFMatchCriteria: Codable, Sendable, Hashable {
    public var aaid: [String]?
    public var vendorID: [String]?
    public var keyIDs: [String]?
    public var userVerification: UInt32?
    public var keyProtection: UInt16?
    public var matcherProtection: UInt16?
    public var attachmentHint: UInt32?
    public var tcDisplay: UInt16?
    public var authenticationAlgorithms: [UInt16]?
    public var assertionSchemes: [String]?
    public var attestationTypes: [UInt16]?
    public var authenticatorVersion: UInt16?
    public var exts: [UAFMessageExtension]?
    public init(
        aaid: [String]? = nil, vendorID: [String]? = nil, keyIDs: [String]? = nil, userVerification: UInt32? = nil,
        keyProtection: UInt16? = nil, matcherProtection: UInt16? = nil, attachmentHint: UInt32? = nil, tcDisplay: UInt16? = nil,
        authenticationAlgorithms: [UInt16]? = nil, assertionSchemes: [String]? = nil, attestationTypes: [UInt16]? = nil,
        authenticatorVersion: UInt16? = nil, exts: [UAFMessageExtension]? = nil
    ) {
        self.aaid = aaid
        self.vendorID = vendorID
        self.keyIDs = keyIDs
        self.userVerification = userVerification
        self.keyProtection = keyProtection
        self.matcherProtection = matcherProtection
        self.attachmentHint = attachmentHint
        self.tcDisplay = tcDisplay
        self.authenticationAlgorithms = authenticationAlgorithms
        self.assertionSchemes = assertionSchemes
        self.attestationTypes = attestationTypes
        self.authenticatorVersion = authenticatorVersion
        self.exts = exts
    }
}

/// `Policy` (§3.3.1): `accepted` is a list of alternatives, each a set of authenticators used
/// together; `disallowed` excludes.
public struct UAFPolicy: Codable, Sendable, Hashable {
    public var accepted: [[UAFMatchCriteria]]
    public var disallowed: [UAFMatchCriteria]?
    public init(accepted: [[UAFMatchCriteria]], disallowed: [UAFMatchCriteria]? = nil) {
        self.accepted = accepted
        self.disallowed = disallowed
    }
}

/// `RegistrationRequest` (§3.4.1).
public struct UAFRegistrationRequest: Codable, Sendable, Hashable {
    public var header: UAFOperationHeader
    public var challenge: String
    public var username: String
    public var policy: UAFPolicy
    public init(header: UAFOperationHeader, challenge: String, username: String, policy: UAFPolicy) {
        self.header = header
        self.challenge = challenge
        self.username = username
        self.policy = policy
    }
}

/// `AuthenticatorRegistrationAssertion` / `AuthenticatorSignAssertion` (§3.4.4, §3.5.6).
public struct UAFAssertionMessage: Codable, Sendable, Hashable {
    public var assertionScheme: String
    /// base64url of the UAFV1TLV assertion.
    public var assertion: String
    public var tcDisplayPNGCharacteristics: [UAFDisplayPNGCharacteristics]?
    public var exts: [UAFMessageExtension]?
    public init(assertionScheme: String = "UAFV1TLV", assertion: String) {
        self.assertionScheme = assertionScheme
        self.assertion = assertion
    }
}

/// `RegistrationResponse` (§3.4.3) and `AuthenticationResponse` (§3.5.5): the same shape.
public struct UAFResponse: Codable, Sendable, Hashable {
    public var header: UAFOperationHeader
    /// base64url of the FinalChallengeParams JSON, exactly as the client hashed it.
    public var fcParams: String
    public var assertions: [UAFAssertionMessage]
    public init(header: UAFOperationHeader, fcParams: String, assertions: [UAFAssertionMessage]) {
        self.header = header
        self.fcParams = fcParams
        self.assertions = assertions
    }
}

/// `Transaction` (§3.5.2).
public struct UAFTransaction: Codable, Sendable, Hashable {
    /// `text/plain` or `image/png`.
    public var contentType: String
    /// base64url of the content.
    public var content: String
    public var tcDisplayPNGCharacteristics: UAFDisplayPNGCharacteristics?
    public init(contentType: String, content: String, tcDisplayPNGCharacteristics: UAFDisplayPNGCharacteristics? = nil) {
        self.contentType = contentType
        self.content = content
        self.tcDisplayPNGCharacteristics = tcDisplayPNGCharacteristics
    }
}

/// `AuthenticationRequest` (§3.5.1).
public struct UAFAuthenticationRequest: Codable, Sendable, Hashable {
    public var header: UAFOperationHeader
    public var challenge: String
    public var transaction: [UAFTransaction]?
    public var policy: UAFPolicy
    public init(header: UAFOperationHeader, challenge: String, transaction: [UAFTransaction]?, policy: UAFPolicy) {
        self.header = header
        self.challenge = challenge
        self.transaction = transaction
        self.policy = policy
    }
}

/// `DeregisterAuthenticator` (§3.6.1): an empty keyID deregisters every key of the AAID.
public struct UAFDeregisterAuthenticator: Codable, Sendable, Hashable {
    public var aaid: String
    public var keyID: String
    public init(aaid: String, keyID: String) {
        self.aaid = aaid
        self.keyID = keyID
    }
}

/// `DeregistrationRequest` (§3.6.2).
public struct UAFDeregistrationRequest: Codable, Sendable, Hashable {
    public var header: UAFOperationHeader
    public var authenticators: [UAFDeregisterAuthenticator]
    public init(header: UAFOperationHeader, authenticators: [UAFDeregisterAuthenticator]) {
        self.header = header
        self.authenticators = authenticators
    }
}

/// `TrustedFacets` / `TrustedFacetList` (FIDO AppID and Facet Specification §3.1.2).
public struct UAFTrustedFacetList: Codable, Sendable, Hashable {
    public struct TrustedFacets: Codable, Sendable, Hashable {
        public var version: UAFVersion
        public var ids: [String]
        public init(version: UAFVersion, ids: [String]) {
            self.version = version
            self.ids = ids
        }
    }
    public var trustedFacets: [TrustedFacets]
    public init(trustedFacets: [TrustedFacets]) { self.trustedFacets = trustedFacets }
}

// MARK: - Decoding what clients send

/// Decoding the messages a UAF client sends, bounded and strict.
public enum UAFMessageDecoding {
    /// A `uafResponse` larger than this is refused (an assertion is at most 64 KiB of TLV;
    /// responses carry one or a few).
    public static let maximumResponseBytes = 48 * 1024
    /// More assertions than this in one response are refused.
    public static let maximumAssertions = 8

    /// Decodes the `uafResponse` text: a JSON array holding exactly one response message
    /// (the client answers in the one protocol version it chose).
    ///
    /// - Throws: ``UAFError/Code/malformedMessage``.
    public static func response(_ text: String) throws(UAFError) -> UAFResponse {
        let rule = "Protocol §3.4.3 / §3.5.5"
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumResponseBytes else {
            throw UAFError(.malformedMessage, rule: rule, "uafResponse is larger than \(maximumResponseBytes) bytes")
        }
        let messages: [UAFResponse]
        do { messages = try JSONValueDecoder().decode([UAFResponse].self, from: bytes, maximumDepth: 8) } catch {
            throw UAFError(.malformedMessage, rule: rule, "uafResponse is not an array of UAF response messages")
        }
        guard messages.count == 1, let message = messages.first else {
            throw UAFError(.malformedMessage, rule: rule, "uafResponse must hold exactly one message, found \(messages.count)")
        }
        guard (1...maximumAssertions).contains(message.assertions.count) else {
            throw UAFError(.malformedMessage, rule: rule, "a response carries 1–\(maximumAssertions) assertions")
        }
        return message
    }

    /// Decodes `fcParams`: base64url (trailing `=` padding tolerated, as some clients send it;
    /// the hash covers the text as sent either way) of FinalChallengeParams JSON.
    ///
    /// On the path of every UAF verification: the text is decoded in place (no copy of it),
    /// and the JSON of the usual shape is read in one pass by ``UAFFinalChallengeParamsReader``,
    /// which answers only for what the general path below accepts with the same value; any
    /// other JSON goes through ``finalChallengeParams(json:)``. `signet-bench uaf-breakdown`
    /// measured 7.7 µs through `JSONValueDecoder` and Foundation's `contains`, about 1.2 µs (3.7
    /// under load 10) through the strict parser's value, and the figure in the commit that
    /// added the reader for this path.
    ///
    /// - Throws: ``UAFError/Code/malformedFinalChallengeParams``.
    public static func finalChallengeParams(_ fcParams: String) throws(UAFError) -> UAFFinalChallengeParams {
        var fcParams = fcParams
        let decoded = fcParams.withUTF8 { text -> [UInt8]? in
            var end = text.count
            for _ in 0..<2 where end > 0 && text[end - 1] == UInt8(ascii: "=") { end -= 1 }
            // Base64URL refuses `=` (and every byte outside its alphabet) anywhere else.
            let unpadded = UnsafeBufferPointer(rebasing: text[..<end])
            return Base64URL.decode(unpadded) ?? Base64.decodeStandard(Array(unpadded))
        }
        guard let bytes = decoded, !bytes.isEmpty, bytes.count <= 8 * 1024 else {
            throw UAFError(.malformedFinalChallengeParams, rule: "Protocol §3.1.7", "fcParams is not base64url")
        }
        if let params = UAFFinalChallengeParamsReader.read(bytes) { return params }
        return try finalChallengeParams(json: bytes)
    }

    /// FinalChallengeParams from their JSON through the strict parser (``JSON/JSONParser``:
    /// duplicate names, lone surrogates, invalid UTF-8, trailing content and nesting past 4
    /// refused), with the rules `Decodable` would apply: `appID`, `challenge`, `facetID`
    /// strings and a `channelBinding` object required; its members optional strings, `null` as
    /// absent; other members ignored.
    ///
    /// - Throws: ``UAFError/Code/malformedFinalChallengeParams``.
    public static func finalChallengeParams(json bytes: [UInt8]) throws(UAFError) -> UAFFinalChallengeParams {
        let malformed = UAFError(.malformedFinalChallengeParams, rule: "Protocol §3.1.7", "fcParams is not FinalChallengeParams JSON")
        guard case .object(let members)? = try? JSONParser.parse(bytes, maximumDepth: 4),
            case .string(let appID)? = members["appID"], case .string(let challenge)? = members["challenge"],
            case .string(let facetID)? = members["facetID"], case .object(let binding)? = members["channelBinding"]
        else { throw malformed }
        /// An optional string member: absent or null is nil, anything but a string refuses.
        func optional(_ name: String) throws(UAFError) -> String? {
            switch binding[name] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw malformed
            }
        }
        var channelBinding = UAFChannelBinding()
        channelBinding.serverEndPoint = try optional("serverEndPoint")
        channelBinding.tlsServerCertificate = try optional("tlsServerCertificate")
        channelBinding.tlsUnique = try optional("tlsUnique")
        channelBinding.cid_pubkey = try optional("cid_pubkey")
        return UAFFinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID, channelBinding: channelBinding)
    }

    /// ``finalChallengeParams(json:)`` through ``UAFFinalChallengeParamsReader`` when it
    /// answers: for tests and fuzzing, which check that the two agree.
    public static func plainFinalChallengeParams(json bytes: [UInt8]) -> UAFFinalChallengeParams? {
        UAFFinalChallengeParamsReader.read(bytes)
    }
}

/// Standard-alphabet base64 without padding, for fcParams of clients that use it.
enum Base64 {
    static func decodeStandard(_ s: [UInt8]) -> [UInt8]? {
        guard !s.contains(UInt8(ascii: "-")), !s.contains(UInt8(ascii: "_")) else { return nil }
        return Base64URL.decode(s.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 })
    }
}
