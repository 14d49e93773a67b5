import Crypto
import Dispatch
import FoundationEssentials
import Platform

/// The authenticator metadata in force: the last verified MDS3 BLOB, its lookups, and the
/// trust anchors it gives attestation verification.
///
/// Reads (``entry(for:)``, ``anchors(for:format:)``, ``isRevokedOrCompromised(_:)``…) are
/// synchronous and cheap — a `PlainLock` and a dictionary lookup — so they can run inside a
/// registration ceremony and inside an ``AttestationTrustEvaluator``. Loading verifies a
/// multi-megabyte JWS, so the async loaders do the reading and verifying on a dedicated
/// queue; only the swap of the new BLOB happens under the lock.
public final class MetadataService: Sendable {
    /// How BLOBs are verified.
    public let configuration: MetadataBLOB.Configuration

    /// Read by every registration ceremony (a lock and a copy of a reference), written by a
    /// refresh: a lock, not an actor, so that the lookups stay synchronous for the attestation
    /// trust evaluator and cost no hop.
    private let current = PlainLock(Current())

    /// The BLOB in force, and the lowest `no` a BLOB may have (``raiseFloor(to:)``: the highest
    /// the deployment accepted before).
    private struct Current {
        var blob: MetadataBLOB?
        var floor: Int?
    }

    /// Verification of a BLOB runs here (hundreds of milliseconds of CPU for the production
    /// BLOB), not on the cooperative pool.
    private static let verificationQueue = DispatchQueue(label: "signet.fido.metadata.verify")

    /// A service with no BLOB loaded yet: every lookup finds nothing until ``load(blob:)``.
    public init(configuration: MetadataBLOB.Configuration) {
        self.configuration = configuration
    }

    // MARK: - Loading

    /// Installs an already verified BLOB.
    ///
    /// - Returns: What changed: the models newly revoked or compromised.
    /// - Throws: ``MetadataError/Code/notNewer`` when `blob.number` is not greater than the
    ///   loaded BLOB's (MDS 3.0 §3.2 step 5: a replayed or stale BLOB must not roll statuses back).
    @discardableResult
    public func load(blob: MetadataBLOB) throws(MetadataError) -> MetadataUpdate {
        let result: Result<MetadataUpdate, MetadataError> = current.withLock { state in
            let loaded = state.blob
            if let loaded, blob.number <= loaded.number {
                return .failure(MetadataError(.notNewer, "BLOB no \(blob.number) is not greater than the loaded \(loaded.number)"))
            }
            if let floor = state.floor, blob.number < floor {
                return .failure(MetadataError(.notNewer, "BLOB no \(blob.number) is older than no \(floor), accepted before"))
            }
            // The diff is a walk over the entries with dictionary lookups: cheap enough to do
            // under the lock, and doing it here makes check-diff-swap atomic.
            let update = MetadataUpdate.between(loaded, and: blob)
            state.blob = blob
            return .success(update)
        }
        return try result.get()
    }

    /// Verifies `jwt` (at `time`) and installs it. CPU-bound: call from a context that may
    /// block, or use ``load(from:at:)``.
    @discardableResult
    public func load(jwt: String, at time: Date = Date()) throws(MetadataError) -> MetadataUpdate {
        try load(blob: MetadataBLOB(jwt: jwt, configuration: configuration, at: time))
    }

    /// Reads, verifies and installs the BLOB in a file; the work runs off the cooperative pool.
    @discardableResult
    public func load(fromFile path: String, at time: Date = Date()) async throws(MetadataError) -> MetadataUpdate {
        try await load(from: MetadataFileSource(path: path), at: time)
    }

    /// Fetches, verifies and installs a BLOB from `source`; verification runs off the
    /// cooperative pool.
    ///
    /// Once the BLOB verifies, its signing chain's revocation is checked (MDS 3.0 §3.2, RFC
    /// 5280 §6.3): the CRLs its certificates name are fetched through `source` (only from a
    /// chain already validated to a configured root: no address from an unverified BLOB is
    /// ever fetched), and the chain is validated again with them. A certificate revoked, or
    /// whose CRL cannot be fetched or is not current, refuses the BLOB (the one in force
    /// stays). ``MetadataUpdate/revocation`` says whether the check ran, and why not.
    @discardableResult
    public func load(from source: any MetadataSource, at time: Date = Date()) async throws(MetadataError) -> MetadataUpdate {
        try await loadKeepingText(from: source, at: time).update
    }

