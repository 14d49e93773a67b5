import Crypto
import FoundationEssentials
import Tokens
import JSON
import Platform

/// A FIDO Metadata Service BLOB (FIDO MDS 3.0 §3.1.6–3.1.7): a JWS whose payload lists every
/// authenticator model's metadata statement and status, verified on creation.
///
/// Verification, in the order of MDS 3.0 §3.2 ("Metadata BLOB object processing rules"):
/// 1. size, before anything is decoded (``Configuration/maximumSize``);
/// 2. the compact JWS and its header — `x5u` is refused (nothing is fetched while
///    verifying); without `x5c`, the configured root itself is the signer (§3.2 step 3);
/// 3. every `x5c` certificate is valid at the verification time, and the chain leads to a
///    configured root (``X509TrustStore``, no system roots);
/// 4. the signature, with the leaf's key under an algorithm fixed by that key's type and
///    ``Configuration/allowedAlgorithms`` — the header's `alg` must merely agree;
/// 5. the payload: `no`, `nextUpdate` and `entries` strictly, `legalHeader` if present.
///
/// CRLs of the signing chain are not checked (that would mean fetching); the serial number
/// check of step 5 (`no` must grow) is ``MetadataService``'s, which holds the previous BLOB.
///
/// Entries: one whose identity or status reports do not decode is dropped; one whose
/// statement does not decode is kept without it; an attestation root that is not a
/// well-formed certificate is left out of its statement. All are listed in ``issues``. A BLOB
/// is thus never refused for one bad entry, and a bad statement never hides a revocation.
public struct MetadataBLOB: Sendable {
    /// Part of an entry that did not decode, and what was left out because of it.
    public struct Issue: Sendable, Hashable, CustomStringConvertible {
        /// What was left out.
        public enum Effect: String, Sendable, Hashable {
            /// The whole entry (its identity or status reports are unreadable).
            case entryDropped = "entry dropped"
            /// The entry's metadata statement; identity and statuses still apply.
            case statementDropped = "statement dropped"
            /// One attestation root certificate of the statement.
            case rootCertificateDropped = "root certificate dropped"
            /// Nothing: another entry claims the same identity (see ``MetadataBLOB``).
            case duplicateIdentity = "duplicate identity"
        }

        /// The member in error, as a JSON Pointer into the payload (e.g. `/entries/3/statusReports/0/status`).
        public let path: String
        /// A fixed reason, never the member's value.
        public let reason: String
        /// What was left out.
        public let effect: Effect

        public init(path: String, reason: String, effect: Effect) {
            self.path = path
            self.reason = reason
            self.effect = effect
        }

        public var description: String { "\(path): \(reason) (\(effect.rawValue))" }
    }

    /// `legalHeader`.
    public let legalHeader: String?
    /// `no`: the BLOB's serial number; every new BLOB has a greater one.
    public let number: Int
    /// `nextUpdate`: the date by which a newer BLOB will be published (midnight UTC).
    public let nextUpdate: Date
    /// The entries that decoded, in BLOB order.
    public let entries: [MetadataEntry]
    /// What did not decode (entries, statements, attestation roots) and duplicate identities.
    public let issues: [Issue]
    /// The validated signing chain, signer first, root last.
    public let signingChain: [X509Certificate]

    private let indexByAAGUID: [AAGUID: Int]
    private let indexByKeyIdentifier: [String: Int]
    private let indexByAAID: [String: Int]

    // MARK: - Verifying

    /// Verifies and decodes a BLOB.
    ///
    /// - Parameters:
    ///   - jwt: The BLOB as downloaded (surrounding whitespace is ignored).
    ///   - configuration: Roots, limits, algorithms.
    ///   - time: When the signing chain must be valid (pinned in tests).
    /// - Throws: ``MetadataError`` with the code of the first check that failed.
    public init(jwt: String, configuration: Configuration, at time: Date = Date()) throws(MetadataError) {
        guard configuration.maximumSize > 0, !configuration.roots.isEmpty else {
            throw MetadataError(.configurationInvalid, "a metadata configuration needs a root and a positive size limit")
        }
        guard jwt.utf8.count <= configuration.maximumSize else {
            throw MetadataError(.tooLarge, "BLOB over \(configuration.maximumSize) bytes")
        }
        let jws: JWS
        do {
            jws = try JWS(
                compact: jwt.trimmingWhitespaceAndNewlines(),
                limits: JWS.Limits(maximumLength: configuration.maximumSize, maximumHeaderLength: configuration.maximumHeaderSize))
        } catch {
            switch error.code {
            case .tooLarge: throw MetadataError(.tooLarge, "BLOB or its header over the limit (\(error.code))")
            case .unsupportedAlgorithm: throw MetadataError(.algorithmNotAllowed, "BLOB header alg is none, HS* or unknown")
            default: throw MetadataError(.malformed, "BLOB is not a compact JWS (\(error.code))")
            }
        }
        let chain: [X509Certificate]
        if let validated = try Self.signingChain(of: jws.header, configuration: configuration, at: time) {
            try Self.verifySignature(of: jws, candidates: [validated[0]], configuration: configuration)
            chain = validated
        } else {
            // No chain in the header: a configured root is the signer (§3.2 step 3).
            let roots = configuration.roots.filter { $0.isValid(at: time) }
            guard !roots.isEmpty else {
                throw MetadataError(.certificateExpired, "BLOB has no x5c and no configured root is valid at the verification time")
            }
            chain = [try Self.verifySignature(of: jws, candidates: roots, configuration: configuration)]
        }

        let payload: JSONValue
        do {
            payload = try JSONParser.parse(jws.payload, maximumDepth: 32, allowingByteOrderMark: true)
        } catch {
            throw MetadataError(.payloadMalformed, "payload is not JSON: \(error.reason) at byte \(error.offset)")
        }
        do {
            try self.init(payload: MetadataJSON(payload), signingChain: chain)
        } catch {
            throw MetadataError(.payloadMalformed, "payload \(error.path): \(error.reason)")
        }
    }

