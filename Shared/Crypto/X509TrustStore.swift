import COpenSSL
import FoundationEssentials

/// A fixed set of trust anchors and OpenSSL's path validation (`X509_STORE`,
/// `X509_STORE_CTX`, `X509_verify_cert`) against them at a chosen time.
///
/// What is checked: every signature along the path; validity of every certificate, the anchor
/// included, at the verification time; that every issuer is a CA (basicConstraints, or a v1
/// self-signed root); pathLenConstraint; keyCertSign where keyUsage is present; unknown critical
/// extensions (refused); the path ends at one of this store's anchors and nowhere else — no
/// system roots are loaded.
///
/// With ``X509VerificationOptions/crls``, revocation too: every certificate of the path, the
/// anchor included, must be covered by a current CRL of its issuer among them, and be absent
/// from it (`X509_V_FLAG_CRL_CHECK_ALL`; the FIDO metadata BLOB's signing chain, MDS 3.0 §3.2).
///
/// What is not checked:
/// - Revocation, without ``X509VerificationOptions/crls`` (the default): FIDO attestation CAs
///   rarely publish reachable CRLs and fetching them would block the request path. MDS3 status
///   reports (`REVOKED`, `ATTESTATION_KEY_COMPROMISE`) are the FIDO mechanism for this and are
///   applied by the metadata code.
/// - Purpose / extended key usage, unless ``X509VerificationOptions/requiredLeafExtendedKeyUsage``
///   is set: FIDO attestation certificates often carry no EKU.
/// - RFC 5280 strictness beyond OpenSSL's defaults (`X509_V_FLAG_X509_STRICT` is off): real
///   attestation certificates from shipping authenticators break several of its rules.
public final class X509TrustStore: @unchecked Sendable {
    // @unchecked Sendable: the X509_STORE is filled in init and never changed afterwards;
    // X509_STORE guards its object list with its own lock, and every verification uses its
    // own X509_STORE_CTX and parameters.
    private let store: OpaquePointer

    /// The anchors, deduplicated, in the order given.
    public let anchors: [X509Certificate]

    /// More intermediates than this (from an attacker-supplied x5c) are refused outright.
    public static let maximumIntermediates = 16
    /// More CRLs than this are refused outright.
    public static let maximumCRLs = 32

    /// A store trusting exactly `anchors`.
    ///
    /// - Throws: ``CryptoError`` when `anchors` is empty.
    public init(anchors: [X509Certificate]) throws {
        var unique: [X509Certificate] = []
        var seen = Set<X509Certificate>()
        for anchor in anchors where seen.insert(anchor).inserted { unique.append(anchor) }
        guard !unique.isEmpty else { throw CryptoError("X.509: a trust store needs at least one anchor") }
        guard let store = X509_STORE_new() else { throw CryptoError("X.509: cannot create a trust store") }
        for anchor in unique where X509_STORE_add_cert(store, anchor.handle) != 1 {
            X509_STORE_free(store)
            ERR_clear_error()
            throw CryptoError("X.509: cannot add a trust anchor")
        }
        self.store = store
        self.anchors = unique
    }

    deinit { X509_STORE_free(store) }

