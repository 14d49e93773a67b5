import Crypto

/// What both UAF verifiers check before any assertion: the operation header and the
/// FinalChallengeParams (UAF Protocol §3.4.6.5 steps 1–3 and §3.5.7.5 steps 1–3).
///
/// serverData's authenticity and expiry are the caller's (it seals them, it opens them and
/// passes the challenge it finds inside as `expectedChallenge`).
public struct UAFResponseContext: Sendable {
    /// The tenant's AppID: the URL of its TrustedFacets document.
    public var appID: String
    /// The facet IDs of the tenant's TrustedFacets document.
    public var trustedFacetIDs: [String]
    /// Versions offered in the request; the response must use one of them.
    public var acceptedVersions: [UAFVersion]
    /// The TLS channel binding of this connection, when the server terminates TLS itself and
    /// can tell (`tlsUnique` above all, which only that server knows). Behind a gateway that
    /// does not forward it, nil: the client's per-connection values cannot be compared.
    public var channelBinding: UAFChannelBinding?
    /// The certificate(s) the TLS server UAF clients reach presents (the gateway's), when
    /// configured: a `serverEndPoint` or `tlsServerCertificate` the client sends must be one of
    /// theirs. Empty: not compared.
    public var serverCertificates: [UAFServerCertificate]

    public init(
        appID: String, trustedFacetIDs: [String], acceptedVersions: [UAFVersion] = [.v1_1, .v1_2], channelBinding: UAFChannelBinding? = nil,
        serverCertificates: [UAFServerCertificate] = []
    ) {
        self.appID = appID
        self.trustedFacetIDs = trustedFacetIDs
        self.acceptedVersions = acceptedVersions
        self.channelBinding = channelBinding
        self.serverCertificates = serverCertificates
    }

    /// Checks the header, decodes and checks fcParams.
    ///
    /// - Returns: the decoded FinalChallengeParams.
    func check(_ response: UAFResponse, op: String, serverData: String?, expectedChallenge: String, section: String) throws(UAFError) -> UAFFinalChallengeParams {
        // Step 2: upv is a version we offered; op is the operation; appID (when given) is ours.
        guard acceptedVersions.contains(response.header.upv) else {
            throw UAFError(.unsupportedVersion, rule: "\(section) step 2", "upv \(response.header.upv) was not offered")
        }
        guard response.header.op == op else {
            throw UAFError(.operationMismatch, rule: "\(section) step 2", "header.op is not \(op)")
        }
        if let headerAppID = response.header.appID, !headerAppID.isEmpty, headerAppID != appID {
            throw UAFError(.appIDMismatch, rule: "\(section) step 2", "header.appID is not the tenant's AppID")
        }
        // serverData must be what the server issued (its seal is checked by the caller).
        if let serverData, response.header.serverData.map({ ConstantTime.equals($0, serverData) }) != true {
            throw UAFError(.challengeMismatch, rule: "\(section) step 2", "header.serverData is not the one issued")
        }
        // Header extensions: an unknown one marked fail_if_unknown refuses the message.
        if let ext = response.header.exts?.first(where: { $0.fail_if_unknown }) {
            _ = ext
            throw UAFError(.unknownCriticalExtension, rule: "\(section) step 2", "a header extension with fail_if_unknown is not known")
        }
        // Step 3: FinalChallengeParams.
        let fc = try UAFMessageDecoding.finalChallengeParams(response.fcParams)
        try check(fc, expectedChallenge: expectedChallenge, section: section)
        return fc
    }

