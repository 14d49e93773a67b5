/// Where ``MetadataService`` gets BLOBs from. Chosen by configuration: a file (here) or a URL
/// (a downloader in the service, which this module does not implement — nothing in FIDO
/// does network I/O, and nothing is fetched at test time).
public protocol MetadataSource: Sendable {
    /// The BLOB's text.
    ///
    /// - Parameter maximumSize: Refuse (``MetadataError/Code/tooLarge``) rather than read
    ///   more than this many bytes.
    /// - Throws: ``MetadataError`` — ``MetadataError/Code/sourceUnavailable`` when the source
    ///   cannot be read, ``MetadataError/Code/tooLarge``, ``MetadataError/Code/malformed`` when
    ///   the bytes are not UTF-8.
    func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String

    /// The CRL (DER) at `url`, a distribution point named by the BLOB's signing chain (MDS 3.0
    /// §3.2: the chain's revocation is checked), or nil when this source fetches no CRLs (a
    /// file: revocation is then not checked, and ``MetadataUpdate/revocation`` says so).
    ///
    /// - Throws: ``MetadataError`` ``MetadataError/Code/revocationUnknown`` when the CRL cannot
    ///   be fetched, or is larger than `maximumSize`.
    func fetchCRL(url: String, maximumSize: Int) async throws(MetadataError) -> [UInt8]?
}

extension MetadataSource {
    /// Fetches no CRLs.
    public func fetchCRL(url: String, maximumSize: Int) async throws(MetadataError) -> [UInt8]? { nil }
}