    /// ``load(from:at:)``, giving the BLOB's text as well, for the caller to keep: the
    /// registration service stores the BLOB it accepted, so that a replica whose source is
    /// down when it starts can install it again (``load(kept:at:)``).
    public func loadKeepingText(from source: any MetadataSource, at time: Date = Date()) async throws(MetadataError) -> (update: MetadataUpdate, text: String) {
        let text = try await source.fetchBLOB(maximumSize: configuration.maximumSize)
        let blob = try await verified(text, at: time)
        let revocation = try await Self.checkRevocation(of: blob, source: source, configuration: configuration, at: time)
        var update = try load(blob: blob)
        update.revocation = revocation
        return (update, text)
    }

    /// Installs a BLOB this deployment accepted before and kept (its text, as
    /// ``loadKeepingText(from:at:)`` gave it). Everything is verified again at `time` — size,
    /// signature, chain to the configured roots, validity, and the number against the one in
    /// force and the floor — except the signing chain's revocation, which was checked when the
    /// BLOB was accepted and needs the source, which may be what is unavailable:
    /// ``MetadataUpdate/revocation`` is ``MetadataUpdate/RevocationCheck/kept``.
    @discardableResult
    public func load(kept text: String, at time: Date = Date()) async throws(MetadataError) -> MetadataUpdate {
        var update = try load(blob: try await verified(text, at: time))
        update.revocation = .kept
        return update
    }

    /// `text` verified and decoded as a BLOB, off the cooperative pool.
    private func verified(_ text: String, at time: Date) async throws(MetadataError) -> MetadataBLOB {
        let configuration = self.configuration
        return try await Self.offPool { () throws(MetadataError) in
            // Blocking: JWS verification and decoding of a multi-megabyte payload.
            try MetadataBLOB(jwt: text, configuration: configuration, at: time)
        }
    }

    /// The revocation check of `blob`'s signing chain, with the CRLs it names fetched through
    /// `source`; what was checked, or why nothing was.
    ///
    /// - Throws: ``MetadataBLOB/checkRevocation(crls:configuration:at:)``'s, and
    ///   ``MetadataError/Code/revocationUnknown`` for a CRL that cannot be had.
    private static func checkRevocation(
        of blob: MetadataBLOB, source: any MetadataSource, configuration: MetadataBLOB.Configuration, at time: Date
    ) async throws(MetadataError) -> MetadataUpdate.RevocationCheck {
        guard let locations = try blob.revocationLocations() else { return .noDistributionPoint }
        guard !locations.isEmpty else { return .signedByRoot }
        var crls: [X509CRL] = []
        for uris in locations {
            guard let crl = try await crl(at: uris, from: source) else { return .sourceFetchesNone }
            if !crls.contains(crl) { crls.append(crl) }
        }
        let given = crls
        try await offPool { () throws(MetadataError) in try blob.checkRevocation(crls: given, configuration: configuration, at: time) }
        return .checked
    }

    /// The first CRL of `uris` that `source` fetches and that parses; nil when the source
    /// fetches none.
    ///
    /// - Throws: ``MetadataError/Code/revocationUnknown`` when none of them can be had.
    private static func crl(at uris: [String], from source: any MetadataSource) async throws(MetadataError) -> X509CRL? {
        var last = MetadataError(.revocationUnknown, "the signing chain names no CRL location")
        for uri in uris {
            do {
                guard let der = try await source.fetchCRL(url: uri, maximumSize: X509CRL.maximumDERSize) else { return nil }
                do {
                    return try X509CRL(derEncoded: der)
                } catch {
                    last = MetadataError(.revocationUnknown, "a CRL named by the signing chain is not a well-formed CRL")
                }
            } catch {
                last = error
            }
        }
        throw last
    }