    /// Checks decoded FinalChallengeParams (step 3): appID, challenge, facetID, channel binding.
    ///
    /// - Parameter expectedChallenge: the challenge the server issued (for a transaction
    ///   confirmation checked again from evidence, the dynamic-linking challenge of the details).
    /// - Throws: `uaf_app_id_mismatch`, `uaf_challenge_mismatch`, `uaf_facet_not_trusted`,
    ///   `uaf_channel_binding_mismatch`.
    public func check(_ fc: UAFFinalChallengeParams, expectedChallenge: String, section: String) throws(UAFError) {
        guard fc.appID == appID else {
            throw UAFError(.appIDMismatch, rule: "\(section) step 3.a", "FinalChallengeParams.appID is not the tenant's AppID")
        }
        guard ConstantTime.equals(fc.challenge, expectedChallenge) else {
            throw UAFError(.challengeMismatch, rule: "\(section) step 3.b", "FinalChallengeParams.challenge is not the challenge issued")
        }
        guard trustedFacetIDs.contains(fc.facetID) else {
            throw UAFError(.facetNotTrusted, rule: "\(section) step 3.c", "facetID is not in the tenant's TrustedFacets")
        }
        // Step 3.d, channel binding (§3.1.8): a value the client sent is compared with what the
        // server knows; a value the client did not send (absent or empty: its platform could
        // not tell) is not required, and one the server cannot know is not compared.
        let sent = fc.channelBinding
        func given(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        if !serverCertificates.isEmpty {
            if let endPoint = given(sent.serverEndPoint), !serverCertificates.contains(where: { $0.serverEndPoint == endPoint }) {
                throw UAFError(.channelBindingMismatch, rule: "\(section) step 3.d", "channelBinding.serverEndPoint is not the hash of the server's certificate")
            }
            if let certificate = given(sent.tlsServerCertificate), !serverCertificates.contains(where: { $0.tlsServerCertificate == certificate }) {
                throw UAFError(.channelBindingMismatch, rule: "\(section) step 3.d", "channelBinding.tlsServerCertificate is not the server's certificate")
            }
        }
        if let expected = channelBinding {
            let pairs: [(String?, String?)] = [
                (given(sent.serverEndPoint), expected.serverEndPoint),
                (given(sent.tlsServerCertificate), expected.tlsServerCertificate),
                (given(sent.tlsUnique), expected.tlsUnique),
            ]
            for (sent, seen) in pairs {
                if let sent, let seen, sent != seen {
                    throw UAFError(.channelBindingMismatch, rule: "\(section) step 3.d", "channelBinding does not match the TLS connection")
                }
            }
        }
    }
}

/// Decodes one assertion's bytes after checking its scheme.
func assertionBytes(_ message: UAFAssertionMessage, section: String) throws(UAFError) -> [UInt8] {
    guard message.assertionScheme == "UAFV1TLV" else {
        throw UAFError(.unsupportedAssertionScheme, rule: "\(section) step 4", "assertionScheme is not UAFV1TLV")
    }
    guard message.assertion.utf8.count <= 88 * 1024, let bytes = Base64URL.decode(message.assertion), !bytes.isEmpty else {
        throw UAFError(.malformedTLV, rule: "\(section) step 4", "assertion is not base64url")
    }
    if message.exts?.contains(where: { $0.fail_if_unknown }) == true {
        throw UAFError(.unknownCriticalExtension, rule: "\(section) step 4", "an assertion extension with fail_if_unknown is not known")
    }
    return bytes
}

/// Refuses any critical TLV extension: Signet knows none.
func refuseCriticalExtensions(_ extensions: [UAFExtension], section: String) throws(UAFError) {
    if extensions.contains(where: \.critical) {
        throw UAFError(.unknownCriticalExtension, rule: "\(section) step 4", "a critical TLV extension is not known")
    }
}

/// FinalChallengeHash = hash(fcParams as sent), with the hash of the signature algorithm.
func checkFinalChallengeHash(_ hash: [UInt8], fcParams: String, algorithm: UAFSignatureAlgorithm, section: String) throws(UAFError) {
    guard let expected = algorithm.hash(Array(fcParams.utf8)) else {
        throw UAFError(.unsupportedAlgorithm, rule: "\(section) step 4", "signature algorithm \(algorithm.rawValue) is not supported")
    }
    guard ConstantTime.equals(hash, expected) else {
        throw UAFError(.finalChallengeHashMismatch, rule: "\(section) step 4", "FinalChallengeHash is not the hash of fcParams")
    }
}
