import JSON

/// How a compiled ruleset lays out and recognises facts.
///
/// - The fact paths it uses are interned into slots, with every prefix of every path interned
///   too, so that preparing facts looks up each member once however many paths share it
///   (`signals.geo.lat` and `signals.geo.lon` share `signals` and `signals.geo`). Entries come
///   parents first; an entry's slot is its index, and the prepared facts of a request are one
///   ``PreparedFact`` per entry.
/// - Its string operands are interned into small integer ids. When facts are prepared, each
///   string fact is looked up once; from then on `eq`, `ne`, `in`, `notIn` and array `contains`
///   against strings compare ids, so that evaluation does no string comparison or hashing.
///
/// Strings are keyed by their UTF-8 bytes, which is equality of Unicode scalars: "é" written
/// precomposed and "e" followed by a combining accent are different strings here, as they are
/// in JSON, while Swift's `==` would call them equal.
struct FactTable: Sendable {
    /// The id of strings that are no operand.
    static let absentString: Int32 = -1

    /// One interned path.
    struct Entry: Sendable {
        /// The slot of the parent path, or `nil` for a root (`signals`, `context`…).
        let parent: Int?
        /// The last segment (the root's name for a root).
        let key: String
        /// Whether `eq`, `ne`, `in` or `notIn` compares this fact with strings.
        var needsStringID = false
        /// Whether `contains` looks for a string in this fact (when it is an array).
        var needsElementIDs = false
        /// Whether `inCidr` tests this fact.
        var needsAddress = false
        /// Whether `withinKm` tests this fact.
        var needsPosition = false
    }

    private(set) var entries: [Entry] = []
    /// The paths tested by some predicate, in the order they were first used.
    private(set) var paths: [FactPath] = []
    private var slots: [[String]: Int] = [:]
    private var strings: [UTF8Key: Int32] = [:]

    /// The slot of `path`, interning it and its prefixes when new.
    mutating func slot(for path: FactPath) -> Int {
        var parent: Int?
        for prefix in path.prefixes {
            if let existing = slots[prefix] {
                parent = existing
                continue
            }
            let slot = entries.count
            entries.append(Entry(parent: parent, key: prefix[prefix.count - 1]))
            slots[prefix] = slot
            parent = slot
        }
        let slot = parent!
        if !paths.contains(path) { paths.append(path) }
        return slot
    }

    /// Records what the test of `operand` needs prepared in `slot`.
    mutating func note(_ operand: Operand, slot: Int) {
        switch operand {
        case .blocks: entries[slot].needsAddress = true
        case .near: entries[slot].needsPosition = true
        case .contains(.string): entries[slot].needsElementIDs = true
        case .equals(.string): entries[slot].needsStringID = true
        case .list(let scalars):
            if scalars.contains(where: { if case .string = $0 { true } else { false } }) {
                entries[slot].needsStringID = true
            }
        case .equals, .contains, .orderedNumber, .orderedString, .flag: break
        }
    }

    /// The id of the string operand `text`, interning it when new.
    mutating func intern(_ text: String) -> Int32 {
        let key = UTF8Key(text)
        if let id = strings[key] { return id }
        let id = Int32(strings.count)
        strings[key] = id
        return id
    }

    /// The id of `text`, or ``absentString`` when no operand is that string.
    func id(of text: String) -> Int32 {
        strings.isEmpty ? Self.absentString : strings[UTF8Key(text)] ?? Self.absentString
    }

    /// Resolves every entry in `facts`, parents first.
    ///
    /// - Parameters:
    ///   - facts: `{"signals": {...}, "context": {...}, "user": {...}, "time": {...}}`; anything
    ///     else leaves every fact missing.
    /// - Returns: One prepared fact per entry.
    func prepare(_ facts: JSONValue) -> [PreparedFact] {
        guard case .object(let roots) = facts else {
            return [PreparedFact](repeating: .missing, count: entries.count)
        }
        // Built in place: a parent is read where it was written, without copying it out.
        return [PreparedFact](unsafeUninitializedCapacity: entries.count) { prepared, initialized in
            entries.withUnsafeBufferPointer { entries in
                for (slot, entry) in entries.enumerated() {
                    let json: JSONValue?
                    if let parent = entry.parent {
                        if case .object(let members) = prepared[parent].value {
                            json = members[entry.key]
                        } else {
                            json = nil
                        }
                    } else {
                        json = roots[entry.key]
                    }
                    (prepared.baseAddress! + slot).initialize(to: PreparedFact(json, entry: entry, table: self))
                    initialized = slot + 1
                }
            }
        }
    }
}

/// A string hashed and compared by its UTF-8 bytes.
private struct UTF8Key: Hashable, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (lhs: UTF8Key, rhs: UTF8Key) -> Bool {
        lhs.text.utf8.count == rhs.text.utf8.count && lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            // Not contiguous (a bridged string): hash the same bytes from a copy.
            Array(text.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