    /// Runs `work` on the verification queue, off the cooperative pool.
    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws(MetadataError) -> T) async throws(MetadataError) -> T {
        let result: Result<T, MetadataError> = await withCheckedContinuation { continuation in
            verificationQueue.async { continuation.resume(returning: Result { () throws(MetadataError) in try work() }) }
        }
        return try result.get()
    }

    /// Raises the lowest `no` a BLOB may have to `number`, the highest this deployment accepted
    /// before (kept by the caller across restarts and replicas; MDS 3.0 §3.2: an older BLOB is
    /// ignored). The floor never goes down. A BLOB in force below it is withdrawn: lookups find
    /// nothing until one at or above it loads (an older BLOB would give back statuses a newer
    /// one revoked).
    ///
    /// - Returns: whether the BLOB in force was withdrawn.
    @discardableResult
    public func raiseFloor(to number: Int) -> Bool {
        current.withLock { state in
            state.floor = max(state.floor ?? number, number)
            guard let blob = state.blob, blob.number < number else { return false }
            state.blob = nil
            return true
        }
    }

    // MARK: - State

    /// The BLOB in force, if any.
    public var blob: MetadataBLOB? { current.withLock { $0.blob } }

    /// `no` of the BLOB in force.
    public var currentNumber: Int? { blob?.number }

    // MARK: - Lookups

    /// The entry for a FIDO2 model.
    public func entry(for aaguid: AAGUID) -> MetadataEntry? { blob?.entry(for: aaguid) }

    /// The entry listing an attestation certificate key identifier (hex).
    public func entry(forKeyIdentifier keyIdentifier: String) -> MetadataEntry? { blob?.entry(forKeyIdentifier: keyIdentifier) }

    /// The entry listing `certificate`'s key identifier (U2F attestation certificates).
    public func entry(forAttestationCertificate certificate: X509Certificate) -> MetadataEntry? {
        blob?.entry(forAttestationCertificate: certificate)
    }

    /// The metadata statement of a FIDO2 model.
    public func statement(for aaguid: AAGUID) -> MetadataStatement? { entry(for: aaguid)?.metadataStatement }

    /// The latest status report of a FIDO2 model.
    public func status(for aaguid: AAGUID) -> StatusReport? { entry(for: aaguid)?.latestStatusReport }

    /// The latest status report of the model with this key identifier.
    public func status(forKeyIdentifier keyIdentifier: String) -> StatusReport? {
        entry(forKeyIdentifier: keyIdentifier)?.latestStatusReport
    }

    /// Whether a FIDO2 model is revoked or compromised (any of its reports is REVOKED,
    /// USER_VERIFICATION_BYPASS, ATTESTATION_KEY_COMPROMISE, USER_KEY_REMOTE_COMPROMISE or
    /// USER_KEY_PHYSICAL_COMPROMISE). False for models the metadata does not know.
    public func isRevokedOrCompromised(_ aaguid: AAGUID) -> Bool { entry(for: aaguid)?.isRevokedOrCompromised ?? false }

    /// The same, by attestation certificate key identifier.
    public func isRevokedOrCompromised(keyIdentifier: String) -> Bool {
        entry(forKeyIdentifier: keyIdentifier)?.isRevokedOrCompromised ?? false
    }

    // MARK: - Trust anchors for attestation

    /// The attestation roots of a FIDO2 model's statement; empty when unknown.
    public func attestationRoots(for aaguid: AAGUID) -> [X509Certificate] {
        statement(for: aaguid)?.attestationRootCertificates ?? []
    }

    /// Trust anchors for an attestation of `format` by the model `aaguid`, for an
    /// ``AttestationTrustEvaluator``: the statement's `attestationRootCertificates`.
    ///
    /// Empty for `none` (nothing to anchor), for a missing or all-zero AAGUID (fido-u2f, some
    /// `apple` and `android-safetynet` attestations: use
    /// ``anchors(forAttestationCertificate:)`` or the tenant's own anchors) and for models the
    /// metadata does not know. Revocation is not applied here — ``FIDOPolicy`` refuses revoked
    /// models with its own code, so the refusal says why.
    ///
    /// - Important: MDS roots may be intermediate CAs: validate with
    ///   ``X509VerificationOptions/allowPartialChain`` set for these anchors.
    public func anchors(for aaguid: AAGUID?, format: String) -> [X509Certificate] {
        guard format != "none", let aaguid, !aaguid.isZero else { return [] }
        return attestationRoots(for: aaguid)
    }

    /// Trust anchors for an attestation certificate found through its key identifier (U2F).
    public func anchors(forAttestationCertificate certificate: X509Certificate) -> [X509Certificate] {
        entry(forAttestationCertificate: certificate)?.metadataStatement?.attestationRootCertificates ?? []
    }

    /// ``anchors(for:format:)`` as a closure, for evaluators that take one.
    public var anchorProvider: @Sendable (AAGUID?, String) -> [X509Certificate] {
        { [self] aaguid, format in anchors(for: aaguid, format: format) }
    }
}

/// The metadata as a trust anchor source: a FIDO2 model's roots by AAGUID, and a U2F
/// attestation certificate's by its key identifier (which ``TrustAnchorEvaluator`` asks for
/// only when the AAGUID is not attested).
extension MetadataService: AttestationTrustAnchorSource {}