    /// Builds and validates a path from `leaf` through some of `intermediates` to an anchor.
    ///
    /// - Parameters:
    ///   - leaf: the certificate to validate (attestation certificate, BLOB signer).
    ///   - intermediates: untrusted certificates that may be used to build the path, in any
    ///     order; extra ones are ignored. A copy of an anchor among them does no harm.
    ///   - time: the verification time. Pass the vector's pinned time in tests.
    ///   - options: see ``X509VerificationOptions``.
    /// - Returns: the validated path, leaf first, anchor last.
    /// - Throws: ``CryptoError``; for a rejected path it is
    ///   ``CryptoError/x509Verification(_:depth:)``, naming OpenSSL's reason
    ///   (`X509_verify_cert_error_string`) and the depth (0 = leaf), never certificate contents.
    public func verify(
        _ leaf: X509Certificate, intermediates: [X509Certificate] = [], at time: Date = Date(),
        options: X509VerificationOptions = X509VerificationOptions()
    ) throws -> X509Chain {
        guard intermediates.count <= Self.maximumIntermediates else {
            throw CryptoError("X.509: more than \(Self.maximumIntermediates) intermediate certificates")
        }
        guard (0...Self.maximumIntermediates).contains(options.maximumDepth) else {
            throw CryptoError("X.509: maximumDepth out of range")
        }
        // Years 0000–9999 are all an X.509 time can express.
        guard let seconds = time_t(exactly: time.timeIntervalSince1970.rounded(.down)), (-62_167_219_200...253_402_300_799).contains(seconds)
        else { throw CryptoError("X.509: verification time out of range") }
        defer { ERR_clear_error() }
        guard let ctx = X509_STORE_CTX_new(), let untrusted = OPENSSL_sk_new_null() else {
            throw CryptoError("X.509: out of memory")
        }
        // The CRLs, when revocation is checked: a stack that does not own its elements either
        // (X509_STORE_CTX_set0_crls leaves the stack to the caller).
        var crls: OpaquePointer?
        defer {
            X509_STORE_CTX_free(ctx)
            // The stacks do not own their elements; certificates and CRLs stay with their owners.
            OPENSSL_sk_free(untrusted)
            if let crls { OPENSSL_sk_free(crls) }
        }
        for certificate in intermediates where OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.handle)) <= 0 {
            throw CryptoError("X.509: out of memory")
        }
        guard X509_STORE_CTX_init(ctx, store, leaf.handle, untrusted) == 1, let param = X509_STORE_CTX_get0_param(ctx) else {
            throw CryptoError("X.509: cannot initialise verification")
        }
        // set_time also sets X509_V_FLAG_USE_CHECK_TIME, so the wall clock is never consulted.
        X509_VERIFY_PARAM_set_time(param, seconds)
        X509_VERIFY_PARAM_set_depth(param, Int32(options.maximumDepth))
        if options.allowPartialChain {
            // Any anchor, self-signed or not, ends the path (FIDO MDS allows an intermediate
            // as attestationRootCertificate).
            X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        }
        if let given = options.crls {
            guard given.count <= Self.maximumCRLs else { throw CryptoError("X.509: more than \(Self.maximumCRLs) CRLs") }
            guard let stack = OPENSSL_sk_new_null() else { throw CryptoError("X.509: out of memory") }
            crls = stack
            for crl in given where OPENSSL_sk_push(stack, UnsafeRawPointer(crl.handle)) <= 0 {
                throw CryptoError("X.509: out of memory")
            }
            X509_STORE_CTX_set0_crls(ctx, stack)
            X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL))
        }

        let rc = X509_verify_cert(ctx)
        guard rc == 1 else {
            let code = X509_STORE_CTX_get_error(ctx)
            guard rc == 0, code != X509_V_OK else { throw CryptoError("X.509: chain verification could not run") }
            throw CryptoError.x509Verification(X509VerifyReason(code: code), depth: Int(X509_STORE_CTX_get_error_depth(ctx)))
        }

        // Map OpenSSL's chain back to our objects: it holds the same X509 pointers (up-referenced,
        // never copied) that came from the leaf, the intermediates and the store. A self-signed
        // leaf that is also an anchor comes back as the store's copy: same DER, other object.
        guard let built = X509_STORE_CTX_get0_chain(ctx) else { throw CryptoError("X.509: no chain built") }
        let candidates = [leaf] + intermediates + anchors
        var certificates: [X509Certificate] = []
        for i in 0..<OPENSSL_sk_num(built) {
            let element = OPENSSL_sk_value(built, i).map(OpaquePointer.init)
            guard let match = candidates.first(where: { $0.handle == element }) else {
                throw CryptoError("X.509: chain holds an unknown certificate")
            }
            certificates.append(match)
        }
        guard let first = certificates.first, first == leaf else { throw CryptoError("X.509: chain does not start at the leaf") }
        certificates[0] = leaf

        if let required = options.requiredLeafExtendedKeyUsage, !(leaf.extendedKeyUsage ?? []).contains(required) {
            throw CryptoError.x509Verification(.invalidPurpose, depth: 0)
        }
        return X509Chain(certificates: certificates)
    }

    /// ``verify(_:intermediates:at:options:)`` for an x5c array: leaf first, then the
    /// certificates that may help build the path.
    ///
    /// - Throws: ``CryptoError`` when `x5c` is empty or the path is rejected.
    public func verify(
        x5c: [X509Certificate], at time: Date = Date(), options: X509VerificationOptions = X509VerificationOptions()
    ) throws -> X509Chain {
        guard let leaf = x5c.first else { throw CryptoError("X.509: empty certificate chain") }
        return try verify(leaf, intermediates: Array(x5c.dropFirst()), at: time, options: options)
    }
}

