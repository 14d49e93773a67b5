import JSON

// The JOSE documents' parsing: JSONParser's errors as JOSEError `malformed`.
extension JSONParser {
    /// Parses one JSON text.
    ///
    /// - Parameter what: names the document in error details ("JWS header").
    /// - Throws: `JOSEError` `malformed`.
    static func parse(
        _ bytes: [UInt8], what: String, maximumDepth: Int = defaultMaximumDepth
    ) throws(JOSEError) -> JSONValue {
        do {
            return try parse(bytes, maximumDepth: maximumDepth, allowingByteOrderMark: false)
        } catch {
            throw JOSEError(.malformed, "\(what): invalid JSON (\(error))")
        }
    }

    /// Parses a JSON text that must be an object.
    static func parseObject(
        _ bytes: [UInt8], what: String, maximumDepth: Int = defaultMaximumDepth
    ) throws(JOSEError) -> [String: JSONValue] {
        guard case .object(let members) = try parse(bytes, what: what, maximumDepth: maximumDepth) else {
            throw JOSEError(.malformed, "\(what): not a JSON object")
        }
        return members
    }
}
