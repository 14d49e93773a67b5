import JSON

/// The dotted path of a fact: a root (`signals`, `context`, `user`, `time`, `device`) and 1–8 segments
/// under it, e.g. `context.transactionAmount`, `signals.geo`, `user.registeredMethods`.
///
/// Segments match `^[A-Za-z_][A-Za-z0-9_]{0,63}$`. Any such path is accepted: which facts exist
/// is up to the service that supplies them; a fact it does not supply is simply missing.
///
/// Facts are supplied at evaluation as one `JSONValue` object
/// `{"signals": {...}, "context": {...}, "user": {...}, "time": {...}}`; ``resolve(in:)`` walks
/// it member by member.
public struct FactPath: Sendable, Hashable, CustomStringConvertible {
    /// The first segment of every fact path: where the fact comes from.
    public enum Root: String, Sendable, Hashable, CaseIterable {
        /// Signals about the device and network: `signals.ip`, `signals.geo`,
        /// `signals.deviceModel`, `signals.osVersion`, `signals.newDevice`.
        case signals
        /// The relying party's context of the request: `context.transactionAmount`.
        case context
        /// What Signet knows about the user: `user.registeredMethods`, `user.authenticators`,
        /// `user.failedAttempts`, `user.daysSinceLastSignIn`, `user.lockedMethods`.
        case user
        /// The time of the request in the tenant's zone: `time.hour`, `time.weekday`.
        case time
        /// The device the request comes from, when it is one of the user's bound devices
        /// (`signals.deviceId`): `device.securityEnabled`, `device.platform`.
        case device
    }

    /// The most segments under the root.
    public static let maximumSegments = 8
    /// The most characters in a segment.
    public static let maximumSegmentLength = 64

    /// Where the fact comes from.
    public let root: Root
    /// The segments under the root, at least one.
    public let segments: [String]

    /// The path of `text`, or `nil` when it is not a valid fact path.
    ///
    /// - Parameter text: A dotted path such as `signals.geo.lat`.
    public init?(_ text: String) {
        guard case .success(let path) = Self.parse(text) else { return nil }
        self = path
    }

    /// The dotted text, e.g. `context.transactionAmount`.
    public var description: String {
        ([root.rawValue] + segments).joined(separator: ".")
    }

    /// The fact's value in `facts`, or `nil` when it is missing (a member is absent, or a node on
    /// the way is not an object). A fact present as JSON `null` is `.null`, not `nil`.
    ///
    /// - Parameter facts: The facts object, `{"signals": {...}, "context": {...}, ...}`.
    public func resolve(in facts: JSONValue) -> JSONValue? {
        guard case .object(let roots) = facts, var node = roots[root.rawValue] else { return nil }
        for segment in segments {
            guard case .object(let members) = node, let next = members[segment] else { return nil }
            node = next
        }
        return node
    }

    /// Every path from the root down to this one, shortest first: `signals`, `signals.geo`,
    /// `signals.geo.lat`. Used to intern shared prefixes once.
    var prefixes: [[String]] {
        let all = [root.rawValue] + segments
        return (1...all.count).map { Array(all.prefix($0)) }
    }

    // MARK: - Parsing

    private init(root: Root, segments: [String]) {
        self.root = root
        self.segments = segments
    }

    /// The path of `text`, or what is wrong with it, for a message.
    static func parse(_ text: String) -> Result<FactPath, FactPathProblem> {
        // Bound the work before splitting: no valid path is longer than this.
        guard text.utf8.count <= (maximumSegments + 1) * (maximumSegmentLength + 1) else {
            return .failure(FactPathProblem("is longer than any valid fact path"))
        }
        // Keep empty parts (`a..b`, `a.`): they must be refused, not skipped.
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let root = Root(rawValue: parts[0]) else {
            return .failure(FactPathProblem("must start with signals, context, user, time or device"))
        }
        let segments = Array(parts.dropFirst())
        guard !segments.isEmpty else {
            return .failure(FactPathProblem("needs at least one segment after \(root.rawValue)"))
        }
        guard segments.count <= maximumSegments else {
            return .failure(FactPathProblem("has more than \(maximumSegments) segments under its root"))
        }
        for segment in segments where !isSegment(segment) {
            return .failure(
                FactPathProblem(
                    "has a segment \(RulesetError.quote(segment)) that is not 1–64 characters of [A-Za-z0-9_] starting with a letter or _"
                ))
        }
        return .success(FactPath(root: root, segments: segments))
    }

    /// Whether `segment` matches `^[A-Za-z_][A-Za-z0-9_]{0,63}$`.
    private static func isSegment(_ segment: String) -> Bool {
        let bytes = segment.utf8
        guard let first = bytes.first, bytes.count <= maximumSegmentLength else { return false }
        let isStart = { (byte: UInt8) in
            byte.isASCIILetter || byte == UInt8(ascii: "_")
        }
        return isStart(first) && bytes.allSatisfy { isStart($0) || $0.isASCIIDigit }
    }
}

/// What is wrong with a fact path's text, completing "the fact path …".
struct FactPathProblem: Error, Sendable {
    /// The end of the sentence, e.g. "must start with signals, context, user, time or device".
    let reason: String

    /// A problem; `reason` completes "the fact path …".
    init(_ reason: String) { self.reason = reason }
}