    /// Whether `nextUpdate` has passed: a newer BLOB should be available. The BLOB stays
    /// usable (MDS 3.0 leaves that to the relying party); operators should be alerted.
    public func isStale(at time: Date = Date()) -> Bool { time >= nextUpdate }

    // MARK: - Lookups

    /// The entry for a FIDO2 model.
    public func entry(for aaguid: AAGUID) -> MetadataEntry? { indexByAAGUID[aaguid].map { entries[$0] } }

    /// The entry listing an attestation certificate key identifier (hex, any case).
    public func entry(forKeyIdentifier keyIdentifier: String) -> MetadataEntry? {
        indexByKeyIdentifier[keyIdentifier.lowercased()].map { entries[$0] }
    }

    /// The entry for a UAF model, by AAID in any case: AAIDs compare case-insensitively (UAF
    /// Protocol §3.1.4), the metadata service writes them in lower case (`"4e4e#4005"`) and the
    /// UAF parser returns them in upper case.
    public func entry(forAAID aaid: String) -> MetadataEntry? { indexByAAID[Self.foldAAID(aaid)].map { entries[$0] } }

    /// ASCII upper case (an AAID is hexadecimal digits and `#`): the index's key.
    static func foldAAID(_ aaid: String) -> String {
        String(decoding: aaid.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
    }

    /// The entry listing `certificate`'s key identifier (U2F attestation certificates).
    public func entry(forAttestationCertificate certificate: X509Certificate) -> MetadataEntry? {
        AttestationKeyIdentifier.of(certificate).flatMap { entry(forKeyIdentifier: $0) }
    }

    // MARK: - Steps

    /// §3.2 steps 2–4: the header's chain, validated to a configured root; nil when the
    /// header carries no chain.
    private static func signingChain(
        of header: JWSHeader, configuration: Configuration, at time: Date
    ) throws(MetadataError) -> [X509Certificate]? {
        if header.additionalParameters["x5u"] != nil {
            throw MetadataError(.x5uNotSupported, "BLOB header names its chain by URL (x5u); only x5c is accepted")
        }
        guard let x5c = header.additionalParameters["x5c"] else { return nil }
        guard let encoded = x5c.stringArrayValue, !encoded.isEmpty else {
            throw MetadataError(.malformed, "x5c is not a non-empty array of strings")
        }
        guard encoded.count <= 1 + X509TrustStore.maximumIntermediates else {
            throw MetadataError(.certificateInvalid, "x5c holds more than \(1 + X509TrustStore.maximumIntermediates) certificates")
        }
        var certificates: [X509Certificate] = []
        for (i, text) in encoded.enumerated() {
            // RFC 7515 §4.1.6: standard base64 (not base64url) of DER.
            guard let der = Data(base64Encoded: text) else { throw MetadataError(.malformed, "x5c[\(i)] is not base64") }
            do {
                certificates.append(try X509Certificate(derEncoded: Array(der)))
            } catch {
                throw MetadataError(.certificateInvalid, "x5c[\(i)] is not a well-formed certificate")
            }
        }
        // Validity first, so that an expired chain says so rather than "untrusted".
        for (i, certificate) in certificates.enumerated() {
            if time < certificate.notBefore {
                throw MetadataError(.certificateNotYetValid, "x5c[\(i)] is not yet valid at the verification time")
            }
            if time > certificate.notAfter {
                throw MetadataError(.certificateExpired, "x5c[\(i)] has expired at the verification time")
            }
        }
        do {
            let store = try X509TrustStore(anchors: configuration.roots)
            let path = try store.verify(
                x5c: certificates, at: time, options: X509VerificationOptions(allowPartialChain: configuration.allowPartialChain))
            return path.certificates
        } catch let error as CryptoError {
            // A configured root that has expired is reported as such; any other reason names
            // OpenSSL's verdict (no certificate content).
            for depth in 0...(certificates.count + 1) where error == .x509Verification(.certificateHasExpired, depth: depth) {
                throw MetadataError(.certificateExpired, "the metadata root has expired at the verification time")
            }
            throw MetadataError(.chainUntrusted, "x5c does not chain to a configured root: \(error)")
        } catch {
            throw MetadataError(.chainUntrusted, "x5c does not chain to a configured root")
        }
    }

    /// §3.2 step 4: the signature, with the algorithm fixed by the signer's key.
    ///
    /// - Parameter candidates: the validated x5c leaf, or the configured roots when the header
    ///   has no chain.
    /// - Returns: the certificate whose key verified the signature.
    @discardableResult
    private static func verifySignature(
        of jws: JWS, candidates: [X509Certificate], configuration: Configuration
    ) throws(MetadataError) -> X509Certificate {
        var sawUsableKey = false
        for certificate in candidates {
            guard let key = try? certificate.publicKey else { continue }
            let usable = JWSAlgorithm.algorithms(for: key.kind).intersection(configuration.allowedAlgorithms)
            guard usable.contains(jws.header.algorithm) else { continue }
            guard let verificationKey = try? JWSVerificationKey(publicKey: key, algorithm: jws.header.algorithm) else { continue }
            sawUsableKey = true
            do {
                try jws.verify(with: verificationKey)
                return certificate
            } catch {
                continue
            }
        }
        guard sawUsableKey else {
            throw MetadataError(.algorithmNotAllowed, "header alg \(jws.header.algorithm) is not allowed for the signing key")
        }
        throw MetadataError(.signatureInvalid, "BLOB signature does not verify with the signing certificate's key")
    }

    /// §3.1.6 `MetadataBLOBPayload`: `legalHeader`, `no`, `nextUpdate`, `entries`.
    // Internal rather than private: the MDS fuzz target (Tools/Fuzz/MDSFuzz) reaches the payload
    // through `@testable import`, past a signature it cannot forge.
    init(payload json: MetadataJSON, signingChain: [X509Certificate]) throws(MetadataJSON.Failure) {
        legalHeader = try json.member("legalHeader")?.string()
        number = try json.required("no").integer(in: 0...Int.max)
        nextUpdate = try json.required("nextUpdate").date()

        var entries: [MetadataEntry] = []
        var issues: [Issue] = []
        var byAAGUID: [AAGUID: Int] = [:]
        var byKeyIdentifier: [String: Int] = [:]
        var byAAID: [String: Int] = [:]
        for element in try json.required("entries").elements() {
            let decoded: (entry: MetadataEntry, statementFailure: MetadataJSON.Failure?, droppedRoots: [MetadataJSON.Failure])
            do {
                decoded = try MetadataEntry.decode(element)
            } catch {
                issues.append(Issue(path: error.path, reason: error.reason, effect: .entryDropped))
                continue
            }
            if let failure = decoded.statementFailure {
                issues.append(Issue(path: failure.path, reason: failure.reason, effect: .statementDropped))
            }
            for root in decoded.droppedRoots {
                issues.append(Issue(path: root.path, reason: root.reason, effect: .rootCertificateDropped))
            }
            let entry = decoded.entry
            let index = entries.count
            entries.append(entry)

            // Two entries for one identity: the revoked/compromised one wins, otherwise the
            // first — a duplicate must never hide a revocation.
            func claim<Key: Hashable>(_ key: Key, in index: inout [Key: Int], _ position: Int) {
                if let existing = index[key] {
                    issues.append(Issue(path: element.path, reason: "another entry has the same identity", effect: .duplicateIdentity))
                    if entries[existing].isRevokedOrCompromised || !entry.isRevokedOrCompromised { return }
                }
                index[key] = position
            }
            if let aaguid = entry.aaguid { claim(aaguid, in: &byAAGUID, index) }
            // Folded: two spellings of one AAID are one identity (a revoked one still wins).
            if let aaid = entry.aaid { claim(Self.foldAAID(aaid), in: &byAAID, index) }
            for id in entry.attestationCertificateKeyIdentifiers { claim(id, in: &byKeyIdentifier, index) }
        }
        self.entries = entries
        self.issues = issues
        self.signingChain = signingChain
        indexByAAGUID = byAAGUID
        indexByKeyIdentifier = byKeyIdentifier
        indexByAAID = byAAID
    }
}