/// Choices for ``X509TrustStore/verify(_:intermediates:at:options:)``. The defaults suit
/// WebAuthn attestation: full path to a self-signed anchor, no purpose check.
public struct X509VerificationOptions: Sendable, Hashable {
    /// Accept a path that ends at an anchor that is not self-signed (`X509_V_FLAG_PARTIAL_CHAIN`).
    /// FIDO MDS allows an intermediate CA as `attestationRootCertificates`; turn this on only
    /// for anchors that came from there.
    public var allowPartialChain: Bool
    /// When set, the leaf must list this purpose (dotted OID) in extendedKeyUsage — e.g.
    /// ``X509OID/tcgKpAIKCertificate`` for TPM attestation. Off by default.
    public var requiredLeafExtendedKeyUsage: String?
    /// The most intermediate CA certificates a path may hold (`X509_VERIFY_PARAM_set_depth`).
    public var maximumDepth: Int
    /// When set, revocation is checked against these CRLs (and no others): every certificate
    /// of the path needs a current CRL of its issuer here, else the path is refused
    /// (``X509VerifyReason/unableToGetCRL``, ``X509VerifyReason/crlHasExpired``…), and a
    /// certificate listed in it is refused (``X509VerifyReason/certificateRevoked``). nil (the
    /// default): revocation is not checked.
    public var crls: [X509CRL]?

    public init(
        allowPartialChain: Bool = false, requiredLeafExtendedKeyUsage: String? = nil, maximumDepth: Int = 8, crls: [X509CRL]? = nil
    ) {
        self.allowPartialChain = allowPartialChain
        self.requiredLeafExtendedKeyUsage = requiredLeafExtendedKeyUsage
        self.maximumDepth = maximumDepth
        self.crls = crls
    }
}

/// A validated certification path.
public struct X509Chain: Sendable {
    /// Leaf first, trust anchor last (a single certificate when the leaf is itself an anchor).
    public let certificates: [X509Certificate]

    public var leaf: X509Certificate { certificates[0] }
    public var anchor: X509Certificate { certificates[certificates.count - 1] }
}

/// Why OpenSSL rejected a path: an `X509_V_ERR_*` code.
public struct X509VerifyReason: Sendable, Hashable, CustomStringConvertible {
    /// The `X509_V_ERR_*` value.
    public let code: Int32

    // Not public: X509_verify_cert_error_string formats unknown codes into a static buffer,
    // so only codes OpenSSL produced, or the named ones below, may be described.
    init(code: Int32) { self.code = code }

    /// OpenSSL's text for the code (`X509_verify_cert_error_string`), e.g. "certificate has expired".
    public var description: String { String(cString: X509_verify_cert_error_string(Int(code))) }

    public static let unableToGetIssuerCertificate = X509VerifyReason(code: X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT)
    public static let unableToGetLocalIssuerCertificate = X509VerifyReason(code: X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY)
    public static let certificateSignatureFailure = X509VerifyReason(code: X509_V_ERR_CERT_SIGNATURE_FAILURE)
    public static let certificateNotYetValid = X509VerifyReason(code: X509_V_ERR_CERT_NOT_YET_VALID)
    public static let certificateHasExpired = X509VerifyReason(code: X509_V_ERR_CERT_HAS_EXPIRED)
    public static let depthZeroSelfSignedCertificate = X509VerifyReason(code: X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT)
    public static let selfSignedCertificateInChain = X509VerifyReason(code: X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN)
    public static let certificateChainTooLong = X509VerifyReason(code: X509_V_ERR_CERT_CHAIN_TOO_LONG)
    public static let invalidCA = X509VerifyReason(code: X509_V_ERR_INVALID_CA)
    public static let pathLengthExceeded = X509VerifyReason(code: X509_V_ERR_PATH_LENGTH_EXCEEDED)
    public static let invalidPurpose = X509VerifyReason(code: X509_V_ERR_INVALID_PURPOSE)
    public static let keyUsageNoCertSign = X509VerifyReason(code: X509_V_ERR_KEYUSAGE_NO_CERTSIGN)
    public static let unhandledCriticalExtension = X509VerifyReason(code: X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION)
    public static let certificateRevoked = X509VerifyReason(code: X509_V_ERR_CERT_REVOKED)
    public static let unableToGetCRL = X509VerifyReason(code: X509_V_ERR_UNABLE_TO_GET_CRL)
    public static let crlHasExpired = X509VerifyReason(code: X509_V_ERR_CRL_HAS_EXPIRED)
    public static let crlNotYetValid = X509VerifyReason(code: X509_V_ERR_CRL_NOT_YET_VALID)
    public static let crlSignatureFailure = X509VerifyReason(code: X509_V_ERR_CRL_SIGNATURE_FAILURE)
}

extension CryptoError {
    /// The error ``X509TrustStore`` throws for a rejected path, e.g.
    /// "X.509: chain rejected at depth 0: certificate has expired".
    public static func x509Verification(_ reason: X509VerifyReason, depth: Int) -> CryptoError {
        CryptoError("X.509: chain rejected at depth \(depth): \(reason)")
    }
}
