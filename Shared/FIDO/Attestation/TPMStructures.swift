/// The TPM 2.0 structures that `tpm` attestation carries (TPM 2.0 Library Part 2), parsed
/// strictly: big-endian integers, sized buffers that fit, and nothing after the structure.
///
/// Only what WebAuthn L3 §8.3 checks is kept; every field is still read, so a structure whose
/// sizes do not add up is refused.
enum TPMStructures {
    /// TPM_GENERATED_VALUE: every TPMS_ATTEST the TPM produces starts with it.
    static let generatedValue: UInt32 = 0xFF54_4347
    /// TPM_ST_ATTEST_CERTIFY.
    static let attestCertify: UInt16 = 0x8017
    /// TPM_ALG_RSA, TPM_ALG_ECC, TPM_ALG_NULL.
    static let algRSA: UInt16 = 0x0001
    static let algECC: UInt16 = 0x0023
    static let algNull: UInt16 = 0x0010

    /// Why a structure was refused; `reason` is fixed text.
    struct ParseError: Error, Sendable {
        let reason: String
    }

    /// A big-endian cursor over TPM marshalled bytes.
    struct Reader {
        private let bytes: [UInt8]
        private var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { position == bytes.count }

        mutating func bytes(_ count: Int) throws(ParseError) -> [UInt8] {
            guard count >= 0, count <= bytes.count - position else { throw ParseError(reason: "truncated") }
            defer { position += count }
            return Array(bytes[position..<(position + count)])
        }

        mutating func uint16() throws(ParseError) -> UInt16 {
            let b = try bytes(2)
            return UInt16(b[0]) << 8 | UInt16(b[1])
        }

        mutating func uint32() throws(ParseError) -> UInt32 {
            let b = try bytes(4)
            return b.reduce(0) { $0 << 8 | UInt32($1) }
        }

        mutating func uint64() throws(ParseError) -> UInt64 {
            let b = try bytes(8)
            return b.reduce(0) { $0 << 8 | UInt64($1) }
        }

        /// A TPM2B: UINT16 size, then that many bytes.
        mutating func sized() throws(ParseError) -> [UInt8] {
            try bytes(Int(try uint16()))
        }

        func finish() throws(ParseError) {
            guard isAtEnd else { throw ParseError(reason: "trailing bytes") }
        }
    }

    // MARK: - TPMS_ATTEST

    /// TPMS_ATTEST (Part 2 §10.12.12) with a TPMS_CERTIFY_INFO body: what the AIK signs.
    struct CertifyInfo: Sendable {
        let magic: UInt32
        let type: UInt16
        /// `extraData`: here, the hash of attToBeSigned.
        let extraData: [UInt8]
        /// `attested.name`: nameAlg ‖ H(pubArea) for the certified key.
        let attestedName: [UInt8]

        /// Parses `certInfo`.
        init(_ bytes: [UInt8]) throws(ParseError) {
            var r = Reader(bytes)
            magic = try r.uint32()
            type = try r.uint16()
            _ = try r.sized()  // qualifiedSigner: TPM2B_NAME
            extraData = try r.sized()
            // clockInfo: TPMS_CLOCK_INFO { clock UINT64, resetCount UINT32, restartCount UINT32,
            // safe TPMI_YES_NO }, 17 bytes, and firmwareVersion UINT64. WebAuthn ignores both
            // (§8.3 step 4), so their values are not judged (the W3C vectors fill them randomly).
            _ = try r.bytes(17)
            _ = try r.uint64()
            // attested: TPMS_CERTIFY_INFO { name TPM2B_NAME, qualifiedName TPM2B_NAME }. The
            // type is checked by the caller, but parsing only makes sense for CERTIFY.
            guard type == TPMStructures.attestCertify else { throw ParseError(reason: "type is not TPM_ST_ATTEST_CERTIFY") }
            attestedName = try r.sized()
            _ = try r.sized()  // qualifiedName
            try r.finish()
        }
    }

    // MARK: - TPMT_PUBLIC

    /// TPMT_PUBLIC (Part 2 §12.2.4): the certified key as the TPM describes it.
    struct PublicArea: Sendable {
        enum Key: Sendable, Hashable {
            /// The modulus and the exponent (0 in the structure means 2^16 + 1).
            case rsa(modulus: [UInt8], exponent: UInt32)
            /// TPM_ECC_CURVE and the point.
            case ecc(curve: UInt16, x: [UInt8], y: [UInt8])
        }

        /// TPMI_ALG_HASH used to compute the key's Name.
        let nameAlg: UInt16
        let key: Key

        /// Parses `pubArea`.
        init(_ bytes: [UInt8]) throws(ParseError) {
            var r = Reader(bytes)
            let type = try r.uint16()
            nameAlg = try r.uint16()
            _ = try r.uint32()  // objectAttributes
            _ = try r.sized()  // authPolicy: TPM2B_DIGEST
            switch type {
            case TPMStructures.algRSA:
                // TPMS_RSA_PARMS { symmetric, scheme, keyBits UINT16, exponent UINT32 }
                try Self.symmetric(&r)
                try Self.scheme(&r)
                _ = try r.uint16()  // keyBits
                let exponent = try r.uint32()
                // unique: TPM2B_PUBLIC_KEY_RSA
                let modulus = try r.sized()
                key = .rsa(modulus: modulus, exponent: exponent)
            case TPMStructures.algECC:
                // TPMS_ECC_PARMS { symmetric, scheme, curveID UINT16, kdf TPMT_KDF_SCHEME }
                try Self.symmetric(&r)
                try Self.scheme(&r)
                let curve = try r.uint16()
                try Self.scheme(&r)  // kdf: scheme, and a hashAlg unless TPM_ALG_NULL
                // unique: TPMS_ECC_POINT { x TPM2B, y TPM2B }
                let x = try r.sized()
                let y = try r.sized()
                key = .ecc(curve: curve, x: x, y: y)
            default:
                throw ParseError(reason: "type is neither TPM_ALG_RSA nor TPM_ALG_ECC")
            }
            try r.finish()
        }

        /// TPMT_SYM_DEF_OBJECT: algorithm, then keyBits and mode unless it is TPM_ALG_NULL.
        private static func symmetric(_ r: inout Reader) throws(ParseError) {
            if try r.uint16() != TPMStructures.algNull {
                _ = try r.uint16()
                _ = try r.uint16()
            }
        }

        /// TPMT_RSA_SCHEME / TPMT_ECC_SCHEME / TPMT_KDF_SCHEME: scheme, then its hashAlg unless
        /// it is TPM_ALG_NULL; ECDAA (0x001A) adds a count.
        private static func scheme(_ r: inout Reader) throws(ParseError) {
            let scheme = try r.uint16()
            guard scheme != TPMStructures.algNull else { return }
            _ = try r.uint16()
            if scheme == 0x001A { _ = try r.uint16() }
        }
    }
}
