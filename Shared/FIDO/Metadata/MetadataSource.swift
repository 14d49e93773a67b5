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
}
