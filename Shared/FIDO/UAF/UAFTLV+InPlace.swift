/// UAFV1TLV read in place: the structure validated and the fields located as ranges of the
/// input, with no ``UAFTLV`` tree (children arrays, one retained buffer per element) and no
/// ``UAFTLVFields`` lists. On the path of every UAF sign-in (``UAFAuthenticationAssertion``):
/// `signet-bench uaf-breakdown` measured the tree reading at about 1.4 µs (2.8 under load 10)
/// of a verification; the commit that added this reader gives the figure after.
///
/// The rules and their order are those of ``UAFTLV/parseOne(_:)`` then ``UAFTLVFields``, with
/// the same codes: the whole structure first (lengths inside their containers, nothing
/// trailing, nesting below ``UAFTLV/maximumDepth``, at most ``UAFTLV/maximumElements`` per
/// sequence, exactly one top-level element), then each container's children in order (an
/// extension where none may stand or that does not parse, a tag twice, a tag out of place),
/// then the required tags and their lengths. `UAFFuzz` checks that the assertion read this way
/// equals the one read through the tree, for every input.
struct UAFTLVInPlace {
    let bytes: [UInt8]

    /// The tag at `i`.
    func tag(at i: Int) -> UAFTag { UAFTag(rawValue: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8) }

    /// The value range of the element whose header starts at `i` (already validated).
    func valueRange(at i: Int) -> Range<Int> {
        let length = Int(bytes[i + 2]) | Int(bytes[i + 3]) << 8
        return (i + 4)..<(i + 4 + length)
    }

    /// Validates the whole input as exactly one element (``UAFTLV/parseOne(_:)``'s rules).
    func validateOne() throws(UAFError) {
        let count = try validate(from: 0, to: bytes.count, depth: 0)
        guard count == 1 else {
            throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "expected exactly one top-level TLV, found \(count)")
        }
    }

    /// Validates the sequence in `start..<end` and, recursively, every composite value in it.
    ///
    /// - Returns: how many elements the sequence holds.
    private func validate(from start: Int, to end: Int, depth: Int) throws(UAFError) -> Int {
        guard depth < UAFTLV.maximumDepth else {
            throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "TLV nesting deeper than \(UAFTLV.maximumDepth)")
        }
        var count = 0
        var i = start
        while i < end {
            guard end - i >= 4 else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "truncated TLV header at byte \(i)")
            }
            let tag = tag(at: i)
            let length = Int(bytes[i + 2]) | Int(bytes[i + 3]) << 8
            let valueStart = i + 4
            guard length <= end - valueStart else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "length of tag \(tag) at byte \(i) runs past its container")
            }
            let valueEnd = valueStart + length
            if tag.isComposite { _ = try validate(from: valueStart, to: valueEnd, depth: depth + 1) }
            count += 1
            guard count <= UAFTLV.maximumElements else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "more than \(UAFTLV.maximumElements) TLVs in one sequence")
            }
            i = valueEnd
        }
        return count
    }

    /// Where each allowed tag's element lies in a container: the header's offset, or nil.
    struct Fields {
        let container: UAFTag
        let allowed: [UAFTag]
        var offsets: InlineArray<8, Int?> = .init(repeating: nil)
        var extensions: [UAFExtension] = []

        /// The offset of `tag`'s element, or `uaf_missing_tag`.
        func required(_ tag: UAFTag, rule: String) throws(UAFError) -> Int {
            guard let k = allowed.firstIndex(of: tag), let offset = offsets[k] else {
                throw UAFError(.missingTag, rule: rule, "tag \(tag) is missing from tag \(container)")
            }
            return offset
        }
    }

    /// The children of the composite element at `offset`, read by tag (``UAFTLVFields``'s
    /// rules): each of `allowed` (at most 8) at most once, nothing else but extensions where
    /// `allowsExtensions`.
    func fields(of offset: Int, allowed: [UAFTag], allowsExtensions: Bool, rule: String) throws(UAFError) -> Fields {
        precondition(allowed.count <= 8, "at most 8 tags per container")
        let container = tag(at: offset)
        var fields = Fields(container: container, allowed: allowed)
        let value = valueRange(at: offset)
        var i = value.lowerBound
        while i < value.upperBound {
            let child = tag(at: i)
            let next = valueRange(at: i).upperBound
            if child == .extensionCritical || child == .extensionNonCritical {
                guard allowsExtensions else {
                    throw UAFError(.unknownTag, rule: rule, "no extension may appear in tag \(container)")
                }
                // Rare: the element is built as a tree only here (it validated above).
                fields.extensions.append(try UAFExtension(try UAFTLV.parseOne(Array(bytes[i..<next]))))
            } else if let k = allowed.firstIndex(of: child) {
                guard fields.offsets[k] == nil else {
                    throw UAFError(.duplicateTag, rule: rule, "tag \(child) appears twice in tag \(container)")
                }
                fields.offsets[k] = i
            } else {
                throw UAFError(.unknownTag, rule: rule, "tag \(child) has no place in tag \(container)")
            }
            i = next
        }
        return fields
    }

    /// The value of a required leaf whose length is in `lengths`, in place.
    func slice(_ fields: Fields, _ tag: UAFTag, lengths: ClosedRange<Int>, rule: String) throws(UAFError) -> ArraySlice<UInt8> {
        let range = valueRange(at: try fields.required(tag, rule: rule))
        guard lengths.contains(range.count) else {
            throw UAFError(.malformedTLV, rule: rule, "tag \(tag) has length \(range.count), expected \(lengths)")
        }
        return bytes[range]
    }
}
